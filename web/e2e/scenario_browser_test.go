package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/lab"
)

// These tests run each scenario of lab.Scenarios in real Chromium, as a
// learner does: open /lab?scenario=NAME, press its setup button, do what
// the scenario asks, and check that what the page shows matches its "What
// to watch" sentences. scenario_test.go checks the same sentences against
// the recorded trace; these check the screen the learner reads.

// rowsOf is a JavaScript expression: the timeline rows of Database db,
// oldest first (the timeline draws the newest on top).
func rowsOf(db string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#rows > li[data-db=%q]')].reverse()`, db)
}

// cardOf is a JavaScript expression: the card of Database db, or null.
func cardOf(db string) string {
	return fmt.Sprintf(`document.getElementById(%q)`, "db-"+db)
}

// screenText returns the text a learner reads in the region selected by
// each CSS selector, for a failure message.
func screenText(ctx context.Context, selectors ...string) string {
	var b strings.Builder
	for _, sel := range selectors {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : "(not on the page)"; })()`, sel)))
		if err != nil {
			text = "(unreadable: " + err.Error() + ")"
		}
		fmt.Fprintf(&b, "\n--- %s ---\n%s", sel, strings.TrimSpace(text))
	}
	return b.String()
}

// shows waits until expr is truthy; when it never is, the test fails with
// what the regions showed.
func shows(t *testing.T, ctx context.Context, what, expr string, regions ...string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(deadline))); err != nil {
		failedShot(t, ctx)
		t.Fatalf("the screen never showed %s (%v); it showed:%s", what, err, screenText(ctx, regions...))
	}
}

// showsNow checks expr once, failing (not stopping) the test with what the
// regions showed.
func showsNow(t *testing.T, ctx context.Context, what, expr string, regions ...string) {
	t.Helper()
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil || !ok {
		t.Errorf("the screen does not show %s (%v); it shows:%s", what, err, screenText(ctx, regions...))
	}
}

// startScenario opens the scenario's page in a fresh session, checks its
// banner tells what the scenario says, presses the setup button and waits
// for the setup's message.
func startScenario(t *testing.T, name, done string) (context.Context, string) {
	t.Helper()
	s, ok := lab.FindScenario(name)
	if !ok {
		t.Fatalf("no scenario %q in lab.Scenarios", name)
	}
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab?scenario="+name), chromedp.WaitVisible(chromedp.CSS(".scenario form button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the stream to open", streamLive)
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil || ns == "" {
		t.Fatalf("no namespace on the page: %v", err)
	}
	banner, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".scenario").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{s.Title, s.Setup}, s.Watch...) {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q; it reads:\n%s", want, banner)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.scenario form button`))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the setup's message", fmt.Sprintf(`document.querySelector("#flash .flash-ok")?.textContent.includes(%q)`, done), "#flash")
	return ctx, ns
}

// reveal scrolls the first element of the array expr into view, so that
// the screenshot shows the row the scenario is about.
func reveal(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(`+expr+`)[0]?.scrollIntoView({ block: "nearest" })`)); err != nil {
		t.Errorf("scroll into view: %v", err)
	}
}

// phasesOf is a JavaScript expression: the finalizer phases the timeline
// shows for db, oldest first.
func phasesOf(db string) string {
	return rowsOf(db) + `.flatMap(r => [...r.querySelectorAll(".step.finalizer b")].map(b => b.textContent))`
}

// noErrorPill is a JavaScript expression: no row of db shows an Error
// outcome or is marked as an error.
func noErrorPill(db string) string {
	return `!` + rowsOf(db) + `.some(r => r.classList.contains("error") || [...r.querySelectorAll(".pill")].some(p => p.textContent === "Error"))`
}

// inOrder is a JavaScript expression: the array expr holds want's items
// in this order (others may come between).
func inOrder(expr string, want ...string) string {
	w, _ := json.Marshal(want)
	return fmt.Sprintf(`((got, want) => { let i = 0; for (const g of got) if (g === want[i]) i++; return i === want.length; })(%s, %s)`, expr, w)
}

func TestBrowserScenarioFirstReconcile(t *testing.T) {
	t.Parallel()
	ctx, _ := startScenario(t, "first-reconcile", "Created Database first")
	// One reconcile creates the three children and writes status once,
	// with observedGeneration 1.
	oneRow := rowsOf("first") + `.some(r => { const a = [...r.querySelectorAll(".step.action")].map(s => s.textContent);
		const made = k => a.some(s => new RegExp("^action create " + k + " .*→ Created").test(s));
		return made("Secret") && made("Service") && made("StatefulSet")
			&& [...r.querySelectorAll(".step.status")].some(s => s.textContent.includes("written, observedGeneration 1")); })`
	shows(t, ctx, "one reconcile row creating the Secret, the Service and the StatefulSet and writing observedGeneration 1", oneRow, "#rows")
	shows(t, ctx, "first Ready True on its card", cardOf("first")+`?.querySelector(".db-head .pill.ok")?.textContent === "Ready True"`, "#db-first", "#rows")
	showsNow(t, ctx, "generation 1 observed", cardOf("first")+`.querySelector(".generation").textContent === "1" && `+cardOf("first")+`.querySelector(".observed").textContent === "1"`, "#db-first")
	showsNow(t, ctx, "no Error pill", noErrorPill("first"), "#rows")
	reveal(t, ctx, rowsOf("first")+`.filter(r => r.textContent.includes("→ Created"))`)
	screenshot(t, ctx, "30-scenario-first-reconcile")
}

func TestBrowserScenarioAlreadyExists(t *testing.T) {
	t.Parallel()
	ctx, _ := startScenario(t, "already-exists", "Made Service taken")
	alreadyExists := rowsOf("taken") + `.some(r => [...r.querySelectorAll(".step.action")].some(s => /create Service .*→ AlreadyExists/.test(s.textContent)))`
	shows(t, ctx, "a create of Service taken answered AlreadyExists", alreadyExists, "#rows")
	shows(t, ctx, "taken Ready True on its card", cardOf("taken")+`?.querySelector(".db-head .pill.ok")?.textContent === "Ready True"`, "#db-taken", "#rows")
	// After AlreadyExists, the controller corrects the Service it adopted.
	corrected := rowsOf("taken") + `.some(r => [...r.querySelectorAll(".step.action")].some(s => /Service .*→ Updated/.test(s.textContent)))`
	showsNow(t, ctx, "the adopted Service patched (→ Updated)", corrected, "#rows")
	showsNow(t, ctx, "no Error pill and no error row", noErrorPill("taken"), "#rows")
	reveal(t, ctx, rowsOf("taken")+`.filter(r => r.textContent.includes("→ AlreadyExists"))`)
	screenshot(t, ctx, "31-scenario-already-exists")
}

func TestBrowserScenarioFinalizer(t *testing.T) {
	t.Parallel()
	ctx, _ := startScenario(t, "finalizer", "doomed is Ready. Now delete it.")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-doomed form[action$="/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the finalizer phases draining → snapshot → removed", inOrder(phasesOf("doomed"), "draining", "snapshot", "removed"), "#rows")
	pointerAway(t, ctx) // a deleted card waits for the pointer to leave the cards
	shows(t, ctx, "the card of doomed gone", cardOf("doomed")+` === null`, "#databases")
	showsNow(t, ctx, "no Error pill", noErrorPill("doomed"), "#rows")
	shows(t, ctx, "the snapshot listed under kept snapshots", `(() => { const s = document.getElementById("kept"), li = document.getElementById("snap-doomed-final-snapshot");
		return !!(s && !s.hidden && li && li.textContent.includes("from Database doomed")); })()`, "#kept")
	screenshot(t, ctx, "32-scenario-finalizer")
}

func TestBrowserScenarioStatusThrash(t *testing.T) {
	t.Parallel()
	ctx, _ := startScenario(t, "status-thrash", "Created Database thrash")
	// The rows keep coming, and status is written again and again
	// (between the writes, the cap holds a reconcile that skips the write
	// and requeues about a second later).
	shows(t, ctx, "at least 4 reconciles of thrash writing status", rowsOf("thrash")+`.filter(r => r.querySelector(".rid")
		&& [...r.querySelectorAll(".step.status")].some(s => s.textContent.startsWith("status written, observedGeneration 1"))).length >= 4`, "#rows")
	const history = `#db-thrash tr.history details`
	shows(t, ctx, "the condition history on the card", `document.querySelector(`+fmt.Sprintf("%q", history)+`) !== null`, "#db-thrash")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(history+" summary"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "a history entry marked rewritten", `[...document.querySelectorAll(`+fmt.Sprintf("%q", history)+`)].some(d => d.open && d.innerText.includes("rewritten: lastTransitionTime moved, status did not"))`, "#db-thrash")
	showsNow(t, ctx, "generation staying 1", cardOf("thrash")+`.querySelector(".generation").textContent === "1"`, "#db-thrash")
	screenshot(t, ctx, "33-scenario-status-thrash")
}

func TestBrowserScenarioStuckFinalizer(t *testing.T) {
	t.Parallel()
	ctx, ns := startScenario(t, "stuck-finalizer", "controller is paused for your namespace")
	e := shared
	t.Cleanup(func() { e.runner.ResumeNamespace(ns) })
	shows(t, ctx, "the controller pill saying the namespace is paused", `document.getElementById("controller-status").textContent === "Your namespace is paused"`, "#controller-status")
	reconciles := `String(` + rowsOf("stuck") + `.filter(r => r.querySelector(".rid")).length)`
	before := evalInt(t, ctx, reconciles)
	mark, gen := len(e.trace(ns, "stuck")), generationOf(t, e, ns, "stuck")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-stuck form[action$="/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "stuck Terminating, held by the finalizer", cardOf("stuck")+`?.querySelector(".db-head").textContent.includes("Terminating") && `+
		cardOf("stuck")+`.querySelector(".terminating")?.textContent.includes("db.oplab.dev/final-snapshot")`, "#db-stuck")
	// The delete's event arrives; nothing reconciles it while paused. The
	// controller has held the Database's own event (or, wrongly,
	// reconciled it) once the trace says so, and the page has caught up
	// once it holds the trace's newest step.
	shows(t, ctx, "the delete's event waiting", rowsOf("stuck")+`.some(r => r.classList.contains("pending") && r.textContent.includes("waiting for a reconcile"))`, "#rows")
	steps := e.waitTrace(t, "the delete's event held", ns, "stuck", func(s []controller.Step) bool {
		return slices.ContainsFunc(s[mark:], heldDeleteOrReconcile(gen))
	})
	shows(t, ctx, "stuck's newest step on the page", fmt.Sprintf(`%s >= %d`, newestSeq, steps[len(steps)-1].Seq), "#rows")
	if after := evalInt(t, ctx, reconciles); after != before {
		t.Errorf("%d reconcile rows of stuck appeared while the namespace was paused; the timeline:%s", after-before, screenText(ctx, "#rows"))
	}
	showsNow(t, ctx, "still Terminating and paused", cardOf("stuck")+` !== null && document.getElementById("controller-status").textContent === "Your namespace is paused"`, "#db-stuck", "#controller-status")
	screenshot(t, ctx, "34-scenario-stuck-paused")

	// The banner names the button the learner presses.
	s, _ := lab.FindScenario("stuck-finalizer")
	label, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('button[data-controller="start"]').textContent.trim()`))
	if err != nil || !strings.HasPrefix(s.Watch[1], "Press "+label+":") {
		t.Errorf("the banner says %q, but the button reads %q (%v)", s.Watch[1], label, err)
	}
	clickEnabled(t, ctx, `button[data-controller="start"]`)
	shows(t, ctx, "the finalizer running after Resume: draining → snapshot → removed", inOrder(phasesOf("stuck"), "draining", "snapshot", "removed"), "#rows")
	pointerAway(t, ctx) // a deleted card waits for the pointer to leave the cards
	shows(t, ctx, "the card of stuck gone", cardOf("stuck")+` === null`, "#databases")
	shows(t, ctx, "the snapshot of stuck kept", `(() => { const s = document.getElementById("kept"), li = document.getElementById("snap-stuck-final-snapshot");
		return !!(s && !s.hidden && li && li.textContent.includes("from Database stuck")); })()`, "#kept")
	showsNow(t, ctx, "the controller running again", `document.getElementById("controller-status").textContent === "Controller running"`, "#controller-status")
	screenshot(t, ctx, "35-scenario-stuck-resumed")
}

func TestBrowserScenarioNonIdempotentCreate(t *testing.T) {
	t.Parallel()
	ctx, _ := startScenario(t, "non-idempotent-create", "Created Database twice")
	shows(t, ctx, "the first reconcile creating the three children", rowsOf("twice")+`.some(r => ["Secret", "Service", "StatefulSet"].every(k =>
		[...r.querySelectorAll(".step.action")].some(s => new RegExp("create " + k + " .*→ Created").test(s.textContent))))`, "#rows")
	shows(t, ctx, "a later create failing with AlreadyExists in an error row", rowsOf("twice")+`.some(r => r.classList.contains("error")
		&& /^error, backoff /.test(r.querySelector(".pill.bad.result")?.textContent || "")
		&& [...r.querySelectorAll(".step.action")].some(s => /create .*→ AlreadyExists/.test(s.textContent)))`, "#rows")
	// The retries are numbered, each after a longer backoff: three retry
	// rows in a row, numbers rising, backoffs growing.
	shows(t, ctx, "three retries numbered in order, with growing backoffs", `(() => {
		const secs = t => { let s = 0; for (const [, n, u] of t.matchAll(/([\d.]+)(ms|s|m|h)/g)) s += +n * { ms: 0.001, s: 1, m: 60, h: 3600 }[u]; return s; };
		const r = `+rowsOf("twice")+`.map(r => ({ n: +(/^retry (\d+)$/.exec(r.querySelector(".trigger")?.textContent || "") || [])[1],
			b: secs((/backoff (.*)$/.exec(r.querySelector(".pill.result")?.textContent || "") || ["", ""])[1]) })).filter(x => x.n);
		for (let i = 2; i < r.length; i++) if (r[i].n === r[i-1].n + 1 && r[i-1].n === r[i-2].n + 1 && r[i].b > r[i-1].b && r[i-1].b > r[i-2].b) return true;
		return false; })()`, "#rows")
	shows(t, ctx, "Degraded True on the card", `[...document.querySelectorAll("#db-twice table.conditions tr")].some(tr => tr.cells[0]?.textContent === "Degraded" && tr.cells[1]?.textContent === "True")`, "#db-twice")
	screenshot(t, ctx, "36-scenario-non-idempotent-create")
}

func TestBrowserScenarioDropEvents(t *testing.T) {
	t.Parallel()
	ctx, ns := startScenario(t, "drop-events", "Created Database deaf")
	// The shared server resyncs every 10 s, so the whole scenario, resync
	// included, fits in well under a minute.
	shows(t, ctx, "the create event marked ignored, with no reconcile after it", `(() => { const r = `+rowsOf("deaf")+`;
		return r.some(x => x.classList.contains("pending") && x.querySelector(".pill.warn")?.textContent.endsWith("ignored")
			&& [...x.querySelectorAll("li.ev.ignored")].some(ev => ev.textContent.includes("Database deaf create") && ev.textContent.includes("ignored: drop-events")))
			&& !r.some(x => x.querySelector(".rid") && !x.querySelector(".row-head").textContent.includes("resync")); })()`, "#rows")
	// Change the replicas: generation moves, observedGeneration does not.
	kubectlScale(t, ns, "deaf", 2)
	shows(t, ctx, "generation 2 with the status stale", cardOf("deaf")+`?.querySelector(".generation").textContent === "2" && `+cardOf("deaf")+`.querySelector(".stale") !== null`, "#db-deaf")
	shows(t, ctx, "the update event ignored", rowsOf("deaf")+`.some(x => [...x.querySelectorAll("li.ev.ignored")].some(ev => ev.textContent.includes("Database deaf update (generation 2)")))`, "#rows")
	screenshot(t, ctx, "37-scenario-drop-events-stale")
	// At the resync, a reconcile runs anyway and converges everything;
	// no watch event ever queues one (what follows the resync is its own
	// requeue, while the Pods start).
	shows(t, ctx, "a resync reconcile", rowsOf("deaf")+`.some(x => x.querySelector(".rid") && x.querySelector(".trigger")?.textContent === "resync")`, "#rows")
	shows(t, ctx, "deaf Ready True, generation 2 observed", cardOf("deaf")+`?.querySelector(".db-head .pill.ok")?.textContent === "Ready True" && `+cardOf("deaf")+`.querySelector(".observed").textContent === "2"`, "#db-deaf", "#rows")
	showsNow(t, ctx, "only resyncs and their requeues reconciling deaf", `!`+rowsOf("deaf")+`.some(x => x.querySelector(".rid") && !/resync|requeued/.test(x.querySelector(".row-head").textContent))`, "#rows")
	screenshot(t, ctx, "38-scenario-drop-events-resync")
}
