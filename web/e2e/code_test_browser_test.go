package e2e

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// testVerdict is GET /code/test's answer, as a script reads it.
type testVerdict struct {
	State     string `json:"state"`
	Passed    bool   `json:"passed"`
	Schedules int    `json:"schedules"`
	Findings  []struct {
		Pattern      string `json:"pattern"`
		Perturbation string `json:"perturbation"`
		Step         int    `json:"step"`
		Message      string `json:"message"`
		Lesson       string `json:"lesson"`
		Schedule     int    `json:"schedule"`
	} `json:"findings"`
	Error string `json:"error"`
}

// waitVerdict polls GET /code/test with Accept: application/json until
// the test is over.
func waitVerdict(t *testing.T, e *testEnv, c *http.Client) testVerdict {
	t.Helper()
	var v testVerdict
	polltest.Until(t, deadline, "the test's verdict", func() (bool, error) {
		req, err := http.NewRequest(http.MethodGet, e.http.URL+"/code/test", nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Accept", "application/json")
		resp, body := do(t, c, req)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /code/test = %d %s", resp.StatusCode, body)
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("GET /code/test: %v in %s", err, body)
		}
		return v.State != "running", nil
	})
	return v
}

// The interface for scripts: POST /code/test starts a test (202), a
// second while it runs is refused with the reason (409), code that does
// not compile answers as Run does, and GET /code/test gives the verdict
// with each finding's pattern, perturbation, step and message.
func TestTestMyCodeForScripts(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	post := func(src string) (int, string) {
		resp, body := do(t, c, jsonPost(t, e.http.URL+"/code/test", map[string]string{"source": src}))
		return resp.StatusCode, body
	}
	if code, body := post("package controller\n\nfunc broken( {\n"); code != http.StatusOK || !strings.Contains(body, `"kind":"compile"`) {
		t.Errorf("POST /code/test with code that does not compile = %d %s; want 200 and the compile error, as Run answers", code, body)
	}
	if code, body := post(starters.Source("pitfall-status")); code != http.StatusAccepted || !strings.Contains(body, `"state":"running"`) {
		t.Fatalf("POST /code/test = %d %s; want 202, running", code, body)
	}
	if code, body := post(starters.Source("oplab")); code != http.StatusConflict || !strings.Contains(body, "running already") {
		t.Errorf("a second POST /code/test while one runs = %d %s; want 409 saying why", code, body)
	}
	v := waitVerdict(t, e, c)
	if v.State != "done" || v.Passed || len(v.Findings) == 0 {
		t.Fatalf("the status-thrash starter's verdict: %+v; want done, failed, with findings", v)
	}
	f := v.Findings[0]
	if f.Pattern != "budget" || f.Perturbation == "" || f.Step <= 0 || !strings.Contains(f.Message, "a reconcile still made") ||
		!strings.Contains(f.Lesson, "#status-thrash") {
		t.Errorf("the status-thrash starter's finding: %+v; want the budget it breaks, with its step and lesson", f)
	}
	// The instructor's results carry the verdict: an objective grade for
	// "write a reconciler".
	resp, csvText := get(t, e.instructorClient(t), e.http.URL+"/instructor/results.csv")
	rows, err := csv.NewReader(strings.NewReader(csvText)).ReadAll()
	if resp.StatusCode != http.StatusOK || err != nil || len(rows) < 2 {
		t.Fatalf("results.csv = %d, %v, %d rows", resp.StatusCode, err, len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	found := false
	for _, row := range rows[1:] {
		if row[col["namespace"]] == ns {
			found = true
			if row[col["code test"]] != "failed" || !strings.Contains(row[col["code test patterns"]], "budget") || row[col["code test schedules"]] != "1" {
				t.Errorf("the results' code test for %s: %q, %q, %q schedules; want failed, budget, 1", ns,
					row[col["code test"]], row[col["code test patterns"]], row[col["code test schedules"]])
			}
		}
	}
	if !found {
		t.Errorf("no row for %s in results.csv", ns)
	}
}

// A learner presses Test my code on the missing-finalizer starter, reads
// the finding, opens its schedule in the lab and finds the row where it
// went wrong marked and in view; both pages pass axe.
func TestBrowserTestMyCode(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")),
		chromedp.SetValue(chromedp.CSS("#starter"), "pitfall-finalizer"), chromedp.Click(chromedp.CSS("#load")))
	browsertest.Eventually(t, ctx, `String(document.getElementById("source").value.includes("func (r *DatabaseReconciler) finalize("))`, "true")
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS("#test")))
	browsertest.Eventually(t, ctx, `String(/Testing|failed|passed/.test(document.getElementById("code-test-result").textContent))`, "true")
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(browsertest.Eval[string](t, ctx, `document.getElementById("code-test-result").textContent`), "failed") {
		if time.Now().After(deadline) {
			failedShot(t, ctx)
			t.Fatal("no verdict on the page after 3 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	text := browsertest.Eval[string](t, ctx, `document.getElementById("code-test-result").textContent`)
	for _, want := range []string{"convergence", "the final snapshot db-final-snapshot was never written", "Read why in the lesson", "Open schedule 0 in the lab"} {
		if !strings.Contains(text, want) {
			t.Errorf("the verdict reads %q; want %q in it", text, want)
		}
	}
	screenshot(t, ctx, "code-test-verdict")
	axeCheck(t, ctx, "/code with a verdict")

	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`form[action="/lab/replay/test/0"] button`)), chromedp.WaitVisible(chromedp.CSS("li.row.tester.marked")))
	inView := browsertest.Eval[bool](t, ctx, `(() => {
		const r = document.querySelector("li.row.tester.marked").getBoundingClientRect();
		return r.top >= 0 && r.bottom <= innerHeight;
	})()`)
	if !inView {
		failedShot(t, ctx)
		t.Error("the row where the schedule went wrong is not in view")
	}
	marked := browsertest.Eval[string](t, ctx, `document.querySelector("li.row.tester.marked").textContent`)
	if !strings.Contains(marked, "went wrong here") || !strings.Contains(marked, "never written") {
		t.Errorf("the marked row reads %q", marked)
	}
	screenshot(t, ctx, "code-test-replay")
	axeCheck(t, ctx, "a test's replay")
}
