package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// breakAndUninstall does operator-or-chart's two cluster tasks in ns, as the
// learner's kubectl would: both Services deleted, then (once the operator's
// is back) the Database and the plain StatefulSet.
func (e *testEnv) breakAndUninstall(t *testing.T, ns string) {
	t.Helper()
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	for _, name := range []string{"billing", "billing-chart"} {
		if err := e.client.Delete(t.Context(), &corev1.Service{ObjectMeta: meta(name)}); err != nil {
			t.Fatalf("delete Service %s: %v", name, err)
		}
	}
	polltest.Until(t, deadline, "Service billing put back", func() (bool, error) {
		err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "billing"}, &corev1.Service{})
		return err == nil, err
	})
	if err := e.client.Delete(t.Context(), &v1alpha1.Database{ObjectMeta: meta("billing")}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Delete(t.Context(), &appsv1.StatefulSet{ObjectMeta: meta("billing-chart")}); err != nil {
		t.Fatal(err)
	}
}

// The question task in the browser: its form stays disabled until the
// cluster tasks are done; a wrong answer says what is off and leaves the
// task to do; the right one turns it done with the explanation, announced,
// and kept in localStorage, and the challenge is complete.
func TestBrowserChallengeQuestion(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/challenges/operator-or-chart"), chromedp.WaitVisible(chromedp.CSS("#start-form"))); err != nil {
		t.Fatal(err)
	}
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("challenge").dataset.namespace`))
	if err != nil || ns == "" {
		t.Fatalf("no namespace on the page: %v", err)
	}
	showsNow(t, ctx, "the hints' kubectl pointed at the learner's kubeconfig", fmt.Sprintf(`document.getElementById("export-line")?.textContent === "export KUBECONFIG=~/Downloads/oplab-%s.kubeconfig"`, ns), "#work")
	showsNow(t, ctx, "not complete before Start", `document.getElementById("complete").hidden`, "#tasks")
	showsNow(t, ctx, "the question's four choices as checkboxes", `document.querySelectorAll('#task-decide input[type=checkbox][name=choice]').length === 4`, "#tasks")
	// Start's answer appears under its button and must not push down
	// what a learner reaches for next: the lab's link and the tasks.
	const workTop = `String(Math.round(document.getElementById("work").getBoundingClientRect().top + scrollY))`
	before, err := chromedp.Run(ctx, chromedp.Evaluate[string](workTop))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#start-form input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`#start-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the Start message", `document.getElementById("start-message").textContent.startsWith("Started")`, "#start")
	if after, err := chromedp.Run(ctx, chromedp.Evaluate[string](workTop)); err != nil || after != before {
		t.Errorf("the work section moved from %s px to %s px (%v) when Start's answer appeared above it", before, after, err)
	}
	shows(t, ctx, "the question locked, its form disabled", `document.querySelector("#task-decide").dataset.state === "locked" && document.querySelector("#task-decide fieldset").disabled`, "#tasks")
	screenshot(t, ctx, "challenge-question-locked")

	e.breakAndUninstall(t, ns)
	shows(t, ctx, "both cluster tasks done", `["self-heal", "uninstalled"].every(id => document.querySelector("#task-" + id + " .state-label").textContent === "Done")`, "#tasks")
	showsNow(t, ctx, "the self-heal detail naming what stayed gone", `document.querySelector("#task-self-heal [data-detail]").textContent.includes("billing-chart is still gone")`, "#tasks")
	shows(t, ctx, "the form open", `!document.querySelector("#task-decide fieldset").disabled`, "#tasks")

	// The dashboards and the failover: one wrong, one right, one missing.
	answer := func(choices ...int) {
		t.Helper()
		js := `document.querySelectorAll("#task-decide input[name=choice]").forEach(i => i.checked = false);`
		for _, c := range choices {
			js += fmt.Sprintf(`document.getElementById("decide-choice-%d").click();`, c)
		}
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js), chromedp.Click(chromedp.CSS("#task-decide button[type=submit]"))); err != nil {
			t.Fatal(err)
		}
	}
	answer(0, 1)
	shows(t, ctx, "the wrong answer's feedback", `document.querySelector("#task-decide [data-feedback]").textContent.includes("one of your picks is wrong, and one right choice is missing")`, "#tasks")
	showsNow(t, ctx, "the question still to do", `document.querySelector("#task-decide .state-label").textContent === "To do"`, "#tasks")
	screenshot(t, ctx, "challenge-question-wrong")
	checkPage(t, ctx, src, "/challenges/operator-or-chart (answered wrong)")

	answer(1, 3)
	shows(t, ctx, "the question done with the explanation", `document.querySelector("#task-decide .state-label").textContent === "Done" && document.querySelector("#task-decide [data-detail]").textContent.includes("day-2")`, "#tasks")
	shows(t, ctx, "the challenge complete, said aloud", `document.getElementById("announce").textContent.includes("Challenge complete")`, "#tasks")
	showsNow(t, ctx, "3 of 3 done", `document.getElementById("done-count").textContent === "3"`, "#tasks")
	showsNow(t, ctx, "the end said on screen too", `!document.getElementById("complete").hidden && document.getElementById("complete").textContent.includes("Challenge complete")`, "#tasks")
	showsNow(t, ctx, "the progress kept", `JSON.parse(localStorage.getItem("oplab.challenges"))["operator-or-chart"].tasks.decide === "done"`)
	screenshot(t, ctx, "challenge-question-done")

	// Start again: from the press on, the last start's end is not shown
	// and the tasks wait for the new states; then none is done.
	pressed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#start-form input[name="confirm"]').click();
		document.querySelector("#start-form button").click();
		[document.getElementById("complete").hidden, document.getElementById("tasks").getAttribute("aria-busy")].join(" ")`))
	if err != nil || pressed != "true true" {
		t.Errorf("as Start is pressed again, complete hidden and tasks busy = %q (%v), want \"true true\"", pressed, err)
	}
	shows(t, ctx, "the new start's states, none done", `document.getElementById("start-message").textContent.startsWith("Started") && !document.getElementById("tasks").hasAttribute("aria-busy") && document.getElementById("done-count").textContent === "0" && [...document.querySelectorAll(".task .state-label")].every(e => e.textContent !== "Done")`, "#tasks")
	showsNow(t, ctx, "the end no longer shown", `document.getElementById("complete").hidden`, "#tasks")
}

// Without JavaScript: the answer is a form post. Wrong, the page shows why
// under the task; right, the redirect lists the task as done. Bad posts
// name what was wrong.
func TestChallengeAnswerWithoutScript(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, _ := e.learner(t)
	if resp, err := c.Get(e.http.URL + "/challenges/operator-or-chart"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the challenge page: %v %v", resp, err)
	}
	post := func(form url.Values, accept string) (*http.Response, string) {
		t.Helper()
		return postAccept(t, c, e.http.URL+"/challenges/operator-or-chart/answer", form, accept)
	}
	page := func(loc string) string {
		t.Helper()
		_, b := get(t, c, e.http.URL+loc)
		return b
	}

	// The question comes after the cluster tasks: answered early, it is
	// refused with the reason, and a done list naming it alone does not
	// make it done.
	if resp, body := post(url.Values{"task": {"decide"}, "choice": {"1", "3"}}, "application/json"); resp.StatusCode != http.StatusConflict ||
		!strings.Contains(body, "Not graded yet: Waits until task 2 is done.") {
		t.Errorf("an answer while locked = %d %s, want 409 saying what it waits for", resp.StatusCode, body)
	}
	if body := page("/challenges/operator-or-chart?done=decide"); !strings.Contains(body, `data-task="decide" data-state="locked"`) {
		t.Errorf("?done=decide alone shows the question not locked")
	}

	// As the browser keeps it, the cluster tasks are in the done list.
	const before = "self-heal,uninstalled"
	resp, _ := post(url.Values{"task": {"decide"}, "choice": {"2"}, "since": {"1700000000000"}, "done": {before}}, "")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || loc != "/challenges/operator-or-chart?done=self-heal%2Cuninstalled&since=1700000000000#task-decide" {
		t.Fatalf("a wrong answer = %d to %q, want 303 back to the task, done list unchanged", resp.StatusCode, loc)
	}
	if body := page(loc); !strings.Contains(body, `data-feedback>Not yet: one of your picks is wrong, and 2 right choices are missing.`) {
		t.Errorf("the page after a wrong answer does not say why under the task")
	}

	resp, _ = post(url.Values{"task": {"decide"}, "choice": {"1", "3"}, "done": {before}}, "")
	loc = resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || loc != "/challenges/operator-or-chart?done=self-heal%2Cuninstalled%2Cdecide#task-decide" {
		t.Fatalf("a right answer = %d to %q, want 303 with decide added to the done list", resp.StatusCode, loc)
	}
	body := page(loc)
	for _, want := range []string{`data-task="decide" data-state="done"`, "Right. Failover and backup-then-upgrade are day-2 procedures"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page after a right answer does not show %q", want)
		}
	}

	for _, tc := range []struct {
		form url.Values
		code int
		want string
	}{
		{url.Values{"task": {"decide"}, "done": {before}, "choice": {"9"}}, http.StatusBadRequest, "choices 0 to 3, not 9"},
		{url.Values{"task": {"decide"}, "done": {before}, "choice": {"two"}}, http.StatusBadRequest, `choice \"two\" is not a choice number`},
		{url.Values{"task": {"decide"}, "done": {before}}, http.StatusBadRequest, "no choice picked"},
		{url.Values{"task": {"decide"}, "done": {before}, "choice": {"1"}, "since": {"soon"}}, http.StatusBadRequest, `since \"soon\" must be Unix milliseconds`},
		{url.Values{"task": {"self-heal"}, "choice": {"1"}}, http.StatusBadRequest, `task \"self-heal\" of challenge operator-or-chart is checked against your namespace`},
		{url.Values{"task": {"nope"}, "choice": {"1"}}, http.StatusNotFound, `no task \"nope\"`},
	} {
		resp, body := post(tc.form, "application/json")
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("POST %v = %d %s, want %d saying %q", tc.form, resp.StatusCode, body, tc.code, tc.want)
		}
	}
}
