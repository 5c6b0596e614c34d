package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// TestBrowserCodeTravelsInTheExport: code written on /code and run there
// travels in the lab's export; replaying the file shows the code that ran
// and the edit made after it, read-only, beside the "your code" reconciles,
// and its button loads the code that ran back into the editor.
func TestBrowserCodeTravelsInTheExport(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	// /code needs a lab session: the lab starts one.
	// The editor is emptied first: it may already hold the skeleton, and
	// then only an empty editor filling again says the Load has landed
	// (typing before it would be overwritten when it does).
	browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.Navigate(e.http.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")),
		chromedp.WaitReady(chromedp.CSS("#load")))
	browsertest.Eventually(t, ctx, `String(document.readyState)`, "complete")
	browsertest.Eval[bool](t, ctx, `(() => { document.getElementById("source").value = ""; return true })()`)
	browsertest.Do(t, ctx, chromedp.SetValue(chromedp.CSS("#starter"), "skeleton"), chromedp.Click(chromedp.CSS("#load")))
	skeleton := starters.Source("skeleton")
	browsertest.Eventually(t, ctx, `String(document.getElementById("source").value.length)`, itoa(len(skeleton)))
	ns := browsertest.Eval[string](t, ctx, `document.getElementById("code").dataset.namespace`)

	// The learner types a line of their own at the end, and runs it.
	ran := skeleton + "// Written for the export test.\n"
	typeAtEnd := func(text string) {
		browsertest.Eval[bool](t, ctx, `(() => { const s = document.getElementById("source"); s.focus();
			s.setSelectionRange(s.value.length, s.value.length); return true })()`)
		browsertest.Do(t, ctx, chromedp.KeyEvent(text))
	}
	typeAtEnd("// Written for the export test.\n")
	if got := browsertest.Eval[string](t, ctx, `document.getElementById("source").value`); got != ran {
		t.Fatalf("the editor holds %q at its end, want the typed line", got[max(0, len(got)-60):])
	}
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS("#run")))
	browsertest.Eventually(t, ctx, `document.getElementById("code").dataset.running`, "true")
	db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typed"}}
	if err := e.client.Create(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	// The code reconciles the Database (its runs show on the code page).
	polltest.Until(t, deadline, "a reconcile of the learner's code", func() (bool, error) {
		for _, m := range e.recorder.Export(ns).Messages {
			if strings.Contains(string(m), `"yourCode":true`) && strings.Contains(string(m), `"type":"result"`) {
				return true, nil
			}
		}
		return false, nil
	})

	// Then an edit, not run, kept by the session (saved a second after
	// the last key).
	typeAtEnd("// Edited after the run.\n")
	edited := ran + "// Edited after the run.\n"
	polltest.Until(t, deadline, "the edit kept by the session", func() (bool, error) {
		c := e.server.CodeOf(ns)
		return c != nil && c.Source == edited && c.Ran == ran, nil
	})

	// Export, as the lab's Export link downloads it.
	exported, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/lab/export").then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(exported, fmt.Sprintf(`"version": %d`, trace.ExportVersion)) || !strings.Contains(exported, `"code": {`) {
		t.Fatalf("the export is not version %d with code:\n%.300s", trace.ExportVersion, exported)
	}
	file := filepath.Join(t.TempDir(), "timeline.json")
	if err := os.WriteFile(file, []byte(exported), 0o644); err != nil {
		t.Fatal(err)
	}

	browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+"/lab/replay"),
		chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}),
		chromedp.Click(chromedp.CSS(`.replay-form button`)),
		chromedp.WaitVisible(chromedp.CSS("#replay-code-ran")),
		chromedp.Click(chromedp.CSS("#replay-all")))
	poll(t, ctx, "the replayed reconciles marked your code", `document.querySelector('#rows li.row[data-db="typed"] .your-code') !== null`)
	if got := browsertest.Eval[string](t, ctx, `document.getElementById("replay-code-ran").textContent`); got != ran {
		t.Errorf("the replay shows as the code that ran %q, want %q", got, ran)
	}
	if got := browsertest.Eval[string](t, ctx, `document.getElementById("replay-code-source").textContent`); got != edited {
		t.Errorf("the replay shows as the edited code %q, want %q", got, edited)
	}
	screenshot(t, ctx, "code-replayed")

	// Back into the editor: the code that ran replaces the browser's copy.
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`#replay-code form.replay-import button`)),
		chromedp.WaitVisible(chromedp.CSS("#code-imported")))
	if got := browsertest.Eval[string](t, ctx, `document.getElementById("source").value`); got != ran {
		t.Errorf("after loading the replay's code the editor holds %d characters, want the %d that ran", len(got), len(ran))
	}
	screenshot(t, ctx, "code-imported")
	browsertest.Do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#source")))
	if got := browsertest.Eval[string](t, ctx, `document.getElementById("source").value`); got != ran {
		t.Errorf("after a reload the editor holds %d characters, want the loaded %d (kept in the browser too)", len(got), len(ran))
	}
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS("#back")))
	browsertest.Eventually(t, ctx, `document.getElementById("code").dataset.running`, "false")
}

func itoa(n int) string { return strconv.Itoa(n) }
