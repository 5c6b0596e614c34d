package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// labRowID opens the lab in ctx's tab and reads, as a learner would, the
// reconcile ID ("#" and eight characters) of the first timeline row whose
// text matches pattern (a JavaScript regular expression).
func labRowID(t *testing.T, ctx context.Context, base, what, pattern string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lab"), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
		t.Fatal(err)
	}
	find := fmt.Sprintf(`[...document.querySelectorAll("li.row")].find(r => %s.test(r.textContent))?.querySelector(".rid")?.textContent.trim() || ""`, pattern)
	shows(t, ctx, "the lab's row of "+what, find+` !== ""`, "main")
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](find))
	if err != nil || !strings.HasPrefix(id, "#") {
		t.Fatalf("the row of %s shows reconcile ID %q (%v)", what, id, err)
	}
	return id
}

// regionShot saves the element sel as NAME.png in the artifacts dir: the
// tasks at 390 px are too tall a page to read whole.
func regionShot(t *testing.T, ctx context.Context, name, sel string) {
	t.Helper()
	browsertest.Capture(t, ctx, filepath.Join(artifactsDir(), name+".png"), chromedp.Screenshot(chromedp.CSS(sel)))
}

// The interview walk-through's input tasks in Chromium: nothing turns done
// by itself; each field says what shape it takes; an empty answer, a wrong
// one (refused with what to look at, tied to the field) and then the right
// one, read off the lab's timeline or the Database's status, as a learner
// finds them.
func TestBrowserChallengeInput(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(e.http.URL+"/challenges/interview-walkthrough"), chromedp.WaitVisible(chromedp.CSS("#start-form"))); err != nil {
		t.Fatal(err)
	}
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("challenge").dataset.namespace`))
	if err != nil || ns == "" {
		t.Fatalf("no namespace on the page: %v", err)
	}
	// Progress saved when connection-info was a task that turned done by
	// itself: it counts for nothing now.
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem("oplab.challenges", JSON.stringify({"interview-walkthrough": {tasks: {"connection-info": "done", "owned-statefulset": "todo"}, done: 1, of: 5}}))`),
		chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#start-form"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "a task the challenge no longer has dropped from the saved progress", `(() => {
		const p = JSON.parse(localStorage.getItem("oplab.challenges"))["interview-walkthrough"];
		return p.of === 6 && p.done === 0 && !("connection-info" in p.tasks);
	})()`)
	showsNow(t, ctx, "a labelled field and a Submit for each input task", `["owned-statefulset", "ready", "endpoint", "secret", "snapshot-kept"].every(id => {
		const f = document.getElementById("answer-" + id);
		return f && document.querySelector('label[for="answer-' + id + '"]')?.textContent.trim() !== "" && f.closest("form").querySelector("button[type=submit]").textContent === "Submit";
	})`, "#tasks")
	showsNow(t, ctx, "no field for the delete, a check", `!document.getElementById("answer-finalized-delete")`, "#tasks")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#start-form input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`#start-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the Start message", `document.getElementById("start-message").textContent.startsWith("Started")`, "#start")
	shows(t, ctx, "the first field open, the next disabled while locked", `!document.querySelector("#task-owned-statefulset fieldset").disabled && document.querySelector("#task-ready fieldset").disabled`, "#tasks")

	submit := func(task, value string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			// Typed as the learner types; an empty field is submitted as it is.
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById("answer-%s").value = %q`, task, value)),
			chromedp.Click(chromedp.CSS("#task-"+task+" .input-form button")),
		); err != nil {
			t.Fatal(err)
		}
	}
	// feedback is the text of the element the field names as its
	// description after the shape: what the last answer was told.
	feedback := func(task string) string {
		return fmt.Sprintf(`document.getElementById(document.getElementById("answer-%s").getAttribute("aria-describedby").split(" ")[1]).textContent`, task)
	}
	refused := func(task, value, says string) {
		t.Helper()
		submit(task, value)
		shows(t, ctx, fmt.Sprintf("%q refused for %s, saying %q", value, task, says), feedback(task)+fmt.Sprintf(`.includes(%q) && document.getElementById("answer-%s").getAttribute("aria-invalid") === "true"`, says, task), "#task-"+task)
		showsNow(t, ctx, task+" still to do", fmt.Sprintf(`document.querySelector("#task-%s .state-label").textContent === "To do"`, task), "#task-"+task)
	}
	accepted := func(task, value, says string) {
		t.Helper()
		submit(task, value)
		shows(t, ctx, fmt.Sprintf("%q accepted for %s, saying %q", value, task, says), fmt.Sprintf(`document.querySelector("#task-%s .state-label").textContent === "Done" && document.querySelector("#task-%s [data-detail]").textContent.includes(%q)`, task, task, says), "#task-"+task)
		showsNow(t, ctx, task+"'s field disabled once done, no longer marked invalid", fmt.Sprintf(`document.querySelector("#task-%s fieldset").disabled && !document.getElementById("answer-%s").hasAttribute("aria-invalid")`, task, task), "#task-"+task)
	}

	refused("owned-statefulset", "", "the reconcile ID is empty")
	refused("owned-statefulset", "shop", `"shop" is not a reconcile ID`)

	// The learner creates a Database with their kubectl (here: the API).
	if err := e.client.Create(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	// They find the rows in the lab, then come back: the page remembers
	// the Start and what is done (localStorage).
	creator := labRowID(t, ctx, e.http.URL, "the StatefulSet's create", `/create StatefulSet shop/`)
	readyRow := labRowID(t, ctx, e.http.URL, "Ready turning True", `/conditions\[Ready\] \S+→True/`)
	if readyRow == creator {
		t.Fatalf("one reconcile, %s, both created the StatefulSet and saw it ready", creator)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/challenges/interview-walkthrough"), chromedp.WaitVisible(chromedp.CSS("#tasks"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the first task still asking for its answer after the StatefulSet exists", `document.querySelector("#task-owned-statefulset [data-detail]").textContent.includes("Type the reconcile ID")`, "#tasks")
	showsNow(t, ctx, "nothing done by itself", `document.getElementById("done-count").textContent === "0"`, "#tasks")

	refused("owned-statefulset", readyRow, "did not create the StatefulSet")
	screenshot(t, ctx, "challenge-input-wrong")
	regionShot(t, ctx, "challenge-input-wrong-task", "#task-owned-statefulset")
	checkPage(t, ctx, src, "/challenges/interview-walkthrough (a wrong answer)")
	accepted("owned-statefulset", creator, "created StatefulSet shop")
	shows(t, ctx, "it said aloud", `document.getElementById("announce").textContent.includes("Done:")`, "#tasks")

	shows(t, ctx, "the Ready field open", `!document.querySelector("#task-ready fieldset").disabled`, "#tasks")
	refused("ready", creator, "did not turn Ready True")
	accepted("ready", strings.TrimPrefix(readyRow, "#"), "wrote Ready")

	var db v1alpha1.Database
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "shop"}, &db); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the endpoint field open", `!document.querySelector("#task-endpoint fieldset").disabled`, "#tasks")
	refused("endpoint", "shop.default.svc:5432", "Read status.endpoint of your Database")
	accepted("endpoint", db.Status.Endpoint, "publishes "+db.Status.Endpoint)
	shows(t, ctx, "the Secret field open", `!document.querySelector("#task-secret fieldset").disabled`, "#tasks")
	refused("secret", "shop-password", "names \"shop-password\"")
	accepted("secret", db.Status.SecretName, "names Secret "+db.Status.SecretName)

	showsNow(t, ctx, "4 of 6 done", `document.getElementById("done-count").textContent === "4"`, "#tasks")
	showsNow(t, ctx, "the answers' verdicts kept with the progress", `(() => {
		const p = JSON.parse(localStorage.getItem("oplab.challenges"))["interview-walkthrough"];
		return p.done === 4 && p.of === 6 && ["owned-statefulset", "ready", "endpoint", "secret"].every(id => p.tasks[id] === "done" && p.details[id].startsWith("Right"));
	})()`)
	// A reload shows the kept verdicts under the done tasks.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#tasks"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the verdicts after a reload", `["owned-statefulset", "ready", "endpoint", "secret"].every(id => document.querySelector("#task-" + id + " [data-detail]").textContent.startsWith("Right"))`, "#tasks")
	screenshot(t, ctx, "challenge-input-done")
	checkPage(t, ctx, src, "/challenges/interview-walkthrough (four answers right)")

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#tasks"))); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the verdicts at 390 px", `document.querySelector("#task-secret [data-detail]").textContent.startsWith("Right")`, "#tasks")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("task-finalized-delete").scrollIntoView()`)); err != nil {
		t.Fatal(err)
	}
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil || wide > 390 {
		what, _ := chromedp.Run(ctx, chromedp.Evaluate[string](overflowing))
		t.Errorf("the challenge page at 390 px is %d px wide (%v): %s", wide, err, what)
	}
	screenshot(t, ctx, "challenge-input-390px")
	regionShot(t, ctx, "challenge-input-390px-done", "#task-secret")
	regionShot(t, ctx, "challenge-input-390px-locked", "#task-snapshot-kept")
}

// Without JavaScript an input task's answer is a form post: refused, the
// page shows why under the field, marked invalid; right, the redirect
// lists the task as done and shows the verdict once. Bad answers name what
// was wrong, and nothing is judged before Start.
func TestChallengeInputWithoutScript(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	if resp, err := c.Get(e.http.URL + "/challenges/interview-walkthrough"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the challenge page: %v %v", resp, err)
	}
	post := func(path string, form url.Values, accept string) (*http.Response, string) {
		t.Helper()
		return postAccept(t, c, e.http.URL+path, form, accept)
	}
	page := func(loc string) string {
		t.Helper()
		_, b := get(t, c, e.http.URL+loc)
		return b
	}
	const answer = "/challenges/interview-walkthrough/answer"

	if resp, body := post(answer, url.Values{"task": {"endpoint"}, "answer": {"shop.x.svc:5432"}}, "application/json"); resp.StatusCode != http.StatusConflict ||
		!strings.Contains(body, "Not graded yet: Waits until task 2 is done.") {
		t.Errorf("an answer while locked = %d %s, want 409 saying what it waits for", resp.StatusCode, body)
	}
	if resp, body := post(answer, url.Values{"task": {"owned-statefulset"}, "answer": {"#3f9a1c2e"}}, "application/json"); resp.StatusCode != http.StatusConflict ||
		!strings.Contains(body, "Not checked: press Start first") {
		t.Errorf("an answer before Start = %d %s, want 409 asking for Start", resp.StatusCode, body)
	}

	resp, _ := post("/challenges/interview-walkthrough/start", url.Values{"confirm": {"wipe"}}, "")
	since := strings.TrimPrefix(strings.TrimSuffix(resp.Header.Get("Location"), "#start"), "/challenges/interview-walkthrough?since=")
	if resp.StatusCode != http.StatusSeeOther || since == "" {
		t.Fatalf("Start = %d to %q, want 303 with since", resp.StatusCode, resp.Header.Get("Location"))
	}
	if err := e.client.Create(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	var db v1alpha1.Database
	polltest.Until(t, deadline, "shop's endpoint in status", func() (bool, error) {
		err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "shop"}, &db)
		return err == nil && db.Status.Endpoint != "", err
	})

	for _, tc := range []struct {
		value, want string
	}{
		{"", "Not checked: the endpoint is empty: type a host:port"},
		{"   ", "Not checked: the endpoint is empty"},
		{strings.Repeat("a", 250) + ":5432", "Not checked: the endpoint is 255 characters long, more than the 253 it can be"},
		{"shop at port 5432", `Not checked: \"shop at port 5432\" is not a host:port`},
	} {
		resp, body := post(answer, url.Values{"task": {"endpoint"}, "answer": {tc.value}, "since": {since}, "done": {"owned-statefulset,ready"}}, "application/json")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("endpoint %q = %d %s, want 400 saying %q", tc.value, resp.StatusCode, body, tc.want)
		}
	}

	const before = "owned-statefulset,ready"
	resp, _ = post(answer, url.Values{"task": {"endpoint"}, "answer": {"shop.elsewhere.svc:5432"}, "since": {since}, "done": {before}}, "")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || loc != "/challenges/interview-walkthrough?done=owned-statefulset%2Cready&since="+since+"#task-endpoint" {
		t.Fatalf("a wrong answer = %d to %q, want 303 back to the task, done list unchanged", resp.StatusCode, loc)
	}
	body := page(loc)
	for _, want := range []string{`aria-describedby="shape-endpoint feedback-endpoint" aria-invalid="true"`, `id="feedback-endpoint" role="status" data-feedback>No Database in ` + ns + ` publishes &#34;shop.elsewhere.svc:5432&#34;`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page after a wrong answer does not show %q", want)
		}
	}
	if strings.Contains(body, db.Status.Endpoint) {
		t.Errorf("the page after a wrong answer gives the endpoint %s away", db.Status.Endpoint)
	}

	resp, _ = post(answer, url.Values{"task": {"endpoint"}, "answer": {db.Status.Endpoint}, "since": {since}, "done": {before}}, "")
	loc = resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || loc != "/challenges/interview-walkthrough?done=owned-statefulset%2Cready%2Cendpoint&since="+since+"#task-endpoint" {
		t.Fatalf("a right answer = %d to %q, want 303 with endpoint added to the done list", resp.StatusCode, loc)
	}
	body = page(loc)
	for _, want := range []string{`data-task="endpoint" data-state="done"`, "Right: Database shop publishes " + db.Status.Endpoint, `data-task="secret" data-state="todo"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page after a right answer does not show %q", want)
		}
	}
}
