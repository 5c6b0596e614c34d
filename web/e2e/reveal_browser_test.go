package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// onScreen is whether the element sel matches starts inside the viewport,
// with at least its first 24 px visible: what a learner sees without
// scrolling.
func onScreen(sel string) string {
	return fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return false;
		const r = el.getBoundingClientRect(); return r.top >= 0 && r.top + 24 <= innerHeight && r.height > 0; })()`, sel)
}

// seen is whether the element sel matches is where a learner sees it
// without scrolling: its first 24 px inside the viewport, and the point a
// little inside its top left not covered by anything else (a card's
// sticky top, the timeline's strip at the bottom of a narrow screen).
func seen(sel string) string {
	return fmt.Sprintf(`(() => { const el = %s; if (!el) return false;
		const r = el.getBoundingClientRect(); if (!(r.top >= 0 && r.top + 24 <= innerHeight && r.height > 0)) return false;
		const at = document.elementFromPoint(Math.min(r.left + 12, innerWidth - 1), r.top + Math.min(r.height / 2, 10));
		return !!at && (el.contains(at) || at.contains(el)); })()`, sel)
}

// q is the element a CSS selector matches, as an expression for seen.
func q(sel string) string { return fmt.Sprintf("document.querySelector(%q)", sel) }

// seenAny is whether any element sel matches is seen.
func seenAny(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].some((e) => (%s))`, sel, strings.Replace(seen("e"), "const el = e;", "const el = e;", 1))
}

// rowsThatFit counts the timeline's rows wholly inside its scrolling box.
const rowsThatFit = `(() => { const log = document.getElementById("log").getBoundingClientRect();
	return [...document.querySelectorAll("#rows > li")].filter(li => { const r = li.getBoundingClientRect();
		return r.height > 0 && r.top >= log.top - 1 && r.bottom <= Math.min(log.bottom, innerHeight) + 1; }).length; })()`

// newRowAfter selects the newest timeline row of db recorded after seq.
func newRowAfter(db string, seq int) string {
	return fmt.Sprintf(`([...document.querySelectorAll("#rows > li.row[data-seq]")].find(li => +li.dataset.seq > %d && li.dataset.db === %q) || null)`, seq, db)
}

// press presses the button sel from the keyboard (pressKey): a click goes
// to where the button was when its box was read, and under load a row
// drawn on the timeline in between can move the card, so the click lands
// beside it and is lost (seen once in CI, on Scale by hand).
func press(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	onFresh(t, ctx, "press "+sel, pressKey(chromedp.CSS(sel)))
}

// pointerAway moves the pointer off the page's content (its top-left
// corner, the header), as a learner moves it on after a click: a deleted
// card is not taken off the page while the pointer is on the cards.
func pointerAway(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 1, 1)); err != nil {
		t.Fatal(err)
	}
}

// fill sets the field sel to value.
func fill(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	onFresh(t, ctx, "fill "+sel, chromedp.SetValue(chromedp.CSS(sel), value))
}

// onFresh runs actions, again (three tries in all) when the node they found
// was gone by the time they acted on it: the page drew that part of a card
// anew in between (a state arrived), and the learner's click or typing
// would have found the new one. Chromium names that in two ways.
func onFresh(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	var err error
	for range 3 {
		err = chromedp.Do(ctx, actions...)
		if err == nil || !strings.Contains(err.Error(), "Could not find node") && !strings.Contains(err.Error(), "No node with given id found") {
			break
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// flashText is what the page's flash says now.
func flashText(t *testing.T, ctx context.Context) string {
	t.Helper()
	return evalString(t, ctx, `document.querySelector("#flash")?.textContent || ""`)
}

// labSeq is the seq of the newest step on the page's timeline.
func labSeq(t *testing.T, ctx context.Context) int {
	t.Helper()
	n, _ := strconv.Atoi(evalString(t, ctx, `String(`+newestSeq+`)`))
	return n
}

// seesWhatItCaused checks, after an action on db, what the learner sees
// without scrolling, nothing covering it: the card's head and its
// generation line, the newest timeline row that came after the action as
// the rows render (every object shown), and the answer beside the form.
func seesWhatItCaused(t *testing.T, ctx context.Context, what, db string, before int, flash string) {
	t.Helper()
	// The action has had its answer: the learner reads it beside the form.
	poll(t, ctx, what+": the action's answer", fmt.Sprintf(`(document.querySelector("#flash")?.textContent || "") !== %q`, flash))
	row := newRowAfter(db, before)
	poll(t, ctx, what+": a new row of "+db, row+" !== null")
	checks := map[string]string{
		"the card's head":            seen(q("#db-" + db + " .db-head")),
		"the card's generation":      seen(q("#db-" + db + " .gen")),
		"the new timeline row":       seen(row),
		"the answer beside the form": seenAny(".said"),
	}
	for name, expr := range checks {
		// The answer's place settles as the card's state comes in.
		if name == "the answer beside the form" {
			poll(t, ctx, what+": "+name+" on screen", expr)
			continue
		}
		if got := evalString(t, ctx, "String("+expr+")"); got != "true" {
			failedShot(t, ctx)
			t.Errorf("%s: %s is not on screen (scrollY %s)", what, name, evalString(t, ctx, "String(scrollY)"))
		}
	}
}

// TestBrowserActionsShowWhatTheyCaused: at 1280×800, after each lab action
// (create, scale, delete a child, delete), the card it changed and the
// timeline's new rows are on screen with no scrolling after the click.
func TestBrowserActionsShowWhatTheyCaused(t *testing.T) {
	t.Parallel()
	ctx, _ := labAt1280(t, "")
	// Two Databases, so the one acted on is not the only card.
	createInTab(t, ctx, "above")
	poll(t, ctx, "above's card", `document.getElementById("db-above") !== null`)

	before, flash := labSeq(t, ctx), flashText(t, ctx)
	createInTab(t, ctx, "seen")
	poll(t, ctx, "seen Ready", `document.querySelector("#db-seen .db-head .pill.ok")?.textContent === "Ready True"`)
	seesWhatItCaused(t, ctx, "after Create", "seen", before, flash)
	viewShot(t, ctx, "reveal-01-created-1280x800")
	// Compact rows: at least eight fit the timeline's box.
	poll(t, ctx, "eight rows on the timeline", `document.querySelectorAll("#rows > li").length >= 8`)
	if n := evalInt(t, ctx, "String("+rowsThatFit+")"); n < 8 {
		t.Errorf("%d timeline rows fit at 1280×800, want at least 8", n)
	}

	// Apply, at the bottom of the card: the click scrolls to the button
	// as a learner does; nothing scrolls after it.
	before, flash = labSeq(t, ctx), flashText(t, ctx)
	fill(t, ctx, `#db-seen form[data-part="edit"] input[name="replicas"]`, "2")
	press(t, ctx, `#db-seen form[data-part="edit"] button`)
	poll(t, ctx, "generation 2 observed", `document.querySelector("#db-seen .gen")?.textContent.replace(/\s+/g, " ").includes("status.observedGeneration 2")`)
	seesWhatItCaused(t, ctx, "after Apply", "seen", before, flash)
	viewShot(t, ctx, "reveal-02-scaled-1280x800")

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("db-seen-drift").open = true`)); err != nil {
		t.Fatal(err)
	}
	press(t, ctx, `#db-seen-drift form[action$="/children/statefulset/delete"] button`)
	// Any newer row of seen's saying so: a folded row of seen's resyncs
	// takes a newer seq too, and may come first.
	poll(t, ctx, "the StatefulSet's delete on the timeline", fmt.Sprintf(`[...document.querySelectorAll("#rows > li.row[data-seq]")].some(li => +li.dataset.seq > %d && li.dataset.db === "seen" && li.textContent.includes("StatefulSet seen deleted"))`, before))
	seesWhatItCaused(t, ctx, "after Delete StatefulSet", "seen", before, flash)
	viewShot(t, ctx, "reveal-03-drift-1280x800")

	// Read further down the timeline: what comes meanwhile is counted at
	// its top, and one press brings it up.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("log").scrollTop = 10000`)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the timeline scrolled", `document.getElementById("log").scrollTop > 8`)
	before = labSeq(t, ctx)
	fill(t, ctx, `#db-seen form[data-part="edit"] input[name="replicas"]`, "1")
	press(t, ctx, `#db-seen form[data-part="edit"] button`)
	poll(t, ctx, "a row after the scale back", newRowAfter("seen", before)+" !== null")
	poll(t, ctx, `"N new above" at the top of the timeline`, `(b => !b.hidden && /^\d+ new above/.test(b.textContent))(document.getElementById("log-new"))`)
	if got := evalString(t, ctx, "String("+seen(q("#log-new"))+")"); got != "true" {
		t.Errorf(`"N new above" is not on screen`)
	}
	viewShot(t, ctx, "reveal-03b-new-above-1280x800")
	press(t, ctx, "#log-new")
	poll(t, ctx, "the timeline back at its newest", `document.getElementById("log").scrollTop <= 8 && document.getElementById("log-new").hidden`)

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	press(t, ctx, `#db-seen form[data-part="delete"] button`)
	poll(t, ctx, "the delete's answer", fmt.Sprintf(`(document.querySelector("#flash")?.textContent || "") !== %q`, flash))
	// The card says Terminating, then Deleted, and goes 4 s later: one
	// word for its state at a time.
	poll(t, ctx, "the card deleting or deleted", `!!document.querySelector("#db-seen .pill.warn, #db-seen.gone")`)
	if got := evalString(t, ctx, "String("+seen(q("#db-seen .db-head"))+")"); got != "true" {
		t.Errorf("after Delete: the card's head is not on screen")
	}
	if got := evalString(t, ctx, `[...document.querySelectorAll("#db-seen .db-head .pill.state")].map(p => p.textContent).join("|")`); got != "Terminating" && got != "Deleted" {
		t.Errorf("after Delete the card's head says %q, want Terminating or Deleted alone", got)
	}
	poll(t, ctx, "a row after the delete", newRowAfter("seen", before)+" !== null")
	if got := evalString(t, ctx, fmt.Sprintf(`String(%s.getBoundingClientRect().top >= 0 && %s.getBoundingClientRect().top + 24 <= innerHeight)`, newRowAfter("seen", before), newRowAfter("seen", before))); got != "true" {
		t.Errorf("after Delete: the new row is not on screen")
	}
	viewShot(t, ctx, "reveal-04-deleted-1280x800")
	axeCheck(t, ctx, "lab after the actions, 1280×800")
}

// TestBrowserScenarioStepsSitInItsPanel: a scenario's next steps are
// buttons in its panel; after each, the panel, the card and the new rows
// are on screen.
func TestBrowserScenarioStepsSitInItsPanel(t *testing.T) {
	t.Parallel()
	ctx, _ := labAt1280(t, "?scenario=stuck-finalizer")
	if got := evalString(t, ctx, `String(document.querySelector(".scenario-next").hidden)`); got != "true" {
		t.Errorf("the next steps before the setup: hidden = %s, want true", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.scenario form:not([data-reveal]) button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the next steps shown", `document.querySelector(".scenario-next").hidden === false`)
	poll(t, ctx, "stuck's card", `document.getElementById("db-stuck") !== null`)
	for name, sel := range map[string]string{"the panel's next steps": ".scenario-next", "stuck's card": "#db-stuck .db-head"} {
		if got := evalString(t, ctx, "String("+onScreen(sel)+")"); got != "true" {
			t.Errorf("after the setup: %s not on screen", name)
		}
	}
	viewShot(t, ctx, "reveal-05-scenario-set-up-1280x800")

	before := labSeq(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.scenario-next form[action="/lab/databases/stuck/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "stuck Terminating", `!!document.querySelector("#db-stuck .terminating") && document.querySelector("#db-stuck .db-head").textContent.includes("Terminating")`)
	// Paused: the delete's update event waits on the timeline for a reconcile.
	poll(t, ctx, "the delete's event on the timeline", `[...document.querySelectorAll("#rows > li")].some(li => li.dataset.db === "stuck" && li.textContent.includes("Database stuck update (generation 2)"))`)
	for name, sel := range map[string]string{"Resume in the panel": `.scenario-next form[action="/lab/controller/start"] button`, "stuck's card, Terminating": "#db-stuck .db-head", "the newest row": "#rows > li"} {
		if got := evalString(t, ctx, "String("+onScreen(sel)+")"); got != "true" {
			t.Errorf("after Delete stuck: %s not on screen", name)
		}
	}
	viewShot(t, ctx, "reveal-06-scenario-deleted-1280x800")

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.scenario-next form[action="/lab/controller/start"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the finalizer's phases on the timeline", fmt.Sprintf(`[...document.querySelectorAll("#rows > li.row[data-seq]")].some(li => +li.dataset.seq > %d && li.dataset.db === "stuck" && li.textContent.includes("removed"))`, before))
	if got := evalString(t, ctx, "String("+onScreen("#rows > li")+")"); got != "true" {
		t.Errorf("after Resume: the newest row is not on screen")
	}
	viewShot(t, ctx, "reveal-07-scenario-resumed-1280x800")
	axeCheck(t, ctx, "lab with a scenario's next steps")
}

// TestBrowserActionsShowWhatTheyCausedOnAPhone: at 390×844 the timeline
// is a strip at the bottom of the screen with its newest rows, so after
// each action the card's head and generation (its sticky top), the new row
// and the answer beside the form are all on screen, nothing covering them;
// the strip opens to the whole timeline, where eight rows fit.
func TestBrowserActionsShowWhatTheyCausedOnAPhone(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	e.openLab(t, ctx, "")
	createInTab(t, ctx, "above")
	poll(t, ctx, "above's card", `document.getElementById("db-above") !== null`)
	before, flash := labSeq(t, ctx), flashText(t, ctx)
	createInTab(t, ctx, "small")
	poll(t, ctx, "small Ready", `document.querySelector("#db-small .db-head .pill.ok")?.textContent === "Ready True"`)
	seesWhatItCaused(t, ctx, "after Create", "small", before, flash)
	viewShot(t, ctx, "reveal-08-phone-created-390x844")
	axeCheck(t, ctx, "lab at 390 px with the timeline's strip")

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	fill(t, ctx, `#db-small form[data-part="edit"] input[name="replicas"]`, "2")
	press(t, ctx, `#db-small form[data-part="edit"] button`)
	poll(t, ctx, "generation 2 observed", `document.querySelector("#db-small .gen")?.textContent.replace(/\s+/g, " ").includes("status.observedGeneration 2")`)
	seesWhatItCaused(t, ctx, "after Apply", "small", before, flash)
	viewShot(t, ctx, "reveal-09-phone-scaled-390x844")

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("db-small-drift").open = true`)); err != nil {
		t.Fatal(err)
	}
	press(t, ctx, `#db-small-drift form[action$="/children/statefulset/delete"] button`)
	poll(t, ctx, "the StatefulSet's delete on the timeline", fmt.Sprintf(`[...document.querySelectorAll("#rows > li.row[data-seq]")].some(li => +li.dataset.seq > %d && li.dataset.db === "small" && li.textContent.includes("StatefulSet small deleted"))`, before))
	seesWhatItCaused(t, ctx, "after Delete StatefulSet", "small", before, flash)
	viewShot(t, ctx, "reveal-09b-phone-drift-390x844")

	// Opened, the strip is the whole timeline: eight rows and more fit.
	press(t, ctx, "#timeline-open")
	poll(t, ctx, "the timeline open", `document.querySelector(".lab-grid > .timeline").dataset.drawer === "open"`)
	if n := evalInt(t, ctx, "String("+rowsThatFit+")"); n < 8 {
		t.Errorf("%d timeline rows fit the opened timeline at 390×844, want at least 8", n)
	}
	if wide := evalInt(t, ctx, `String(document.documentElement.scrollWidth)`); wide > 390 {
		what, _ := chromedp.Run(ctx, chromedp.Evaluate[string](overflowing))
		t.Errorf("the lab at 390 px is %d px wide: %s", wide, what)
	}
	viewShot(t, ctx, "reveal-10-phone-timeline-open-390x844")
	axeCheck(t, ctx, "lab at 390 px with the timeline open")
}

// TestBrowserReloadDrawsThePastOffTheLoop: a reload draws the recent past on
// the timeline; the loop diagram does not play it back as if it were
// happening, and says it is the past.
func TestBrowserReloadDrawsThePastOffTheLoop(t *testing.T) {
	t.Parallel()
	ctx, _ := labAt1280(t, "")
	createInTab(t, ctx, "past")
	poll(t, ctx, "past Ready", `document.querySelector("#db-past .db-head .pill.ok")?.textContent === "Ready True"`)
	// Gone, so nothing of it is live while the page reloads.
	press(t, ctx, `#db-past form[data-part="delete"] button`)
	pointerAway(t, ctx)
	poll(t, ctx, "past gone", `document.getElementById("db-past") === null`)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the past drawn", `document.querySelectorAll("#rows > li.row[data-db='past']").length > 2`)
	poll(t, ctx, "the caption saying it is the past", `/^(catching|caught) up: \d+ steps of the past/.test(document.getElementById("loop-caption").textContent)`)
	if lit := evalString(t, ctx, `String(document.querySelectorAll("#loop [data-stage].lit").length)`); lit != "0" {
		t.Errorf("the loop lights %s stages while it draws the past", lit)
	}
	viewShot(t, ctx, "reveal-10b-reloaded-1280x800")
}
