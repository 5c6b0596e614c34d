package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/internal/polltest"
)

// rowBetween is the seq of a finished reconcile row with from <= seq < to
// (to 0: no upper bound), or "".
func rowBetween(from, to uint64) string {
	return fmt.Sprintf(`([...document.querySelectorAll("#rows > li.row[data-seq]:not(.noop):has(.rid)")]
		.find(li => li.querySelector(".row-head .result") && +li.dataset.seq >= %d && (%d === 0 || +li.dataset.seq < %d))?.dataset.seq || "")`, from, to, to)
}

// An export carries the namespace's history (version 3): replayed, a click
// on a row shows the objects after it, from the file, read-only; a crafted
// history's markup shows as text and runs nothing.
func TestBrowserReplayTravels(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	if code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {"rt"}, "replicas": {"1"}}); code != 200 {
		t.Fatalf("create: %d %+v", code, res)
	}
	var one, edited, two uint64
	polltest.Until(t, deadline, "the StatefulSet's first event on the trace", func() (bool, error) {
		one = e.eventSeq(ns, "StatefulSet", "rt", 1)
		return one > 0, nil
	})
	// Ready: reconciles finished after the StatefulSet's first event, so
	// the timeline has rows with one replica before the scale.
	polltest.Until(t, deadline, "rt Ready", func() (bool, error) {
		d, ok := e.latestState(ns, "rt")
		return ok && d.Ready() == "True", nil
	})
	if code, res := postForm(t, c, e.http.URL, "/lab/databases/rt/edit", url.Values{
		"replicas": {"2"}, "version": {"16"}, "origReplicas": {"1"}, "origVersion": {"16"},
	}); code != 200 {
		t.Fatalf("scale: %d %+v", code, res)
	}
	// Ready was True before the scale too: the export must also hold the
	// reconcile that saw both replicas ready, finished, or the replay has
	// no row after the scale to show.
	polltest.Until(t, deadline, "the StatefulSet's event at generation 2, and a reconcile after it", func() (bool, error) {
		two = e.eventSeq(ns, "StatefulSet", "rt", 2)
		edited = e.eventSeq(ns, "Database", "rt", 2)
		d, ok := e.latestState(ns, "rt")
		return two > 0 && edited > 0 && ok && d.Ready() == "True" && d.ReadyReplicas == 2 && e.resultAfter(ns, two), nil
	})
	resp, err := c.Get(e.http.URL + "/lab/export")
	if err != nil {
		t.Fatal(err)
	}
	exported, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var head struct {
		Version  int
		History  *struct{ Objects []json.RawMessage }
		Messages []json.RawMessage
	}
	if err := json.Unmarshal(exported, &head); err != nil || head.Version != 3 || head.History == nil || len(head.History.Objects) < 3 {
		t.Fatalf("export: version %d, history %v (%v); want version 3 with the Database and its children", head.Version, head.History != nil, err)
	}
	histBytes := 0
	for _, o := range head.History.Objects {
		histBytes += len(o)
	}
	t.Logf("the export: %d bytes, %d messages; its history %d objects in %d bytes", len(exported), len(head.Messages), len(head.History.Objects), histBytes)
	dir := t.TempDir()
	file := filepath.Join(dir, "timeline.json")
	if err := os.WriteFile(file, exported, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	openReplay := func(file string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Navigate(e.http.URL+"/lab/replay"),
			chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}),
			chromedp.Click(chromedp.CSS(`.replay-form button`)),
			chromedp.WaitVisible(chromedp.CSS("#replay-all")),
			chromedp.Click(chromedp.CSS("#replay-all")),
		); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "rows after the scale replayed", rowBetween(two, 0)+` !== ""`)
	}
	openAt := func(seq string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#rows li[data-seq=%q] .row-head b`, seq)))); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "the panel at row "+seq, fmt.Sprintf(`document.getElementById("travel-h").textContent === "Objects after step %s" && document.getElementById("travel").getAttribute("aria-busy") === "false"`, seq))
	}

	openReplay(file)
	// Before the Database's edit (its event at generation 2), after the
	// StatefulSet's first event: one replica in both.
	earlier, _ := chromedp.Run(ctx, chromedp.Evaluate[string](rowBetween(one, edited)))
	later, _ := chromedp.Run(ctx, chromedp.Evaluate[string](rowBetween(two, 0)))
	if earlier == "" || later == "" {
		t.Fatalf("rows before and after the scale: %q, %q", earlier, later)
	}
	openAt(earlier)
	for _, kind := range []string{"Database", "StatefulSet"} {
		if n := evalInt(t, ctx, `String(`+replicasIn(kind)+`)`); n != 1 {
			t.Errorf("replayed, after row %s the %s has replicas %d, want 1", earlier, kind, n)
		}
	}
	openAt(later)
	for _, kind := range []string{"Database", "StatefulSet"} {
		if n := evalInt(t, ctx, `String(`+replicasIn(kind)+`)`); n != 2 {
			t.Errorf("replayed, after row %s the %s has replicas %d, want 2", later, kind, n)
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelectorAll('#travel details.whole').forEach(d => d.open = false); `+travelObj("Database")+`.querySelector("details.whole").open = true`)); err != nil {
		t.Fatal(err)
	}
	viewShot(t, ctx, "replay-travel-01-later-1280x800")
	axeCheck(t, ctx, "replay with the time-travel panel")

	// A crafted history: markup in an object's field and in an object's
	// name shows as text; nothing runs.
	const payload = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`
	var whole map[string]any
	if err := json.Unmarshal(exported, &whole); err != nil {
		t.Fatal(err)
	}
	hist := whole["history"].(map[string]any)
	for _, o := range hist["objects"].([]any) {
		o := o.(map[string]any)
		if o["kind"] == "Database" {
			first := o["versions"].([]any)[0].(map[string]any)["object"].(map[string]any)
			first["metadata"].(map[string]any)["annotations"] = map[string]any{"note": payload}
		}
	}
	hist["objects"] = append(hist["objects"].([]any), map[string]any{"kind": "ConfigMap", "name": `<img src=x onerror="window.pwned=3">`,
		"versions": []any{map[string]any{"after": 1, "event": "create", "object": map[string]any{"kind": "ConfigMap", "data": map[string]any{"x": payload}}}}})
	crafted, _ := json.Marshal(whole)
	craftedFile := filepath.Join(dir, "crafted.json")
	if err := os.WriteFile(craftedFile, crafted, 0o644); err != nil {
		t.Fatal(err)
	}
	openReplay(craftedFile)
	openAt(earlier)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelectorAll('#travel details.whole').forEach(d => d.open = true), true)`)); err != nil {
		t.Fatal(err)
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("travel").textContent`))
	if !strings.Contains(text, `<img src=x onerror=\"window.pwned=2\">`) || !strings.Contains(text, `<img src=x onerror="window.pwned=3">`) {
		t.Errorf("the crafted markup is not shown as text in the panel:\n%s", text)
	}
	if n := evalInt(t, ctx, `String(document.querySelectorAll("#travel img, #travel script").length)`); n != 0 {
		t.Errorf("the panel holds %d img or script elements from the file", n)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.pwned)`)); got != "undefined" {
		t.Errorf("the crafted history ran: window.pwned = %s", got)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(`+travelObj("ConfigMap")+`.scrollIntoView(), true)`)); err != nil {
		t.Fatal(err)
	}
	viewShot(t, ctx, "replay-travel-02-crafted-1280x800")
}
