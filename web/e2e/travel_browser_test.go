package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/oplab-dev/oplab/internal/polltest"
)

// changeRowFrom is the seq of the newest finished reconcile row that
// changed something, provided its seq is at least from: the row is after
// the controller saw that step. Such a row stays as it is: a no-op one may
// fold into a group, a row of events waiting for a reconcile is replaced by
// the reconcile's, and a running one's seq moves with each step.
func changeRowFrom(from uint64) string {
	return fmt.Sprintf(`([...document.querySelectorAll("#rows > li.row[data-seq]:not(.noop):has(.rid)")]
		.find(li => li.querySelector(".row-head .result") && +li.dataset.seq >= %d)?.dataset.seq || "")`, from)
}

// travelObj is an expression for the time-travel panel's card of the
// object of kind, found as a learner does, by the kind its heading names;
// undefined while there is none.
func travelObj(kind string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#travel .travel-obj")].find(s => s.querySelector("h3 .kind")?.textContent === %q)`, kind)
}

// replicasIn is spec.replicas of kind in the panel's whole object, or -1.
func replicasIn(kind string) string {
	return fmt.Sprintf(`(() => { const pre = %s?.querySelector("pre");
		if (!pre) return -1; const o = JSON.parse(pre.textContent); return o.spec ? o.spec.replicas : -1; })()`, travelObj(kind))
}

// A click on a timeline row shows the objects as they were after it; its
// Time travel button, shown on every finished row, does too (the keyboard's
// way); "compare" shows what changed between two rows.
func TestBrowserTimeTravel(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx, ns := labAt1280(t, "")
	createInTab(t, ctx, "tt")
	poll(t, ctx, "tt Ready", `document.querySelector("#db-tt .db-head .pill.ok")?.textContent === "Ready True"`)
	// The rows are live and may lag the cards: pick rows after the
	// StatefulSet's events, as the recorder has them.
	var created uint64
	polltest.Until(t, deadline, "the StatefulSet's create on the trace", func() (bool, error) {
		created = e.eventSeq(ns, "StatefulSet", "tt", 1)
		return created > 0, nil
	})
	poll(t, ctx, "a row that changed something", changeRowFrom(created))
	earlier, err := chromedp.Run(ctx, chromedp.Evaluate[string](changeRowFrom(created)))
	if err != nil {
		t.Fatal(err)
	}
	rowName := func(seq string) chromedp.CSS {
		return chromedp.CSS(fmt.Sprintf(`#rows li[data-seq=%q] .row-head b`, seq))
	}

	// The earlier row: one replica, in the Database and the StatefulSet.
	if err := chromedp.Do(ctx, chromedp.Click(rowName(earlier))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the panel with the StatefulSet", replicasIn("StatefulSet")+` !== -1`)
	for _, kind := range []string{"Database", "StatefulSet"} {
		if n := evalInt(t, ctx, `String(`+replicasIn(kind)+`)`); n != 1 {
			t.Errorf("after row %s the %s has replicas %d, want 1", earlier, kind, n)
		}
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("travel-h").textContent`)); got != "Objects after step "+earlier {
		t.Errorf("panel heading %q, want the step's seq %s", got, earlier)
	}
	if secret, _ := chromedp.Run(ctx, chromedp.Evaluate[string](travelObj("Secret")+`?.querySelector("pre")?.textContent || "none"`)); secret == "none" || strings.Contains(secret, `"data"`) {
		t.Errorf("the Secret in the panel: %s; want it there, without data", secret)
	}
	viewShot(t, ctx, "travel-01-earlier-1280x800")
	axeCheck(t, ctx, "lab with the time-travel panel")
	// Escape closes it and gives focus back to the row.
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the panel closed, focus on the row's Time travel button", fmt.Sprintf(`document.getElementById("travel").hidden && document.activeElement?.matches("button.travel-here") && document.activeElement.closest("li").dataset.seq === %q`, earlier))

	// Scale to 2.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#db-tt form[action$="/edit"] input[name="replicas"]`), "2"),
		chromedp.Click(chromedp.CSS(`#db-tt form[action$="/edit"] button`)),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "two Pods", `document.querySelectorAll("#db-tt .tree li li li").length === 2`)
	var scaled uint64
	polltest.Until(t, deadline, "the StatefulSet's scale on the trace", func() (bool, error) {
		scaled = e.eventSeq(ns, "StatefulSet", "tt", 2)
		return scaled > 0, nil
	})
	poll(t, ctx, "a row after the scale that changed something", changeRowFrom(scaled))
	later, _ := chromedp.Run(ctx, chromedp.Evaluate[string](changeRowFrom(scaled)))

	// The later row, by keyboard: its Time travel button, on the row for
	// all to see, focused, Enter.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(fmt.Sprintf(`#rows li[data-seq=%q] button.travel-here`, later))), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the panel at the later row", fmt.Sprintf(`document.getElementById("travel-h").textContent === "Objects after step %s" && document.getElementById("travel").getAttribute("aria-busy") === "false"`, later))
	if n := evalInt(t, ctx, `String(`+replicasIn("StatefulSet")+`)`); n != 2 {
		panel, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("travel").innerText`))
		rows, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#rows li[data-seq]")].slice(0, 6).map(li => li.dataset.seq + ": " + li.innerText.slice(0, 300)).join("\n---\n")`))
		t.Fatalf("after row %s the StatefulSet has replicas %d, want 2; the panel:\n%s\nthe newest rows:\n%s", later, n, panel, rows)
	}
	if n := evalInt(t, ctx, `String(`+replicasIn("Database")+`)`); n != 2 {
		t.Errorf("after row %s the Database has replicas %d, want 2", later, n)
	}
	viewShot(t, ctx, "travel-02-later-1280x800")

	// Compare with the earlier row.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#travel-compare"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "picking", `document.getElementById("travel").classList.contains("picking")`)
	if err := chromedp.Do(ctx, chromedp.Click(rowName(earlier))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the comparison", fmt.Sprintf(`document.getElementById("travel-h").textContent === "Changes from step %s to step %s"`, earlier, later))
	poll(t, ctx, "the comparison's objects", `document.getElementById("travel").getAttribute("aria-busy") === "false" && `+travelObj("StatefulSet")+`?.querySelector(".changes") != null`)
	for _, kind := range []string{"Database", "StatefulSet"} {
		lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(
			`[...(%s?.querySelectorAll(".changes li") ?? [])].map(li => li.textContent)`, travelObj(kind))))
		if err != nil || !containsLine(lines, "spec.replicas 1 → 2") {
			t.Errorf("compare %s..%s, %s: %q (%v); want the line spec.replicas 1 → 2", earlier, later, kind, lines, err)
		}
	}
	picked := evalInt(t, ctx, `String(document.querySelectorAll("#rows li.travel-picked").length)`)
	if picked != 2 {
		t.Errorf("%d rows marked as compared, want 2", picked)
	}
	viewShot(t, ctx, "travel-03-compare-1280x800")
	axeCheck(t, ctx, "lab comparing two rows")

	// All fields: resourceVersion appears, managedFields as lines.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#travel-all"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "resourceVersion among the changes", `document.getElementById("travel").getAttribute("aria-busy") === "false" && [...document.querySelectorAll('#travel .changes li')].some(li => li.textContent.startsWith("metadata.resourceVersion "))`)

	// At 390 px the panel takes the screen and nothing scrolls sideways.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if wide := evalInt(t, ctx, `String(document.documentElement.scrollWidth)`); wide > 390 {
		what, _ := chromedp.Run(ctx, chromedp.Evaluate[string](overflowing))
		t.Errorf("the lab with the panel at 390 px is %d px wide: %s", wide, what)
	}
	viewShot(t, ctx, "travel-04-compare-390px")
	axeCheck(t, ctx, "time-travel panel at 390 px")
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Join(strings.Fields(l), " ") == want {
			return true
		}
	}
	return false
}
