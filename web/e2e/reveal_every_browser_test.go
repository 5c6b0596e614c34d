package e2e

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// setAndPress chooses value in the select named name of db's form part,
// and presses that form's button, as a learner does.
func setAndPress(t *testing.T, ctx context.Context, db, part, name, value string) {
	t.Helper()
	form := fmt.Sprintf(`#db-%s form[data-part=%q]`, db, part)
	// As a learner picks an option: that option selected, a change event.
	// (chromedp's SetValue of "" leaves a select with no option selected.)
	pick := fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.selectedIndex = [...s.options].findIndex(o => o.value === %q);
		s.dispatchEvent(new Event("change", {bubbles: true})); return s.selectedIndex >= 0; })()`, form+" select[name="+name+"]", value)
	if got := evalString(t, ctx, "String("+pick+")"); got != "true" {
		t.Fatalf("%s has no option %q", form, value)
	}
	press(t, ctx, form+" button")
}

// TestBrowserEveryCardActionShowsWhatItCaused carries on from
// TestBrowserActionsShowWhatTheyCaused with the card's other actions and
// the namespace's pause: after each, at 1280×800 and with no scrolling
// after the click, the card's head and generation line and the new row are
// on screen.
func TestBrowserEveryCardActionShowsWhatItCaused(t *testing.T) {
	t.Parallel()
	ctx, _ := labAt1280(t, "")
	// The first with a pitfall from the create form; the form then starts
	// afresh, as after the page's own post: no name, no pitfall.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("details.create").open = true`),
		chromedp.SetValue(chromedp.CSS(`#create-form select[name="pitfall"]`), "drop-events")); err != nil {
		t.Fatal(err)
	}
	createInTab(t, ctx, "first")
	if got := evalString(t, ctx, `(f => f.elements.name.value + "|" + f.elements.pitfall.value)(document.getElementById("create-form"))`); got != "|" {
		t.Errorf("the create form after a create holds name|pitfall %q, want both empty", got)
	}
	createInTab(t, ctx, "acted")
	poll(t, ctx, "first's pitfall pill", `document.querySelector("#db-first .db-head")?.textContent.includes("pitfall: drop-events")`)
	if got := evalString(t, ctx, `document.querySelector("#db-acted .db-head")?.textContent || ""`); strings.Contains(got, "pitfall") {
		t.Errorf("acted, created without touching the menu, got a pitfall: %q", got)
	}
	poll(t, ctx, "acted Ready", `document.querySelector("#db-acted .db-head .pill.ok")?.textContent === "Ready True"`)

	before, flash := labSeq(t, ctx), flashText(t, ctx)
	setAndPress(t, ctx, "acted", "pitfall", "pitfall", "no-finalizer")
	pollPart(t, ctx, "the pitfall on the card", `!!document.querySelector("#db-acted .pitfall-now")`)
	seesWhatItCaused(t, ctx, "after the pitfall switch", "acted", before, flash)
	viewShot(t, ctx, "reveal-11-pitfall-1280x800")

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	setAndPress(t, ctx, "acted", "pitfall", "pitfall", "")
	pollPart(t, ctx, "the pitfall off the card", `!document.querySelector("#db-acted .pitfall-now")`)
	seesWhatItCaused(t, ctx, "after the pitfall is off", "acted", before, flash)

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	setAndPress(t, ctx, "acted", "pods", "pods", "slow-start")
	seesWhatItCaused(t, ctx, "after the Pods switch", "acted", before, flash)
	viewShot(t, ctx, "reveal-12-pods-1280x800")
	flash = flashText(t, ctx)
	setAndPress(t, ctx, "acted", "pods", "pods", "")
	poll(t, ctx, "the Pods switch back's answer", fmt.Sprintf(`(document.querySelector("#flash")?.textContent || "") !== %q`, flash))

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("db-acted-drift").open = true`)); err != nil {
		t.Fatal(err)
	}
	fill(t, ctx, `#db-acted-drift form[action$="/statefulset/scale"] input[name="replicas"]`, "3")
	press(t, ctx, `#db-acted-drift form[action$="/statefulset/scale"] button`)
	seesWhatItCaused(t, ctx, "after Scale by hand", "acted", before, flash)
	viewShot(t, ctx, "reveal-13-scaled-by-hand-1280x800")

	before, flash = labSeq(t, ctx), flashText(t, ctx)
	press(t, ctx, `#db-acted-drift form[action$="/children/service/delete"] button`)
	seesWhatItCaused(t, ctx, "after Delete Service", "acted", before, flash)

	// Pause: the line that says why sits beside the buttons; Resume: the
	// queued reconciles run and the newest row is on screen.
	flash = flashText(t, ctx)
	press(t, ctx, `button[data-controller="stop"]`)
	poll(t, ctx, "the pause's answer", fmt.Sprintf(`(document.querySelector("#flash")?.textContent || "") !== %q`, flash))
	poll(t, ctx, "Resume enabled", `document.querySelector('button[data-controller="start"]').disabled === false`)
	for name, sel := range map[string]string{"Resume": `button[data-controller="start"]`, "why": "#pause-why", "the answer": ".said"} {
		if got := evalString(t, ctx, "String("+seenAny(sel)+")"); got != "true" {
			t.Errorf("after Pause: %s is not on screen", name)
		}
	}
	before, flash = labSeq(t, ctx), flashText(t, ctx)
	fill(t, ctx, `#db-acted form[data-part="edit"] input[name="replicas"]`, "2")
	press(t, ctx, `#db-acted form[data-part="edit"] button`)
	seesWhatItCaused(t, ctx, "after Apply while paused", "acted", before, flash)
	before, flash = labSeq(t, ctx), flashText(t, ctx)
	press(t, ctx, `button[data-controller="start"]`)
	// The pitfall and Pods switches are annotations: the spec's first
	// change is this Apply's, generation 2.
	poll(t, ctx, "generation 2 observed", `document.querySelector("#db-acted .gen")?.textContent.replace(/\s+/g, " ").includes("status.observedGeneration 2")`)
	seesWhatItCaused(t, ctx, "after Resume", "acted", before, flash)
	viewShot(t, ctx, "reveal-14-resumed-1280x800")
	axeCheck(t, ctx, "lab after every card action, 1280×800")
}

// TestBrowserEveryScenarioStepShowsWhatItCaused: each scenario with next
// steps (the stuck finalizer's has its own test), set up and then each
// step pressed in the scenario's panel; after each, at 1280×800, the
// panel's steps, the card's head and a new row of it are on screen.
func TestBrowserEveryScenarioStepShowsWhatItCaused(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	for _, sc := range []struct {
		name, db string
		steps    []string // the panel's forms, by action, pressed in turn
		after    []string // what each step's new row of db says
	}{
		{name: "first-reconcile", db: "first"},
		{name: "already-exists", db: "taken"},
		{name: "finalizer", db: "doomed", steps: []string{"/lab/databases/doomed/delete"}, after: []string{"draining"}},
		{name: "status-thrash", db: "thrash", steps: []string{"/lab/databases/thrash/pitfall"}, after: []string{""}},
		{name: "non-idempotent-create", db: "twice", steps: []string{"/lab/databases/twice/pitfall"}, after: []string{""}},
		{name: "drop-events", db: "deaf", steps: []string{"/lab/databases/deaf/edit"}, after: []string{"ignored"}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			ctx := e.tab(t)
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
				t.Fatal(err)
			}
			e.openLab(t, ctx, "?scenario="+sc.name)
			press(t, ctx, `.scenario form:not([data-reveal]) button`)
			poll(t, ctx, sc.db+"'s card", fmt.Sprintf(`document.getElementById("db-%s") !== null`, sc.db))
			checks := map[string]string{"the card's head": "#db-" + sc.db + " .db-head", "the scenario's panel": ".scenario"}
			if len(sc.steps) > 0 {
				poll(t, ctx, "the next steps shown", `document.querySelector(".scenario-next").hidden === false`)
				checks["the panel's next steps"] = ".scenario-next"
			}
			// The page brings the new card into view once it is drawn.
			for name, sel := range checks {
				poll(t, ctx, "after the setup, "+name+" on screen", onScreen(sel))
			}
			viewShot(t, ctx, "reveal-scenario-"+sc.name+"-set-up-1280x800")
			for i, action := range sc.steps {
				before, flash := labSeq(t, ctx), flashText(t, ctx)
				press(t, ctx, fmt.Sprintf(`.scenario-next form[action=%q] button`, action))
				if want := sc.after[i]; want != "" {
					poll(t, ctx, "the step's row saying "+want, fmt.Sprintf(`[...document.querySelectorAll("#rows > li.row[data-seq]")].some(li => +li.dataset.seq > %d && li.dataset.db === %q && li.textContent.includes(%q))`, before, sc.db, want))
				}
				seesWhatItCaused(t, ctx, fmt.Sprintf("after step %d (%s)", i+1, action), sc.db, before, flash)
				if got := evalString(t, ctx, "String("+onScreen(".scenario")+")"); got != "true" {
					t.Errorf("after step %d: the scenario's panel is not on screen", i+1)
				}
				// Once done, the step would change nothing if pressed again:
				// it is disabled and says so.
				reason := map[string]string{
					"delete":  `/already being deleted|is not there/`,
					"pitfall": fmt.Sprintf(`/^Done: %s's pitfall is off\.$/`, sc.db),
					"edit":    fmt.Sprintf(`/^Changed already: %s asks for 2 replicas now\.$/`, sc.db),
				}[path.Base(action)]
				poll(t, ctx, "the panel's step disabled with its reason", fmt.Sprintf(`(f => f.querySelector("button").disabled &&
					%s.test(f.querySelector(".why")?.textContent || ""))(document.querySelector(%q))`, reason, fmt.Sprintf(".scenario-next form[action=%q]", action)))
				viewShot(t, ctx, fmt.Sprintf("reveal-scenario-%s-step%d-1280x800", sc.name, i+1))
			}
		})
	}
}

// pollPart is poll for a change in acted's pitfall part, saying on failure
// what the part holds and where the focus is.
func pollPart(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v; the part: %s", what, err, evalString(t, ctx, `(() => { const f = document.querySelector('#db-acted form[data-part="pitfall"]'); const a = document.activeElement;
			return JSON.stringify({active: a && (a.tagName + " in the part: " + f.contains(a)),
			options: [...f.querySelectorAll("option")].map(o => o.value + ":" + o.selected + "/" + o.defaultSelected), head: document.querySelector("#db-acted .db-head").textContent.replace(/\s+/g, " "), flash: document.querySelector("#flash").textContent}); })()`))
	}
}
