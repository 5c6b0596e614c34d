package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/challenges"
)

func getStatus(t *testing.T, c *http.Client, path string) challenges.Status {
	t.Helper()
	// A session's checks are throttled (a burst, then one every 200 ms):
	// a test that polls waits its turn as the page does.
	var resp *http.Response
	for try := 0; ; try++ {
		var err error
		if resp, err = c.Get(shared.http.URL + path); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusTooManyRequests || try == 20 {
			break
		}
		resp.Body.Close()
		time.Sleep(250 * time.Millisecond)
	}
	defer resp.Body.Close()
	var st challenges.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return st
}

// Start refuses without the confirm, wipes the learner's Databases with it,
// prepares the start, and the status then judges the learner's namespace.
func TestChallengeStartWipesAndStatusJudges(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	if resp, err := c.Get(e.http.URL + "/challenges/observed-generation"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the challenge page: %v %v", resp, err)
	}
	extra := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "extra", Namespace: ns}}
	if err := e.client.Create(t.Context(), extra); err != nil {
		t.Fatal(err)
	}

	post := func(form url.Values) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/challenges/observed-generation/start", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(url.Values{}); code != http.StatusBadRequest || !strings.Contains(body, "tick the box") {
		t.Fatalf("Start without the confirm = %d %s, want 400 asking for it", code, body)
	}
	if err := e.client.Get(t.Context(), client.ObjectKeyFromObject(extra), &v1alpha1.Database{}); err != nil {
		t.Fatalf("a refused Start touched the Databases: %v", err)
	}
	// A learner who paused their namespace: Start resumes it, or the
	// finalizers could not run and the wipe would hang. And one whose own
	// code (the skeleton, which finalizes nothing) reconciles it: Start
	// gives the namespace back to oplab's controller, which the challenge
	// is about and whose finalizer the wipe waits for.
	run, err := c.Post(e.http.URL+"/code/run", "application/json", strings.NewReader(`{"source":`+strconv.Quote(starters.Source("skeleton"))+`}`))
	if err != nil {
		t.Fatal(err)
	}
	run.Body.Close()
	if run.StatusCode != http.StatusOK || !e.runner.HandedOver(ns) {
		t.Fatalf("running the skeleton = %d, handed over %v; want 200 and the namespace handed over", run.StatusCode, e.runner.HandedOver(ns))
	}
	// The learner's code may add a finalizer nobody here removes: Start
	// takes it off at once, and says so.
	// The skeleton, just handed the namespace, may write extra meanwhile.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.client.Get(t.Context(), client.ObjectKeyFromObject(extra), extra); err != nil {
			return err
		}
		extra.Finalizers = append(extra.Finalizers, "example.com/never")
		return e.client.Update(t.Context(), extra)
	}); err != nil {
		t.Fatal(err)
	}
	e.runner.PauseNamespace(ns)
	began := time.Now()
	code, body := post(url.Values{"confirm": {"wipe"}})
	t.Logf("Start took %s", time.Since(began).Round(time.Millisecond))
	if code != http.StatusOK {
		t.Fatalf("Start = %d %s", code, body)
	}
	var started struct {
		Started int64
		Message string
	}
	if err := json.Unmarshal([]byte(body), &started); err != nil || started.Started == 0 {
		t.Fatalf("Start answered %s (%v), want the start time", body, err)
	}
	for _, want := range []string{"Your own code was stopped", "Database extra carried finalizer example.com/never", "Start took it off"} {
		if !strings.Contains(started.Message, want) {
			t.Errorf("Start's answer %q does not say %q", started.Message, want)
		}
	}
	if err := e.client.Get(t.Context(), client.ObjectKeyFromObject(extra), &v1alpha1.Database{}); !apierrors.IsNotFound(err) {
		t.Errorf("Database extra after Start: %v, want it wiped", err)
	}
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "orders"}, &v1alpha1.Database{}); err != nil {
		t.Errorf("the prepared Database orders: %v", err)
	}
	if e.runner.NamespacePaused(ns) {
		t.Error("the namespace is still paused after Start")
	}
	if e.runner.HandedOver(ns) {
		t.Error("the learner's code still reconciles the namespace after Start")
	}

	st := getStatus(t, c, fmt.Sprintf("/challenges/observed-generation/status?since=%d", started.Started))
	if st.Of != 3 || st.Done != 0 || len(st.Tasks) != 3 {
		t.Fatalf("status = %+v, want 0 of 3", st)
	}
	if st.Tasks[0].ID != "spec-changed" || st.Tasks[0].State != "todo" || !strings.Contains(st.Tasks[0].Detail, "generation 1") {
		t.Errorf("first task = %+v, want to do at generation 1", st.Tasks[0])
	}
	if st.Tasks[1].State != "locked" {
		t.Errorf("second task = %+v, want locked", st.Tasks[1])
	}
	kubectlScale(t, ns, "orders", 2)
	polltest.Until(t, deadline, "spec-changed done", func() (bool, error) {
		st := getStatus(t, c, fmt.Sprintf("/challenges/observed-generation/status?since=%d", started.Started))
		return st.Tasks[0].State == "done", nil
	})
	if resp, err := c.Get(e.http.URL + "/challenges/observed-generation/status?since=yesterday"); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad since: %v %v, want 400", resp, err)
	}
	if resp, err := c.Get(e.http.URL + "/challenges/no-such/status"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown challenge: %v %v, want 404", resp, err)
	}
}

// The pages in the browser: the list links every challenge and its lesson
// section; on a challenge page, Start and then the learner's own kubectl
// work turn the tasks done by themselves, said in words and aloud, and kept
// in localStorage for the progress reporter.
func TestBrowserChallengePages(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t)
	ctx := e.tab(t)
	set := mustCourse(t).Challenges
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/challenges"), chromedp.WaitVisible(chromedp.CSS("#challenge-list"))); err != nil {
		t.Fatal(err)
	}
	for _, c := range set.Challenges {
		showsNow(t, ctx, "a link to "+c.ID+" and its lesson section", fmt.Sprintf(
			`!!document.querySelector('#challenge-list a[href=%q]') && !!document.querySelector('#challenge-list a[href=%q]')`, c.URL(), c.LessonURL()), "#challenge-list")
	}
	showsNow(t, ctx, "the nav entry, current", `document.querySelector('nav a[href="/challenges"]')?.getAttribute("aria-current") === "page"`, "header")
	checkPage(t, ctx, src, "/challenges")

	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/challenges/interview-walkthrough"), chromedp.WaitVisible(chromedp.CSS("#start-form"))); err != nil {
		t.Fatal(err)
	}
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("challenge").dataset.namespace`))
	if err != nil || ns == "" {
		t.Fatalf("no namespace on the page: %v", err)
	}
	showsNow(t, ctx, "the namespace filled into the hints", fmt.Sprintf(`document.querySelector("#hints-owned-statefulset").textContent.includes("-n %s")`, ns), "#tasks")
	showsNow(t, ctx, "the lab link and the kubectl line", `!!document.querySelector('#work a[href="/lab"]') && document.getElementById("kubectl-line").textContent.includes("kubectl")`, "#work")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#start-form input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`#start-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the Start message", `document.getElementById("start-message").textContent.startsWith("Started")`, "#start")
	showsNow(t, ctx, "every task not done in words", `[...document.querySelectorAll(".task .state-label")].every(e => e.textContent !== "Done")`, "#tasks")

	// The learner creates a Database with their kubectl (here: the API).
	// The first task asks for what they find, so the StatefulSet being
	// there does not make it done (TestBrowserChallengeInput answers it).
	if err := e.client.Create(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, deadline, "StatefulSet shop created", func() (bool, error) {
		err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "shop"}, &appsv1.StatefulSet{})
		return err == nil, client.IgnoreNotFound(err)
	})
	shows(t, ctx, "the first task asking for its answer, its field open", `document.querySelector("#task-owned-statefulset [data-detail]").textContent.includes("Type the reconcile ID") && !document.querySelector("#task-owned-statefulset fieldset").disabled`, "#tasks")
	showsNow(t, ctx, "the first task still to do in words", `document.querySelector("#task-owned-statefulset .state-label").textContent === "To do"`, "#tasks")
	showsNow(t, ctx, "the next input's field disabled while locked", `document.querySelector("#task-ready .state-label").textContent === "Locked" && document.querySelector("#task-ready fieldset").disabled`, "#tasks")
	showsNow(t, ctx, "the delete task not done", `document.querySelector("#task-finalized-delete .state-label").textContent !== "Done"`, "#tasks")
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("oplab.challenges")`))
	if err != nil {
		t.Fatal(err)
	}
	var progress map[string]struct {
		Tasks    map[string]string `json:"tasks"`
		Done, Of int
	}
	if err := json.Unmarshal([]byte(stored), &progress); err != nil {
		t.Fatalf("oplab.challenges = %q: %v", stored, err)
	}
	if p := progress["interview-walkthrough"]; p.Of != 6 || p.Done != 0 {
		t.Errorf("oplab.challenges = %s, want none done of 6", stored)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#task-owned-statefulset details, #task-finalized-delete details").forEach(d => d.open = true)`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "challenge-page")
	checkPage(t, ctx, src, "/challenges/interview-walkthrough")

	// The list shows the progress kept in the browser.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/challenges"), chromedp.WaitVisible(chromedp.CSS("#challenge-list"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the progress on the list", `/0 of 6 done/.test(document.querySelector('[data-progress="interview-walkthrough"]').textContent)`, "#challenge-list")
	screenshot(t, ctx, "challenges-list")

	// At 390 px neither page scrolls sideways (the kubectl line, the hints' commands).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/challenges", "/challenges/interview-walkthrough", "/challenges/owner-gc"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+path), chromedp.WaitReady(chromedp.CSS("main")),
			chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`)); err != nil {
			t.Fatal(err)
		}
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil || wide > 390 {
			what, _ := chromedp.Run(ctx, chromedp.Evaluate[string](overflowing))
			t.Errorf("%s at 390 px is %d px wide (%v): %s", path, wide, err, what)
		}
	}
	screenshot(t, ctx, "challenge-page-390px")
}

// Without JavaScript: Start is a form post that redirects to the page, which
// says what Start did and shows the tasks as they stand.
func TestChallengeStartWithoutScript(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, _ := e.learner(t)
	if resp, err := c.Get(e.http.URL + "/challenges/owner-gc"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the challenge page: %v %v", resp, err)
	}
	resp, err := c.PostForm(e.http.URL+"/challenges/owner-gc/start", url.Values{"confirm": {"wipe"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/challenges/owner-gc?since=") {
		t.Fatalf("Start = %d to %q, want 303 to the page with the start time", resp.StatusCode, loc)
	}
	resp, err = c.Get(e.http.URL + loc)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	for _, want := range []string{
		"Started: your namespace is set up for this challenge.",
		`id="task-adopted" class="task" data-task="adopted" data-state="todo"`,
		`data-task="owner-deleted" data-state="locked"`,
		"The trace shows no adoption of StatefulSet cart yet",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page after Start does not show %q", want)
		}
	}
}
