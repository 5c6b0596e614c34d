package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// What the lab shows, read as a learner reads it: these expressions read
// the page's own words and attributes (data-seq is travel.js's), never a
// field the lab writes only for tests.
const (
	// streamLive: the timeline's status says the stream is open ("live",
	// or "live, following" while following the presenter).
	streamLive = `document.getElementById("stream-status").textContent.startsWith("live")`
	// ownStreamLive: open, and the learner's own stream.
	ownStreamLive = `document.getElementById("stream-status").textContent === "live"`
	// frozen: the player's Freeze button is pressed.
	frozen = `(document.getElementById("play-pause").getAttribute("aria-pressed") === "true")`
	// waitingSteps is the player's counter, "N new steps waiting" (none
	// while it is hidden).
	waitingSteps = `((e) => e.hidden ? 0 : parseInt(e.textContent, 10) || 0)(document.getElementById("play-waiting"))`
	// newestSeq is the seq of the newest step drawn on the timeline: a
	// row carries the seq of its last step (data-seq, for travel.js).
	newestSeq = `Math.max(0, ...[...document.querySelectorAll("#rows li[data-seq]")].map((li) => +li.dataset.seq))`
	// timelineEntries counts what the timeline shows, one entry a step:
	// an event's line, a reconcile's head (its ID), each step of it, its
	// result, and a line of the controller's or about a gap. A folded
	// line's own head and result are not counted: folding shows no step.
	timelineEntries = `document.querySelectorAll("#rows li.ev, #rows div.row-head .rid, #rows ol.steps > li, #rows div.row-head .pill.result, #rows li.controller, #rows li.notice").length`
)

// openLab opens /lab (plus query) in ctx and waits for the stream.
func (e *testEnv) openLab(t *testing.T, ctx context.Context, query string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"+query), chromedp.WaitReady(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	// A lab that follows the presenter does not show the learner's own form.
	poll(t, ctx, "the create form, or following", `document.querySelector("#create-form").getClientRects().length > 0 || document.getElementById("lab").dataset.following === "presenter"`)
	poll(t, ctx, "the stream to open", streamLive)
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil || ns == "" {
		t.Fatalf("no namespace on the page: %v", err)
	}
	return ns
}

// labAt1280 opens /lab (plus query) in a new tab at 1280×800, the laptop
// screen the reveal tests judge "on screen" by, and returns the tab and
// its learner's namespace.
func labAt1280(t *testing.T, query string) (context.Context, string) {
	t.Helper()
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	return ctx, e.openLab(t, ctx, query)
}

// createInTab creates a Database through the page's form, as a learner does.
func createInTab(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("details.create").open = true`),
		chromedp.SetValue(chromedp.CSS(`#create-form input[name="name"]`), name),
		chromedp.SetValue(chromedp.CSS(`#create-form input[name="replicas"]`), "1"),
		chromedp.Click(chromedp.CSS(`#create-form button.primary`)),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the created message", fmt.Sprintf(`document.querySelector("#flash .flash-ok")?.textContent.includes("Created Database %s")`, name))
}

// kubectlScale changes spec.replicas behind the page's back, as
// `kubectl patch database NAME --type=merge -p '{"spec":{"replicas":N}}'` does.
func kubectlScale(t *testing.T, ns, name string, replicas int) {
	t.Helper()
	db := &v1alpha1.Database{}
	db.Namespace, db.Name = ns, name
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	if err := shared.client.Patch(t.Context(), db, patch); err != nil {
		t.Fatalf("patch %s/%s replicas %d: %v", ns, name, replicas, err)
	}
}

func evalInt(t *testing.T, ctx context.Context, expr string) int {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	n, _ := strconv.Atoi(s)
	return n
}

func TestBrowserEditFormFollowsTheLiveObject(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	ns := e.openLab(t, ctx, "")
	createInTab(t, ctx, "follow")
	poll(t, ctx, "follow Ready", `document.querySelector("#db-follow .db-head .pill.ok")?.textContent === "Ready True"`)
	const replicasInput = `document.querySelector('#db-follow form[action$="/edit"] input[name="replicas"]')`
	const versionInput = `document.querySelector('#db-follow form[action$="/edit"] input[name="version"]')`

	// The learner opened the drift panel; a swap must keep it open.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-follow details.drift summary`))); err != nil {
		t.Fatal(err)
	}
	kubectlScale(t, ns, "follow", 3)
	poll(t, ctx, "the edit form showing kubectl's 3", replicasInput+`.value === "3"`)
	poll(t, ctx, "generation 2 on the card", `document.querySelector("#db-follow .generation").textContent === "2"`)
	if open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("db-follow-drift").open`)); err != nil || !open {
		t.Errorf("the drift panel closed when the card was swapped (%v)", err)
	}

	// While the learner is typing into the form, the live value does not
	// overwrite what they typed; the card above it still follows.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](versionInput+`.focus(); `+versionInput+`.value = "17"`)); err != nil {
		t.Fatal(err)
	}
	kubectlScale(t, ns, "follow", 4)
	poll(t, ctx, "the card showing replicas 4", `document.querySelector("#db-follow .spec").textContent.includes("replicas 4")`)
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](versionInput+`.value + "/" + `+replicasInput+`.value`)); err != nil || v != "17/3" {
		t.Errorf("the form being edited = %q (%v); want the learner's 17 kept (and its replicas untouched, 3)", v, err)
	}
	// Once they leave it unchanged, the form follows again.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](versionInput+`.value = `+versionInput+`.defaultValue; `+versionInput+`.blur()`)); err != nil {
		t.Fatal(err)
	}
	kubectlScale(t, ns, "follow", 2)
	poll(t, ctx, "the edit form showing 2", replicasInput+`.value === "2"`)
	screenshot(t, ctx, "10-form-follows-kubectl")

	// The card is morphed, not drawn anew: a keyboard learner on its Delete
	// button is still there after the next state, and the state section
	// keeps its nodes (a screen reader's place in it) and the Events the
	// learner opened.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.spec = document.querySelector("#db-follow .db-state .spec");
		document.getElementById("db-follow-events").open = true;
		window.focused = document.querySelector('#db-follow form[data-part="delete"] button'); window.focused.focus()`)); err != nil {
		t.Fatal(err)
	}
	kubectlScale(t, ns, "follow", 3)
	poll(t, ctx, "the card showing replicas 3", `document.querySelector("#db-follow .spec").textContent.includes("replicas 3") && `+replicasInput+`.value === "3"`)
	if got := evalString(t, ctx, `String(document.activeElement === window.focused && window.focused.isConnected)`); got != "true" {
		t.Errorf("after a new state the focus is on %q, want still on the card's Delete button", evalString(t, ctx, `document.activeElement.outerHTML.slice(0, 80)`))
	}
	if got := evalString(t, ctx, `String(window.spec.isConnected) + "/" + document.getElementById("db-follow-events").open`); got != "true/true" {
		t.Errorf("after a new state the spec line kept / Events open = %s, want true/true: the state section was drawn anew", got)
	}
}

func TestBrowserTimelinePauseStepSlowMotion(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	ns := e.openLab(t, ctx, "")
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const l = document.getElementById("log");
		return l.getAttribute("role") === "log" && l.getAttribute("aria-live") === "polite" && l.contains(document.getElementById("rows")); })()`)); err != nil || !ok {
		t.Errorf("the timeline is not a polite role=log region (%v)", err)
	}

	// The player's button says what it does to the timeline; live, Step
	// has nothing to step, is disabled, and the player says why.
	const (
		pauseText = `document.getElementById("play-pause").textContent`
		stepState = `(() => { const b = document.getElementById("play-step"), why = document.getElementById(b.getAttribute("aria-describedby"));
			return (b.disabled ? "disabled: " : "enabled: ") + (why && why.checkVisibility() ? why.textContent : ""); })()`
	)
	poll(t, ctx, "Freeze timeline, Step disabled: live", pauseText+` === "Freeze timeline" && `+stepState+
		` === "disabled: Nothing to step: the timeline is live, each step shows as it comes. Freeze it to step through new ones."`)
	screenshot(t, ctx, "11a-timeline-live-step-disabled")

	// Paused, the steps wait and a counter says how many.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#play-pause"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "paused", `document.getElementById("play-pause").getAttribute("aria-pressed") === "true"`)
	poll(t, ctx, "Unfreeze timeline, Step disabled while nothing waits", pauseText+` === "Unfreeze timeline" && (`+waitingSteps+` !== 0 || `+
		stepState+` === "disabled: Nothing to step: no new step is waiting.")`)
	createInTab(t, ctx, "calm")
	poll(t, ctx, "steps waiting", waitingSteps+` >= 5 && /^\d+ new steps waiting$/.test(document.getElementById("play-waiting").textContent)`)
	if n := evalInt(t, ctx, `String(document.querySelectorAll('#rows li[data-db="calm"]').length)`); n != 0 {
		t.Errorf("paused, the timeline drew %d rows for calm; want none until resumed", n)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](stepState)); err != nil || got != "enabled: " {
		t.Errorf("frozen with steps waiting, Step = %q (%v); want enabled, no reason shown", got, err)
	}
	screenshot(t, ctx, "11-timeline-paused")

	// Step: one step at a time, from the keyboard and from the button.
	before := evalInt(t, ctx, `String(`+timelineEntries+`)`)
	// The keys work where the focus is: in the timeline.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("log").focus()`), chromedp.KeyEvent("n")); err != nil {
		t.Fatal(err)
	}
	if after := evalInt(t, ctx, `String(`+timelineEntries+`)`); after != before+1 {
		t.Errorf("N showed %d steps; want exactly 1", after-before)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#play-step"))); err != nil {
		t.Fatal(err)
	}
	if after := evalInt(t, ctx, `String(`+timelineEntries+`)`); after != before+2 {
		t.Errorf("the Step button showed %d steps in all; want 2", after-before)
	}
	// Stepped to the last waiting step (in one go, so none comes in
	// between), Step turns disabled and says why, and the focus it held
	// goes to Freeze/Unfreeze rather than to the page's start.
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const b = document.getElementById("play-step");
		b.focus(); for (let i = 0; i < 5000 && !b.disabled; i++) b.click();
		return document.activeElement.id + " / " + `+stepState+`; })()`)); err != nil ||
		got != "play-pause / disabled: Nothing to step: no new step is waiting." {
		t.Errorf("after stepping every waiting step: focus / Step = %q (%v); want play-pause / disabled, nothing waiting", got, err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("p")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "resumed, nothing waiting", `!`+frozen+` && `+waitingSteps+` === 0`)
	poll(t, ctx, "Freeze timeline again, Step disabled", pauseText+` === "Freeze timeline" && `+stepState+`.startsWith("disabled: Nothing to step: the timeline is live")`)
	poll(t, ctx, "calm Ready", `document.querySelector("#db-calm .db-head .pill.ok")?.textContent === "Ready True"`)

	// The first reconcile's header names its trigger.
	poll(t, ctx, "the trigger named", `[...document.querySelectorAll('#rows li[data-db="calm"] .trigger')].some(p => /^Database calm created · \d+ events? → 1 reconcile$/.test(p.textContent))`)

	// Slow motion: steps are held while playing, and shown in time.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("play-speed"); s.value = "0.25"; s.dispatchEvent(new Event("change")); })()`)); err != nil {
		t.Fatal(err)
	}
	kubectlScale(t, ns, "calm", 2)
	poll(t, ctx, "steps held while playing in slow motion", `!`+frozen+` && `+waitingSteps+` > 0`)
	poll(t, ctx, "slow motion reaching generation 2", `document.querySelector("#db-calm .observed")?.textContent === "2"`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("play-speed"); s.value = "1"; s.dispatchEvent(new Event("change")); })()`)); err != nil {
		t.Fatal(err)
	}

	// Resyncs (every 10 s here) that change nothing fold into one line, and
	// the countdown names the next one.
	poll(t, ctx, "no-op reconciles folded", `[...document.querySelectorAll('#rows li.noop[data-db="calm"] .pill')].some(p => /^in sync ×\d+$/.test(p.textContent))`)
	poll(t, ctx, "the resync countdown", `/^calm: next resync in \d+s$/.test(document.getElementById("resync").textContent)`)
	// No-op reconciles woken by the Pods' own events fold too; the resync's
	// come with the next resync.
	poll(t, ctx, "a resync on the timeline", `document.getElementById("rows").innerText.includes("resync")`)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#rows")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "Unchanged") || !strings.Contains(text, "in sync") {
		t.Errorf("the timeline says Unchanged, or never in sync:\n%s", text)
	}
	if !regexp.MustCompile(`resync`).MatchString(text) {
		t.Errorf("no row names the resync as its trigger:\n%s", text)
	}
	screenshot(t, ctx, "12-timeline-folded")

	// With no filter the countdown names what comes next, not the first
	// card's Database: here a-deaf, first in order, whose events are all
	// ignored, so nothing is due for it until its resync.
	deaf := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-deaf",
		Annotations: map[string]string{controller.PitfallAnnotation: controller.PitfallDropEvents}}}
	if err := e.client.Create(t.Context(), deaf); err != nil {
		t.Fatal(err)
	}
	// Read two of the countdown's one-second redraws after the card came,
	// while a-deaf has had no reconcile: its first waits on the resync
	// (every 10 s here), and once it has one, its own next run may well
	// come first.
	const deafRan = `!!document.querySelector('#rows li.row[data-db="a-deaf"] .rid')`
	poll(t, ctx, "a-deaf's card first, for two seconds", `(() => {
		if (document.querySelector("#databases article.db")?.dataset.name !== "a-deaf") return false;
		window.deafSeen ??= Date.now();
		return Date.now() - window.deafSeen > 2100 || `+deafRan+`; })()`)
	if got := evalString(t, ctx, `(() => { const r = document.getElementById("resync"); return r.hidden ? "(hidden)" : r.textContent; })()`); evalString(t, ctx, "String("+deafRan+")") == "true" {
		t.Logf("a-deaf's resync came within two seconds of its card: the countdown (%q) names the sooner of two", got)
	} else if !regexp.MustCompile(`^calm: next resync in \d+s$`).MatchString(got) {
		t.Errorf("with a-deaf's card first and nothing due for it, the countdown says %q; want calm's next resync", got)
	}
}

func TestBrowserLoopShowsPausedNamespace(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	ns := e.openLab(t, ctx, "")
	hiddenExpr := `document.getElementById("loop-paused").hidden`
	pausedStep := func(namespace, phase string) controller.Step {
		return controller.Step{Type: controller.StepController, Phase: phase,
			Object: controller.ObjectRef{Kind: "Controller", Namespace: namespace, Name: "database"}}
	}
	// Another learner's pause is not ours.
	e.recorder.Emit(pausedStep("lab-someone-else", "paused"))
	e.recorder.Emit(pausedStep(ns, "paused"))
	poll(t, ctx, "the loop saying paused", `!`+hiddenExpr+` && document.getElementById("lab").dataset.paused === "true"`)
	if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#loop-paused"))); err != nil || !strings.Contains(strings.ToLower(text), "paused") {
		t.Errorf("paused note = %q (%v)", text, err)
	}
	viewShot(t, ctx, "13-namespace-paused")
	e.recorder.Emit(pausedStep(ns, "resumed"))
	poll(t, ctx, "the loop running again", hiddenExpr+` && document.getElementById("lab").dataset.paused === "false"`)
}

// viewShot saves what the viewport shows (not the whole page), when
// browsertest.ScreenshotsWanted.
func viewShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browsertest.Capture(t, ctx, filepath.Join(artifactsDir(), name+".png"), chromedp.CaptureScreenshot())
}

// overflowing lists the elements wider than the viewport, for the message.
const overflowing = `(() => { const w = document.documentElement.clientWidth; const out = [];
	for (const el of document.querySelectorAll("body *")) { const r = el.getBoundingClientRect();
		if (r.right > w + 0.5 && r.width > 0 && getComputedStyle(el).position !== "absolute") out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") + " " + Math.round(r.right)); }
	return out.slice(0, 8).join(", "); })()`

func TestBrowserNarrowAndProjectorLayouts(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	e.openLab(t, ctx, "")
	screenshot(t, ctx, "00-fresh-lab")
	createInTab(t, ctx, "phone")
	poll(t, ctx, "phone Ready", `document.querySelector("#db-phone .db-head .pill.ok")?.textContent === "Ready True"`)

	// At 390 px no page scrolls sideways.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for _, path := range append(coursePages(t), "/lab", "/lab?scenario=finalizer", "/lab/replay") {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+path), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
			t.Fatal(err)
		}
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil || wide > 390 {
			what, _ := chromedp.Run(ctx, chromedp.Evaluate[string](overflowing))
			t.Errorf("%s at 390 px is %d px wide (%v): %s", path, wide, err, what)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#db-phone"))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "14-lab-390px")

	// 1280×720 at 150% zoom is 853×480 CSS pixels: in the focused layout
	// the loop, the selected card and the newest timeline row all show.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(853, 480, chromedp.EmulateScale(1.5)),
		chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#db-phone"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the stream to open", streamLive)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#layout-toggle"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "a timeline row", `document.querySelector("#rows > li:not([hidden])") !== null`)
	visible := `(() => { const h = innerHeight, w = innerWidth, out = [];
		const whole = (name, el) => { if (!el) { out.push(name + " missing"); return; } const r = el.getBoundingClientRect();
			if (r.top < 0 || r.bottom > h + 0.5 || r.left < 0 || r.right > w + 0.5) out.push(name + " at " + [r.left, r.top, r.right, r.bottom].map(Math.round)); };
		whole("loop diagram", document.getElementById("loop"));
		whole("selected card", document.querySelector("article.db.selected"));
		whole("timeline", document.getElementById("log"));
		const row = document.querySelector("#rows > li:not([hidden])"), r = row && row.getBoundingClientRect();
		if (!row || r.top < 0 || r.top + 20 > h) out.push("newest row not on screen");
		if (scrollY !== 0 || document.documentElement.scrollHeight > h + 0.5) out.push("the page scrolls: " + document.documentElement.scrollHeight);
		return out.join("; "); })()`
	if what, err := chromedp.Run(ctx, chromedp.Evaluate[string](visible)); err != nil || what != "" {
		t.Errorf("focused layout at 1280×720, 150%%: %s (%v)", what, err)
	}
	viewShot(t, ctx, "15-lab-1280x720-150pct-focused")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#layout-toggle")), chromedp.EmulateReset(),
		darkMode(), chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#db-phone"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "a timeline row", `document.querySelector("#rows > li:not([hidden])") !== null`)
	screenshot(t, ctx, "16-lab-dark-ready")
	// Between the phone and the desktop, with the live timeline drawn.
	for _, w := range []int64{800, 600} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900)); err != nil {
			t.Fatal(err)
		}
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil || int64(wide) > w {
			what, _ := chromedp.Run(ctx, chromedp.Evaluate[string](overflowing))
			t.Errorf("the live lab at %d px is %d px wide (%v): %s", w, wide, err, what)
		}
	}
}

// coursePages lists home, the lesson index, every lesson, the quiz and the
// flashcards, the lessons read from the index page.
func coursePages(t *testing.T) []string {
	t.Helper()
	resp, err := shared.http.Client().Get(shared.http.URL + "/lessons")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	pages := []string{"/", "/lessons"}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`href="(/lessons/[a-z0-9-]+)"`).FindAllStringSubmatch(b.String(), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			pages = append(pages, m[1])
		}
	}
	if len(seen) == 0 {
		t.Fatal("no lessons linked from /lessons")
	}
	return append(pages, "/quiz", "/flashcards")
}

func TestBrowserRetriesNameTheirAttempt(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	e.openLab(t, ctx, "?scenario=non-idempotent-create")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.scenario form button`))); err != nil {
		t.Fatal(err)
	}
	// Treating AlreadyExists as an error loops: each retry says which one it is.
	poll(t, ctx, "a retry row", `[...document.querySelectorAll('#rows li.row[data-db="twice"] .trigger')].some(p => /^retry [2-9]\d*$/.test(p.textContent))`)
	poll(t, ctx, "its backoff", `[...document.querySelectorAll('#rows li.row.error[data-db="twice"] .pill.result')].some(p => /^error, backoff \d/.test(p.textContent))`)
	screenshot(t, ctx, "17-retries")
}
