package e2e

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/cmd/oplab/app"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/instructor"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// rosterPolled is the time of the roster's last poll, which roster.js
// marks as a User Timing entry (nothing on the page changes for a poll
// that found nothing new).
var rosterPolled = browsertest.LastMark("oplab:roster-refresh")

// axeCheck runs axe-core on what ctx shows when it is installed (always
// in CI): the browser tests' pages must pass it too.
func axeCheck(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if _, err := os.Stat(axePath); err != nil && os.Getenv("CI") == "" {
		t.Logf("axe-core not installed: %s not checked", name)
		return
	}
	checkPage(t, ctx, axeSource(t), name)
}

// instructorClient is an HTTP client holding the instructor cookie.
func (e *testEnv) instructorClient(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.http.URL + "/instructor?token=" + url.QueryEscape(testInstructorToken))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("instructor URL = %d", resp.StatusCode)
	}
	return c
}

// firstSingleAnswer is a quiz question with one right answer, and that
// answer's index: what a learner who knows it would click.
func firstSingleAnswer(t *testing.T) (string, int) {
	t.Helper()
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range bank.Questions {
		if !q.Multi() {
			return q.ID, q.Correct()[0]
		}
	}
	t.Fatal("no single-answer question in the quiz")
	return "", 0
}

// A learner with a name does a scenario and answers a quiz question; the
// instructor's roster, redrawing itself, shows all of it.
func TestBrowserRosterShowsALearnersProgress(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	learner := e.tab(t)
	if err := chromedp.Do(learner, chromedp.Navigate(e.http.URL+"/lab?scenario=first-reconcile"), chromedp.WaitVisible(chromedp.CSS("#learner-name-input"))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the stream to open", streamLive)
	ns, err := chromedp.Run(learner, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil || ns == "" {
		t.Fatalf("no namespace on the page: %v", err)
	}
	// This browser kept progress from a course that has since changed: a
	// scenario and a challenge this oplab does not have, and a challenge
	// with more tasks than it has now. The server refuses each; the page
	// leaves them out of its reports rather than report nothing. What it
	// does report (backoff done) is self-reported: the roster shows it
	// apart and counts no challenge the server did not check.
	if err := chromedp.Do(learner, chromedp.Evaluate[chromedp.Void](`localStorage.setItem("oplab.scenarios", JSON.stringify(["retired-scenario"]));
		localStorage.setItem("oplab.challenges", JSON.stringify({"retired-challenge": {done: 1, of: 2}, "drift-repair": {done: 1, of: 99}, "backoff": {done: 1, of: 1}}))`),
		chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#learner-name-input"))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the stream to open again", streamLive)

	// A name with a control character is refused, saying why.
	if err := chromedp.Do(learner, chromedp.SetValue(chromedp.CSS("#learner-name-input"), "Ada\u0007"), chromedp.Click(chromedp.CSS("#learner-name button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the name refused", `document.querySelector("#learner-name [role=status]").textContent.includes("control character")`)
	if err := chromedp.Do(learner, chromedp.SetValue(chromedp.CSS("#learner-name-input"), "  Ada Lovelace "), chromedp.Click(chromedp.CSS("#learner-name button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the name saved", `document.querySelector("#learner-name [role=status]").textContent.includes("Ada Lovelace") && localStorage.getItem("oplab.name") === "Ada Lovelace"`)
	screenshot(t, learner, "60-lab-name-field")
	axeCheck(t, learner, "/lab (name saved)")

	if err := chromedp.Do(learner, chromedp.Click(chromedp.CSS(`.scenario form button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the scenario recorded as done", `JSON.parse(localStorage.getItem("oplab.scenarios") || "[]").includes("first-reconcile")`)

	id, right := firstSingleAnswer(t)
	if err := chromedp.Do(learner, chromedp.Navigate(e.http.URL+"/quiz"), chromedp.WaitVisible(chromedp.CSS("#quiz-form")),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#q-%s input[value="%d"]`, id, right)))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the quiz answer recorded", `(JSON.parse(localStorage.getItem("oplab.quiz") || "{}").best || 0) >= 1`)

	// The learner's pages never carry the instructor token.
	for _, path := range []string{"/lab", "/quiz", "/"} {
		if err := chromedp.Do(learner, chromedp.Navigate(e.http.URL+path)); err != nil {
			t.Fatal(err)
		}
		src, err := chromedp.Run(learner, chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil || strings.Contains(src, testInstructorToken) || !strings.Contains(src, "/static/progress.js") {
			t.Errorf("%s: the page holds the instructor token, or lacks progress.js (%v)", path, err)
		}
	}

	instr := e.tab(t)
	if err := chromedp.Do(instr, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#roster-live"))); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`document.getElementById(%q)`, "learner-"+ns)
	poll(t, instr, "the learner's row with name, Database Ready, scenario and quiz best", fmt.Sprintf(`(() => { const r = %s; if (!r) return false;
		return r.querySelector(".learner-name").textContent.trim() === "Ada Lovelace"
			&& r.textContent.includes(%q)
			&& r.querySelector('.learner-dbs [data-db="first"] .pill.ok')?.textContent === "Ready True"
			&& r.querySelector(".learner-scenarios").textContent.includes("first-reconcile")
			&& !r.textContent.includes("retired-") && !r.textContent.includes("drift-repair")
			&& /^\s*0 of \d+ complete/.test(r.querySelector(".learner-challenges").textContent)
			&& r.querySelector(".learner-challenges .self-reported")?.textContent.includes("self-reported: 1 complete")
			&& parseInt(r.querySelector(".learner-quiz").textContent, 10) >= 1; })()`, row, ns))
	poll(t, instr, "the roster redrawn by its script", rosterPolled+` !== ""`)

	// The challenge's page corrects the count it kept (drift-repair has 3
	// tasks) and the browser says it finished them: the page reports it
	// from then on, self-reported, and the server counts none of it.
	if err := chromedp.Do(learner, chromedp.Evaluate[chromedp.Void](`localStorage.setItem("oplab.challenges", JSON.stringify({...JSON.parse(localStorage.getItem("oplab.challenges")), "drift-repair": {done: 3, of: 3}}));
		document.dispatchEvent(new Event("oplab:progress"))`)); err != nil {
		t.Fatal(err)
	}
	poll(t, instr, "the corrected challenge in the learner's row, self-reported only", fmt.Sprintf(`(() => { const c = %s?.querySelector(".learner-challenges"); return !!c
		&& c.querySelector(".self-reported").textContent.includes("self-reported: 2 complete") && /^\s*0 of \d+ complete/.test(c.textContent); })()`, row))
	if err := chromedp.Do(instr, chromedp.Evaluate[chromedp.Void](row+`.scrollIntoView({block: "center"})`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, instr, "61-instructor-roster")
	axeCheck(t, instr, "/instructor (roster)")
}

// Reset, against the real cluster: the Databases go through their
// finalizer (the snapshot is kept), the namespace is resumed, the learner
// keeps their session and progress.
func TestRosterResetEmptiesALearnersNamespace(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	lc, ns := e.learner(t)
	report, _ := http.NewRequest("POST", e.http.URL+"/lab/progress", strings.NewReader(`{"name":"Grace","quizBest":3}`))
	if resp, err := lc.Do(report); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("progress = %v %v", resp, err)
	}
	ctx := t.Context()
	for _, name := range []string{"one", "two"} {
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
		if err := e.client.Create(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	polltest.Until(t, deadline, "both Databases with their finalizer, in the lab's state", func() (bool, error) {
		dbs, err := e.app.States().Databases(ctx, ns)
		return err == nil && len(dbs) == 2 && len(dbs[0].Finalizers) > 0 && len(dbs[1].Finalizers) > 0, err
	})
	e.runner.PauseNamespace(ns)
	t.Cleanup(func() { e.runner.ResumeNamespace(ns) })

	ic := e.instructorClient(t)
	// Without the cookie: refused, nothing deleted.
	if resp, err := http.Post(e.http.URL+"/instructor/learners/"+ns+"/reset", "application/x-www-form-urlencoded", nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("reset without the instructor cookie = %v %v, want 401", resp, err)
	}
	if resp, err := ic.Post(e.http.URL+"/instructor/learners/lab-nosuchns/reset", "application/x-www-form-urlencoded", nil); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("reset of a namespace no session has = %v %v, want 404", resp, err)
	}
	resp, err := ic.Post(e.http.URL+"/instructor/learners/"+ns+"/reset", "application/x-www-form-urlencoded", nil)
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reset = %v %v, want 303", resp, err)
	}
	// The answer comes at once; the learner's row tells how it ended.
	if state, text := waitReset(t, e, ic, ns); state != "done" || !strings.Contains(text, "2 Databases deleted, final snapshots kept") {
		t.Fatalf("the reset's outcome = %s %q, want done with 2 Databases deleted", state, text)
	}
	var dbs v1alpha1.DatabaseList
	if err := e.client.List(ctx, &dbs, client.InNamespace(ns)); err != nil || len(dbs.Items) != 0 {
		t.Errorf("after the reset the API server lists %d Databases in %s (%v), want 0", len(dbs.Items), ns, err)
	}
	for _, name := range []string{"one", "two"} {
		var cm corev1.ConfigMap
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-final-snapshot"}, &cm); err != nil {
			t.Errorf("the final snapshot of %s: %v (the finalizer should have run)", name, err)
		}
	}
	if e.runner.NamespacePaused(ns) {
		t.Error("the namespace is still paused after the reset")
	}
	list, err := e.app.Sessions().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Namespace == ns && (s.Name != "Grace" || s.Progress.QuizBest != 3) {
			t.Errorf("the reset lost the learner's progress: %+v", s)
		}
	}
}

// resetStatus is what the roster's row of ns says about its latest
// reset: its state (running, done, failed) and its words; "" when the row
// shows none.
func resetStatus(t *testing.T, e *testEnv, ic *http.Client, ns string) (string, string) {
	t.Helper()
	_, body := get(t, ic, e.http.URL+"/instructor/roster")
	re := regexp.MustCompile(`id="reset-status-` + regexp.QuoteMeta(ns) + `" data-reset-state="(\w+)" data-reset-seq="\d+">([^<]*)</p>`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return "", ""
	}
	return m[1], html.UnescapeString(m[2])
}

// waitReset waits until the reset of ns is no longer running and returns
// how it ended.
func waitReset(t *testing.T, e *testEnv, ic *http.Client, ns string) (string, string) {
	t.Helper()
	var state, text string
	polltest.Until(t, deadline, "the reset of "+ns+" to end", func() (bool, error) {
		state, text = resetStatus(t, e, ic, ns)
		return state == "done" || state == "failed", nil
	})
	return state, text
}

// holdFinalizer keeps a Database from going until the test lets it go: a
// reset waiting on it runs as long as the test needs.
const holdFinalizer = "test.oplab.dev/hold"

// release lets Database name go: it takes holdFinalizer off.
//
// A merge patch writes the whole finalizer list, so it carries the
// resourceVersion it was read at: the controller may remove its own
// finalizer meanwhile (the Database is being deleted), and the list read
// before would add it back, which the API server refuses on a deleted
// object. A conflict reads the Database again.
func release(t *testing.T, e *testEnv, ns, name string) {
	t.Helper()
	for try := 0; ; try++ {
		var db v1alpha1.Database
		if err := e.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &db); err != nil {
			if apierrors.IsNotFound(err) {
				return
			}
			t.Fatal(err)
		}
		patch := client.MergeFromWithOptions(db.DeepCopy(), client.MergeFromWithOptimisticLock{})
		db.Finalizers = slices.DeleteFunc(db.Finalizers, func(f string) bool { return f == holdFinalizer })
		err := e.client.Patch(context.Background(), &db, patch)
		if err == nil || apierrors.IsNotFound(err) {
			return
		}
		if !apierrors.IsConflict(err) || try == 10 {
			t.Fatal(err)
		}
	}
}

// A reset answers at once and runs on; while it runs a second Reset of the
// same learner is refused saying why, as a page without script and as JSON
// to the roster's script; the first one's outcome is then reported.
func TestRosterSecondResetIsRefusedWhileTheFirstRuns(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	_, ns := e.learner(t)
	ctx := t.Context()
	for _, name := range []string{"held", "free"} {
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
		if name == "held" {
			db.Finalizers = []string{holdFinalizer}
		}
		if err := e.client.Create(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { release(t, e, ns, "held") })
	polltest.Until(t, deadline, "both Databases with the controller's finalizer, in the lab's state", func() (bool, error) {
		dbs, err := e.app.States().Databases(ctx, ns)
		return err == nil && len(dbs) == 2 && slices.ContainsFunc(dbs, func(d dbview.Database) bool {
			return slices.Contains(d.Finalizers, controller.Finalizer) && d.Name == "held"
		}), err
	})

	ic := e.instructorClient(t)
	reset := e.http.URL + "/instructor/learners/" + ns + "/reset"
	start := time.Now()
	resp, err := ic.Post(reset, "application/x-www-form-urlencoded", nil)
	if err != nil || resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "done=reset-started") {
		t.Fatalf("first reset = %v %v, want 303 to done=reset-started", resp, err)
	}
	resp.Body.Close()
	t.Logf("The first reset answered in %s", time.Since(start))
	polltest.Until(t, deadline, "the row to show the reset running, with held the one left", func() (bool, error) {
		state, text := resetStatus(t, e, ic, ns)
		return state == "running" && strings.Contains(text, "1 of 2 Databases left: held"), fmt.Errorf("row says %s %q", state, text)
	})

	// A second Reset while the first runs: refused, saying why, both ways.
	code, page := postReset(t, ic, reset, "")
	if code != http.StatusConflict || !strings.Contains(page, "Reset refused: a reset of this learner is already running ("+ns) || !strings.Contains(page, `role="alert"`) {
		t.Errorf("second reset without script = %d, want 409 and the page with the reason in an alert:\n%s", code, page)
	}
	code, answer := postReset(t, ic, reset, "application/json")
	if code != http.StatusConflict || !strings.Contains(answer, `"error":"a reset of this learner is already running (`+ns) {
		t.Errorf("second reset from the script = %d %s, want 409 with the reason in JSON", code, answer)
	}
	if state, _ := resetStatus(t, e, ic, ns); state != "running" {
		t.Errorf("after the refusals the reset is %q, want still running", state)
	}

	release(t, e, ns, "held")
	if state, text := waitReset(t, e, ic, ns); state != "done" || !strings.Contains(text, "2 Databases deleted, final snapshots kept") {
		t.Fatalf("the first reset's outcome = %s %q, want done with 2 Databases deleted", state, text)
	}
	// Once it has ended, Reset is accepted again.
	if code, answer := postReset(t, ic, reset, "application/json"); code != http.StatusAccepted || !strings.Contains(answer, "Resetting") {
		t.Errorf("a reset after the first ended = %d %s, want 202", code, answer)
	}
	if state, text := waitReset(t, e, ic, ns); state != "done" || !strings.Contains(text, "no Databases to delete") {
		t.Errorf("the reset of an empty namespace = %s %q", state, text)
	}
}

// postReset posts an empty form to u asking for accept ("" for a browser's
// default), returning the status and the body.
func postReset(t *testing.T, c *http.Client, u, accept string) (int, string) {
	t.Helper()
	resp, body := postAccept(t, c, u, nil, accept)
	return resp.StatusCode, body
}

// The roster, redrawn every 2 s, changes only what changed: unchanged
// cells stay the same DOM nodes, a changed cell takes its new text, a new
// learner's row is added, and the focused button keeps the focus; only
// what matters is announced. Reset shows at once that it runs and how far
// it got, can't be pressed twice, and ends saying what it did.
func TestBrowserRosterResetShowsProgressAndKeepsTheTable(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	_, ns := e.learner(t)
	ctx := t.Context()
	held := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{holdFinalizer}},
		Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
	if err := e.client.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(t, e, ns, "held") })

	instr := e.tab(t)
	if err := chromedp.Do(instr, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#roster-live"))); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`document.getElementById(%q)`, "learner-"+ns)
	button := fmt.Sprintf(`document.getElementById(%q)`, "reset-"+ns)
	status := fmt.Sprintf(`document.getElementById(%q)`, "reset-status-"+ns)
	announced := `document.getElementById("roster-announce").textContent`
	poll(t, instr, "the learner's row with held", row+`?.querySelector('.learner-dbs [data-db="held"]')`)

	// Mark the cells and focus the learner's Reset button; then change the
	// learner's Databases and add a learner.
	if err := chromedp.Do(instr, chromedp.Evaluate[chromedp.Void](`(() => { const r = `+row+`;
		r.querySelector("code").oplabMark = "ns"; r.querySelector(".learner-name").oplabMark = "name";
		r.querySelector(".learner-dbs").oplabMark = "dbs"; r.querySelector(".learner-quiz").oplabMark = "quiz";
		document.querySelector("#roster-table caption").oplabMark = "caption";
		`+button+`.oplabMark = "button"; `+button+`.focus(); })()`)); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(instr, chromedp.Evaluate[int](`document.querySelectorAll("#roster-table tbody tr").length`))
	if err != nil {
		t.Fatal(err)
	}
	second := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}, Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
	if err := e.client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	_, other := e.learner(t)
	poll(t, instr, "the changed Databases cell and the new learner's row", fmt.Sprintf(`%s.querySelector('.learner-dbs [data-db="second"]')
		&& document.getElementById(%q) && document.querySelectorAll("#roster-table tbody tr").length === %d`, row, "learner-"+other, rows+1))
	stamp, err := chromedp.Run(instr, chromedp.Evaluate[string](rosterPolled))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, instr, "one more redraw", fmt.Sprintf(`%s !== %q`, rosterPolled, stamp))
	showsNow(t, instr, "the unchanged cells the same nodes, the changed one updated in place, the focus kept, nothing announced", `(() => { const r = `+row+`;
		return r.querySelector("code").oplabMark === "ns" && r.querySelector(".learner-name").oplabMark === "name"
			&& r.querySelector(".learner-quiz").oplabMark === "quiz" && r.querySelector(".learner-dbs").oplabMark === "dbs"
			&& document.querySelector("#roster-table caption").oplabMark === "caption"
			&& r.querySelector(".learner-dbs").textContent.includes("second")
			&& document.activeElement.oplabMark === "button" && `+announced+` === ""; })()`, "#roster-live")

	// Reset: at once it says it runs and how far it got, in the row and
	// once in the live region; the button stays focused but won't go twice.
	if err := chromedp.Do(instr, chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`), pressKey(chromedp.CSS("#reset-"+ns))); err != nil {
		t.Fatal(err)
	}
	poll(t, instr, "the reset announced and running", announced+`.includes("Resetting…") && `+button+`.getAttribute("aria-disabled") === "true"`)
	poll(t, instr, "the row saying held is the one left", status+`?.dataset.resetState === "running" && `+status+`.textContent.includes("1 of 2 Databases left: held")
		&& `+button+`.textContent === "Resetting…"`)
	showsNow(t, instr, "the focus still on the same Reset button", `document.activeElement.oplabMark === "button"`, "#roster-live")
	if err := chromedp.Do(instr, chromedp.Evaluate[chromedp.Void](row+`.scrollIntoView({block: "center"})`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, instr, "65-roster-resetting")
	poll(t, instr, "the Reset button and the reset's status whole in the row's actions cell", `(c => c.scrollWidth <= c.clientWidth + 1
		&& c.querySelector(".reset-status").getBoundingClientRect().right <= c.getBoundingClientRect().right + 1)(`+row+`.querySelector(".learner-reset"))`)
	if err := chromedp.Do(instr, pressKey(chromedp.CSS("#reset-"+ns))); err != nil {
		t.Fatal(err)
	}
	poll(t, instr, "a second press refused, saying why", announced+`.includes("a reset is already running")`)
	axeCheck(t, instr, "/instructor (roster, reset running)")

	release(t, e, ns, "held")
	poll(t, instr, "the reset's outcome in the row and announced", status+`?.dataset.resetState === "done" && `+status+`.textContent.includes("2 Databases deleted, final snapshots kept")
		&& `+announced+`.includes("Reset done at") && `+button+`.textContent === "Reset" && !`+button+`.hasAttribute("aria-disabled")
		&& `+row+`.querySelector(".learner-dbs").textContent.trim() === "none"`)
	showsNow(t, instr, "the focus kept through the reset, the cells too", `document.activeElement.oplabMark === "button" && `+row+`.querySelector("code").oplabMark === "ns"`, "#roster-live")
	if err := chromedp.Do(instr, chromedp.Evaluate[chromedp.Void](row+`.scrollIntoView({block: "center"})`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, instr, "66-roster-reset-done")
	axeCheck(t, instr, "/instructor (roster, reset done)")

	// Two quiet redraws (only "last active" moves on): no element is
	// added or removed, only text changes.
	if err := chromedp.Do(instr, chromedp.Evaluate[chromedp.Void](`(() => { const m = window.oplabMutations = {added: 0, removed: 0, text: 0, cycles: 0};
		const box = document.getElementById("roster-live");
		new PerformanceObserver((list) => { m.cycles += list.getEntriesByName("oplab:roster-refresh").length; }).observe({type: "mark"});
		new MutationObserver((list) => { for (const r of list) {
			if (r.type === "characterData") m.text++;
			for (const n of r.addedNodes) if (n.nodeType === Node.ELEMENT_NODE) m.added++;
			for (const n of r.removedNodes) if (n.nodeType === Node.ELEMENT_NODE) m.removed++; } })
			.observe(box, {subtree: true, childList: true, characterData: true}); })()`)); err != nil {
		t.Fatal(err)
	}
	poll(t, instr, "two redraws observed", `window.oplabMutations.cycles >= 2`)
	counts, err := chromedp.Run(instr, chromedp.Evaluate[map[string]int](`window.oplabMutations`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Two quiet redraws of a %d-row roster changed %d text nodes and added %d, removed %d elements", rows+1, counts["text"], counts["added"], counts["removed"])
	if counts["added"] != 0 || counts["removed"] != 0 {
		t.Errorf("quiet redraws added %d and removed %d elements, want none", counts["added"], counts["removed"])
	}
}

// Without script Reset is a form post that comes back to the page saying
// it started; a second press while it runs comes back with the reason in
// an alert; a reload shows how it ended.
func TestBrowserRosterResetWithoutJavaScript(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	_, ns := e.learner(t)
	held := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{holdFinalizer}},
		Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
	if err := e.client.Create(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(t, e, ns, "held") })
	polltest.Until(t, deadline, "held with the controller's finalizer, in the lab's state", func() (bool, error) {
		dbs, err := e.app.States().Databases(t.Context(), ns)
		return err == nil && len(dbs) == 1 && slices.Contains(dbs[0].Finalizers, controller.Finalizer), err
	})

	instr := e.tab(t)
	status := fmt.Sprintf(`document.getElementById(%q)`, "reset-status-"+ns)
	if err := chromedp.Do(instr, noScript(), chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitReady(chromedp.CSS("#reset-"+ns)), pressKey(chromedp.CSS("#reset-"+ns)), chromedp.WaitVisible(chromedp.CSS(".flash-ok"))); err != nil {
		t.Fatal(err)
	}
	shows(t, instr, "the reset started, and the row saying it runs", `document.querySelector(".flash-ok").textContent.includes("Reset started")
		&& `+status+`?.textContent.includes("Resetting…") && document.getElementById("reset-`+ns+`").getAttribute("aria-disabled") === "true"`, "main")
	if err := chromedp.Do(instr, pressKey(chromedp.CSS("#reset-"+ns)), chromedp.WaitVisible(chromedp.CSS("#roster-refusal"))); err != nil {
		t.Fatal(err)
	}
	shows(t, instr, "the second press refused with the reason, in an alert", `document.getElementById("roster-refusal").getAttribute("role") === "alert"
		&& document.getElementById("roster-refusal").textContent.includes("Reset refused: a reset of this learner is already running (`+ns+`")`, "main")
	screenshot(t, instr, "67-roster-reset-refused-without-js")
	// axe runs as a script: let scripts run again for it, on this page.
	if err := chromedp.Do(instr, cdpCall(emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false})); err != nil {
		t.Fatal(err)
	}
	axeCheck(t, instr, "/instructor (reset refused, no script)")

	release(t, e, ns, "held")
	ic := e.instructorClient(t)
	waitReset(t, e, ic, ns)
	if err := chromedp.Do(instr, chromedp.Navigate(e.http.URL+"/instructor"), chromedp.WaitReady(chromedp.CSS("#reset-status-"+ns)),
		chromedp.ScrollIntoView(chromedp.CSS("#reset-status-"+ns)), chromedp.WaitVisible(chromedp.CSS("#reset-status-"+ns))); err != nil {
		t.Fatal(err)
	}
	shows(t, instr, "the outcome after a reload", status+`.dataset.resetState === "done" && `+status+`.textContent.includes("1 Database deleted, final snapshots kept")`, "main")
}

// joinServer is a second oplab on the shared cluster with a join code and
// its own namespace prefix, so it touches none of the shared server's
// namespaces.
func joinServer(t *testing.T, e *testEnv, code string, b instructor.Broadcaster) *httptest.Server {
	t.Helper()
	return e.class(t, func(o *app.Options) { o.NamespacePrefix, o.JoinCode, o.Broadcaster = "joinlab-", code, b }).http
}

func joinNamespaces(t *testing.T, e *testEnv) []string {
	t.Helper()
	var list corev1.NamespaceList
	if err := e.client.List(context.Background(), &list, client.MatchingLabels{labns.InstanceLabel: "joinlab"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil {
			names = append(names, ns.Name)
		}
	}
	return names
}

func TestBrowserJoinCode(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	sent := &sentHrefs{}
	h := joinServer(t, e, "blue-otter", sent)
	t.Cleanup(func() {
		for _, ns := range joinNamespaces(t, e) {
			_ = e.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	})
	resp, err := http.Get(h.URL + "/lab?scenario=finalizer")
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET /lab without the code = %v %v, want 403", resp, err)
	}
	resp.Body.Close()
	if ns := joinNamespaces(t, e); len(ns) != 0 {
		t.Fatalf("namespaces made without the join code: %v", ns)
	}

	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(h.URL+"/lab?scenario=finalizer"), chromedp.WaitVisible(chromedp.CSS(`input[name="join"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "62-join-form")
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`input[name="join"]`), "red-otter"), chromedp.SetValue(chromedp.CSS(`input[name="name"]`), "Alan"),
		chromedp.Click(chromedp.CSS(`form.join button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#join-error"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the wrong code named, with the form again and the name kept", `document.getElementById("join-error").textContent.includes("join code is not this class")
		&& document.querySelector('input[name="join"]').getAttribute("aria-invalid") === "true" && document.querySelector('input[name="name"]').value === "Alan"`, "main")
	screenshot(t, ctx, "63-join-wrong-code")
	axeCheck(t, ctx, "/lab (join form, wrong code)")
	if ns := joinNamespaces(t, e); len(ns) != 0 {
		t.Fatalf("namespaces made after a wrong join code: %v", ns)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`input[name="join"]`), "blue-otter"), chromedp.Click(chromedp.CSS(`form.join button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#lab .scenario"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the lab of the scenario asked for, and the name kept for reports", `location.search === "?scenario=finalizer" && localStorage.getItem("oplab.name") === "Alan"`, "main")
	if ns := joinNamespaces(t, e); len(ns) != 1 {
		t.Errorf("namespaces after joining: %v, want one", ns)
	}
	// A browser that lost the name (storage cleared, or a join without
	// script) gets it back from the session and shows it in the lab.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`localStorage.removeItem("oplab.name")`), chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#learner-name-input"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the name the session holds, back in the field", `document.getElementById("learner-name-input").value === "Alan" && localStorage.getItem("oplab.name") === "Alan"`, "#learner-name")
	// A link with the code works too, in a browser of its own: it asks
	// the name (the code is kept), and then the lab is made.
	other := e.tab(t)
	if err := chromedp.Do(other, chromedp.Navigate(h.URL+"/lab?join=blue-otter"), chromedp.WaitVisible(chromedp.CSS(`form.join input[name="name"]`))); err != nil {
		t.Fatal(err)
	}
	if ns := joinNamespaces(t, e); len(ns) != 1 {
		t.Errorf("namespaces after a join link, before the name: %v, want still one", ns)
	}
	if err := chromedp.Do(other, chromedp.SendKeys(`form.join input[name="name"]`, "Grace"), chromedp.Submit(`form.join input[name="name"]`),
		chromedp.WaitVisible(chromedp.CSS("#lab"))); err != nil {
		t.Fatal(err)
	}
	if ns := joinNamespaces(t, e); len(ns) != 2 {
		t.Errorf("namespaces after the join link: %v, want two", ns)
	}

	// The instructor of this class sees the code, both learners, and can
	// send everyone to a scenario.
	instr := e.tab(t)
	if err := chromedp.Do(instr, chromedp.Navigate(h.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#send-href"))); err != nil {
		t.Fatal(err)
	}
	shows(t, instr, "the join code, and the named learner", `document.getElementById("join-code").textContent === "blue-otter"
		&& [...document.querySelectorAll("#roster-table .learner-name")].some(th => th.textContent.trim() === "Alan")
		&& document.querySelectorAll("#roster-table tbody tr").length === 2`, "main")
	screenshot(t, instr, "64-instructor-join-code-and-send")
	if err := chromedp.Do(instr, chromedp.SetValue(chromedp.CSS("#send-href"), "/lab?scenario=finalizer"),
		chromedp.Click(chromedp.CSS(`form.send-everyone button`)), chromedp.WaitVisible(chromedp.CSS(".flash-ok"))); err != nil {
		t.Fatal(err)
	}
	if got := sent.list(); len(got) != 1 || got[0] != "/lab?scenario=finalizer" {
		t.Errorf("the broadcaster was asked for %v, want [/lab?scenario=finalizer]", got)
	}
}

// sentHrefs records what the roster asked the classroom to send.
type sentHrefs struct {
	mu    sync.Mutex
	hrefs []string
}

func (s *sentHrefs) SendEveryone(href string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hrefs = append(s.hrefs, href)
	return nil
}

func (s *sentHrefs) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hrefs...)
}

// scenariosDone is a JavaScript expression: the scenarios this browser
// recorded as seen through.
const scenariosDone = `JSON.parse(localStorage.getItem("oplab.scenarios") || "[]")`

// A scenario whose point is a step counts only once that step arrived:
// the finalizer's not when doomed is Ready, but when its finalizer let it
// go; the non-idempotent create when a create met AlreadyExists.
func TestBrowserScenarioCountsWhenItsPointArrives(t *testing.T) {
	t.Parallel()
	ctx, ns := startScenario(t, "finalizer", "doomed is Ready. Now delete it.")
	shows(t, ctx, "doomed Ready", cardOf("doomed")+`?.querySelector(".db-head .pill.ok")?.textContent === "Ready True"`, "#db-doomed")
	// Any message that would wrongly count has arrived once doomed's trace
	// is at rest and the page holds its newest step.
	e := needEnv(t)
	last := e.waitTrace(t, "doomed's trace at rest", ns, "doomed", atRest)
	shows(t, ctx, "doomed's newest step on the page", fmt.Sprintf(`%s >= %d`, newestSeq, last[len(last)-1].Seq), "#rows")
	showsNow(t, ctx, "the finalizer scenario not yet done", `!`+scenariosDone+`.includes("finalizer")`, "#rows")
	// As the scenario says: live, the clean-up is over before a card is
	// drawn Terminating; in slow motion the card goes through it at the
	// timeline's pace. Once gone, it no longer says what holds it.
	speed := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById("play-speed"); s.value = %q; s.dispatchEvent(new Event("change")) })()`, v))
	}
	if err := chromedp.Do(ctx, speed("0.25"), chromedp.Click(chromedp.CSS(`#db-doomed form[action$="/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "doomed drawn Terminating, held by its finalizer, in slow motion", cardOf("doomed")+`?.querySelector(".terminating")?.checkVisibility() && !`+cardOf("doomed")+`.classList.contains("gone")`, "#db-doomed")
	if err := chromedp.Do(ctx, speed("1")); err != nil {
		t.Fatal(err)
	}
	// A gone card stays 4 s, dashed, before it is removed.
	shows(t, ctx, "doomed's card drawn gone", cardOf("doomed")+`?.classList.contains("gone")`, "#db-doomed")
	showsNow(t, ctx, "the gone card no longer saying what holds it", `!`+cardOf("doomed")+`?.querySelector(".terminating")?.checkVisibility()`, "#db-doomed")
	shows(t, ctx, "the finalizer scenario done after the finalizer removed itself", scenariosDone+`.includes("finalizer") && `+inOrder(phasesOf("doomed"), "removed"), "#rows")

	ctx, _ = startScenario(t, "non-idempotent-create", "Created Database twice")
	shows(t, ctx, "the non-idempotent create done once a create met AlreadyExists", scenariosDone+`.includes("non-idempotent-create") && `+
		rowsOf("twice")+`.some(r => [...r.querySelectorAll(".step.action")].some(s => /create .*→ AlreadyExists/.test(s.textContent)))`, "#rows")
	// Each browser context has its own storage: the first scenario is not here.
	showsNow(t, ctx, "only this browser's scenarios", `!`+scenariosDone+`.includes("finalizer")`, "#rows")
}

// pressKey presses the button sel with the keyboard, as an instructor
// tabbing through the roster would: focus (which scrolls it into view),
// then Enter. Not a click: a row the roster's content-visibility kept off
// screen is drawn a frame after it is scrolled to, and a click in between
// lands on the row's placeholder, not the button (and without script no
// frame can be awaited). A key goes to the focused button whatever is drawn.
func pressKey[S chromedp.Selectable](sel S) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.ScrollIntoView(sel), chromedp.Focus(sel), chromedp.KeyEvent(kb.Enter))
}
