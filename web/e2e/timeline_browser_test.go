package e2e

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// staleWriter is learner code that, on its first run for a Database, lets
// another writer change the Database between its read and its status
// write, an Update that carries the resourceVersion it read: the API server
// refuses it with 409 Conflict. Later runs read again and write.
type staleWriter struct {
	other client.Client
	runs  atomic.Int32
}

func (w *staleWriter) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	var db v1alpha1.Database
	if err := c.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if db.Status.ObservedGeneration == db.Generation {
		return ctrl.Result{}, nil
	}
	if w.runs.Add(1) == 1 {
		var theirs v1alpha1.Database
		if err := w.other.Get(ctx, req.NamespacedName, &theirs); err != nil {
			return ctrl.Result{}, err
		}
		theirs.Annotations = map[string]string{"touched-by": "another writer"}
		if err := w.other.Update(ctx, &theirs); err != nil {
			return ctrl.Result{}, err
		}
	}
	db.Status.ObservedGeneration = db.Generation
	return ctrl.Result{}, c.Status().Update(ctx, &db)
}

// The timeline teaches: each reconcile names the watch event that woke it,
// the fetch the resourceVersion it read, a status write the fields it
// changed; no-op reconciles fold into "in sync ×N", which opens on Enter
// and on a click; a 409 Conflict is a step of its own, explained. All of it
// from the real controller on the real control plane.
func TestBrowserTimelineTeaches(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	ns := e.openLab(t, ctx, "")
	// The rows' width before the timeline scrolls, to compare with once it
	// does (below).
	const logScrolls = `(() => { const l = document.getElementById("log"); return l.scrollHeight > l.clientHeight; })()`
	const rowsWidth = `document.getElementById("rows").getBoundingClientRect().width`
	if browsertest.Eval[bool](t, ctx, logScrolls) {
		t.Fatal("the timeline scrolls before anything happened: the rows' width cannot be compared")
	}
	widthBefore := browsertest.Eval[float64](t, ctx, rowsWidth)
	createInTab(t, ctx, "lesson")
	poll(t, ctx, "lesson Ready", `document.querySelector("#db-lesson .db-head .pill.ok")?.textContent === "Ready True"`)

	rowsOfLesson := `[...document.querySelectorAll('#rows li.row[data-db="lesson"]:has(.rid)')]`
	// The first reconcile: the Database's own create, through For.
	poll(t, ctx, "a reconcile woken by the Database's create, through For", rowsOfLesson+`.some(r =>
		/^Database lesson created · \d+ events? → 1 reconcile$/.test(r.querySelector(".trigger")?.textContent)
		&& r.querySelector(".woke")?.textContent === "woken by the For watch: the Database's own event")`)
	// A later one: the StatefulSet's status, through Owns.
	poll(t, ctx, "a reconcile woken by StatefulSet lesson, through Owns", rowsOfLesson+`.some(r =>
		/^StatefulSet lesson changed · /.test(r.querySelector(".trigger")?.textContent)
		&& r.querySelector(".woke")?.textContent === "woken by an Owns watch: StatefulSet lesson is owned by lesson")`)
	// Each watch event says which watch saw it and the resourceVersion it
	// delivered; the controller's own writes coming back say so, the
	// learner's create does not.
	const evs = `[...document.querySelectorAll('#rows li.row[data-db="lesson"] li.ev')]`
	poll(t, ctx, "events naming their watch and resourceVersion", evs+`.some(e => /^\S+ Database lesson create .* via For · resourceVersion \d+$/.test(e.textContent))
		&& `+evs+`.some(e => /StatefulSet lesson update .* via Owns · resourceVersion \d+/.test(e.textContent))`)
	poll(t, ctx, "the controller's own status write coming back, said so", evs+`.some(e => /Database lesson update .* via For · resourceVersion \d+ · the controller's own status patch coming back$/.test(e.textContent))`)
	if got := browsertest.Eval[bool](t, ctx, evs+`.some(e => / create .*coming back/.test(e.textContent) && e.textContent.includes("Database lesson create"))`); got {
		t.Error("the learner's own create of the Database is called the controller's write coming back")
	}
	// Every fetch names the resourceVersion it read; the last status write
	// names Ready's flip and the ready replicas, old→new.
	poll(t, ctx, "fetches naming their resourceVersion", `(() => { const f = [...document.querySelectorAll('#rows li.row[data-db="lesson"] .step.fetch')];
		return f.length > 0 && f.every(s => /^fetch Database found \(generation 1\) · read at resourceVersion \d+$/.test(s.textContent)); })()`)
	poll(t, ctx, "a status write naming its fields", `[...document.querySelectorAll('#rows li.row[data-db="lesson"] .step.status')].some(s =>
		s.textContent.startsWith("status written, observedGeneration 1: ")
		&& [...s.querySelectorAll(".field")].map(f => f.textContent.trim()).includes("conditions[Ready] False→True")
		&& [...s.querySelectorAll(".field.transition")].length >= 1)`)
	// Each write is numbered as the challenges' checks count them.
	poll(t, ctx, "the status writes numbered 1, 2, … in turn", `(() => { const n = [...document.querySelectorAll('#rows li.row[data-db="lesson"] .step.status .write-no')]
		.map(w => Number(/^ · status write #(\d+)$/.exec(w.textContent)?.[1])).sort((a, b) => a - b);
		return n.length >= 2 && n.every((v, i) => v === i + 1); })()`)
	poll(t, ctx, "readyReplicas 0→1 on a status write", `[...document.querySelectorAll('#rows li.row[data-db="lesson"] .step.status .field')].some(f => f.textContent.trim() === "readyReplicas 0→1")`)
	screenshot(t, ctx, "50-timeline-rows-named")

	// Its scrollbar takes no width from the rows when it appears: the
	// scroller keeps a gutter for it (lab.css), so no row reflows. The
	// rows are compact: opened on their steps, they fill the box.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#rows button.row-toggle[aria-expanded="false"]').forEach(b => b.click())`)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the timeline scrolling", logScrolls)
	if after := browsertest.Eval[float64](t, ctx, rowsWidth); after != widthBefore {
		t.Errorf("the rows were %.0f px wide before the timeline scrolled and %.0f px after: they reflowed when its scrollbar appeared", widthBefore, after)
	}

	// The resyncs (every 10 s here) change nothing: they fold into one
	// line, closed, whose count is the rows inside it.
	fold := `document.querySelector('#rows > li.fold[data-db="lesson"]')`
	poll(t, ctx, "no-op reconciles folded, a resync among them", `/^in sync ×[2-9]\d*$/.test(`+fold+`?.querySelector(".fold-count")?.textContent)
		&& `+fold+`.querySelector("summary").textContent.includes("resync")`)
	check := func(what, expr string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil || !ok {
			failedShot(t, ctx)
			t.Fatalf("%s (%s): %v", what, expr, err)
		}
	}
	// Freeze the timeline, so the count and the rows are read at one time.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#play-pause"))); err != nil {
		t.Fatal(err)
	}
	check("the fold's count is its rows, all hidden", `(() => { const f = `+fold+`; const rows = f.querySelectorAll("ol.folded > li.row");
		return !f.querySelector("details").open && +f.querySelector(".fold-count").textContent.replace(/\D/g, "") === rows.length
			&& [...rows].every(r => !r.checkVisibility() && r.querySelector(".step.status")?.textContent.startsWith("status unchanged: write skipped, nothing in the status changed")); })()`)
	screenshot(t, ctx, "51-timeline-folded")

	// Enter on the line opens it: the rows themselves, each a full reconcile.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#rows > li.fold[data-db="lesson"] summary`)), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the fold open on Enter", fold+`.querySelector("details").open && [...`+fold+`.querySelectorAll("ol.folded > li.row")].every(r => r.checkVisibility() && r.querySelector(".step.fetch"))`)
	screenshot(t, ctx, "52-timeline-fold-open")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rows > li.fold[data-db="lesson"] summary`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the fold closed on a click", `!`+fold+`.querySelector("details").open`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rows > li.fold[data-db="lesson"] summary`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the fold open on a click", fold+`.querySelector("details").open`)
	// An open fold is being read: the next no-op reconcile stays a line
	// of its own above it (the reconciles after that may fold with it),
	// and the rows in the open one stay where they are.
	inFold := evalInt(t, ctx, `String((window.openFold = `+fold+`).querySelectorAll("ol.folded > li.row").length)`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#play-pause"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the next resync a line of its own above the open fold", `(() => { const top = document.querySelector('#rows > li.noop[data-db="lesson"]');
		return !!top && top !== window.openFold && top.compareDocumentPosition(window.openFold) === Node.DOCUMENT_POSITION_FOLLOWING; })()`)
	if n := evalInt(t, ctx, `String(window.openFold.querySelectorAll("ol.folded > li.row").length)`); n != inFold {
		t.Errorf("the open fold held %d rows and now %d: a reconcile folded into it while it was read", inFold, n)
	}
	// Closed, the pointer and the focus elsewhere, the next one folds the
	// lines back into one.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rows > li.fold[data-db="lesson"] summary`)),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 1, 1), chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "one fold again, holding every no-op row", `(() => { const top = document.querySelector('#rows > li[data-db="lesson"]');
		return top.matches(".fold") && !window.openFold.isConnected && top.querySelectorAll("ol.folded > li.row").length >= `+strconv.Itoa(inFold+2)+`; })()`)

	// A conflict, for real: learner code whose status write is based on
	// a read another writer has made stale.
	e.runner.HandOver(ns, &staleWriter{other: e.client})
	t.Cleanup(func() { e.runner.TakeBack(ns) })
	// The hand-over queues lesson again, and its row says so (not
	// "namespace resumed": nothing was paused).
	poll(t, ctx, "the hand-over's reconcile of lesson, said so", `[...document.querySelectorAll('#rows li.row[data-db="lesson"] .trigger')].some(p =>
		/^handed to your code: every Database queued again · \d+ events? → 1 reconcile$/.test(p.textContent))`)
	createInTab(t, ctx, "clash")
	conflict := `[...document.querySelectorAll('#rows li.row[data-db="clash"] .step.conflict')]`
	poll(t, ctx, "a 409 Conflict step, explained", conflict+`.some(s => s.textContent.startsWith("status write → 409 Conflict (based on resourceVersion ")
		&& s.querySelector(".pill.bad")?.title.includes("the object has been modified")
		&& s.querySelector(".why")?.textContent.includes("optimistic locking"))`)
	poll(t, ctx, "its reconcile ended in an error", `[...document.querySelectorAll('#rows li.row.error[data-db="clash"]')].some(r => r.querySelector(".step.conflict") && r.querySelector(".pill.result")?.textContent.startsWith("error"))`)
	// A later reconcile read a newer version and wrote.
	rv := `+(/resourceVersion (\d+)/.exec(` + conflict + `[0].textContent) || [])[1]`
	poll(t, ctx, "a later fetch of a newer version, and a write", `[...document.querySelectorAll('#rows li.row[data-db="clash"] .step.fetch')].some(s => +(/resourceVersion (\d+)/.exec(s.textContent) || [])[1] > `+rv+`)
		&& [...document.querySelectorAll('#rows li.row[data-db="clash"] .step.status')].some(s => s.textContent.startsWith("status written"))`)
	// The conflict is among the row's steps: the learner opens the row.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(r => r.querySelector(".row-body").hidden && r.querySelector("button.row-toggle").click())(`+conflict+`[0].closest("li.row"))`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(`#rows li.row[data-db="clash"] .step.conflict`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "53-timeline-conflict")
	if n := evalInt(t, ctx, `String(`+conflict+`.length)`); n < 1 {
		t.Errorf("%d conflict steps; want at least 1", n)
	}

	// Rows, an open fold and a conflict pass axe, light and dark.
	if checked := checkPage(t, ctx, axeSource(t), "/lab (timeline: fold open, conflict)"); checked != 2 {
		t.Errorf("axe ran %d times; want 2", checked)
	}
}
