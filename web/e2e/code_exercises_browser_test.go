package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/web/challenges"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// codeExercise is one of the code challenges, as a learner goes through it:
// the starting code is loaded and run on /code, the starting actions leave
// the checked task undone; the reference solution, typed into the editor
// and run, with the solving actions, gets every task done.
type codeExercise struct {
	id, starter string
	// onStarter acts while the starting code runs and waits for what the
	// starting code does (a task done, or a reconcile on the trace).
	onStarter func(t *testing.T, x *exerciseRun)
	// undone is the task the starting code must not get done.
	undone string
	// onSolution acts while the reference solution runs.
	onSolution func(t *testing.T, x *exerciseRun)
}

// TestBrowserCodeExercisesSolvedInThePage: for each of the four code
// exercises, the starting code loaded and run in the real /code page, on
// the real cluster with the real sandbox, leaves the checked task undone
// (as the challenge's status reports it); the reference solution
// (oplab's own reconciler, the "oplab" starter), its first line typed and
// the rest pasted into the editor, run, gets every task done, and the
// challenge page, open in another tab of the same session, says so.
func TestBrowserCodeExercisesSolvedInThePage(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	create := func(name string) func(t *testing.T, x *exerciseRun) {
		return func(t *testing.T, x *exerciseRun) { x.create(t, name) }
	}
	exercises := []codeExercise{
		{
			id: "write-your-own", starter: "skeleton",
			onStarter: func(t *testing.T, x *exerciseRun) {
				x.create(t, "shop")
				x.waitStep(t, "the skeleton's reconcile of shop", func(s controller.Step) bool {
					return s.YourCode && s.Database == "shop" && s.Type == controller.StepResult
				})
			},
			undone: "your-statefulset",
			onSolution: func(t *testing.T, x *exerciseRun) {
				x.waitDone(t, "your-ready")
				// The card's "ready" is the status's readyReplicas: the
				// solution reports it beside Ready True.
				var db v1alpha1.Database
				if err := x.e.client.Get(t.Context(), types.NamespacedName{Namespace: x.ns, Name: "shop"}, &db); err != nil || db.Status.ReadyReplicas < 1 {
					t.Errorf("shop Ready with status.readyReplicas %d (%v); want the StatefulSet's ready replicas", db.Status.ReadyReplicas, err)
				}
				// A learner sees it ticked off before deleting shop: the
				// check reads shop Ready, so once shop is gone a page that
				// had not polled meanwhile (a tab in the background polls
				// only on the stream's messages) never sees it done.
				x.pageShowsDone(t, "your-ready")
				x.delete(t, "shop")
				x.waitDone(t, "your-finalizer")
			},
		},
		{
			id: "fix-the-create", starter: "pitfall-create",
			onStarter:  func(t *testing.T, x *exerciseRun) { create("tally")(t, x); x.waitDone(t, "see-it-fail") },
			undone:     "fixed",
			onSolution: func(t *testing.T, x *exerciseRun) { x.waitDone(t, "fixed") },
		},
		{
			id: "fix-the-storm", starter: "pitfall-status",
			onStarter:  func(t *testing.T, x *exerciseRun) { create("storm")(t, x); x.waitDone(t, "see-the-storm") },
			undone:     "quiet",
			onSolution: func(t *testing.T, x *exerciseRun) { x.waitDone(t, "quiet") },
		},
		{
			id: "fix-the-finalizer", starter: "pitfall-finalizer",
			onStarter: func(t *testing.T, x *exerciseRun) {
				x.create(t, "lost")
				x.waitStep(t, "the pitfall's StatefulSet of lost", func(s controller.Step) bool {
					return s.YourCode && s.Database == "lost" && s.Type == controller.StepAction && s.Target != nil && s.Target.Kind == "StatefulSet"
				})
				x.delete(t, "lost")
				x.waitDone(t, "see-it-lost")
			},
			undone: "kept",
			onSolution: func(t *testing.T, x *exerciseRun) {
				x.create(t, "kept")
				x.waitStep(t, "your finalizer on kept", func(s controller.Step) bool {
					return s.YourCode && s.Database == "kept" && s.Type == controller.StepFinalizer && s.Phase == "added"
				})
				x.delete(t, "kept")
				x.waitDone(t, "kept")
				// The snapshot is one step on the timeline, where the
				// sandbox and the traced client each drew it.
				snapshots := 0
				for _, raw := range x.e.recorder.Export(x.ns).Messages {
					var m trace.Message
					if err := json.Unmarshal(raw, &m); err == nil && m.Step.Database == "kept" && m.Step.Type == controller.StepFinalizer && m.Step.Phase == "snapshot" {
						snapshots++
					}
				}
				if snapshots != 1 {
					t.Errorf("kept's delete drew %d snapshot steps; want 1", snapshots)
				}
				// The lab says what the challenge says: the snapshot the
				// learner's code wrote outlived its Database.
				browsertest.Do(t, x.code, chromedp.Navigate(x.e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form")))
				poll(t, x.code, "the lab listing kept-final-snapshot as kept, not lost", `(() => { const li = document.getElementById("snap-kept-final-snapshot");
					return !!li && !li.classList.contains("lost") && li.textContent.includes("no ownerReference"); })()`)
				browsertest.Do(t, x.code, chromedp.Navigate(x.e.http.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#back")))
			},
		},
	}
	solution := starters.Source("oplab")
	for _, ex := range exercises {
		t.Run(ex.id, func(t *testing.T) {
			x := startExercise(t, e, ex.id)

			// The starting code, loaded and run as a learner does.
			browsertest.Do(t, x.code, chromedp.Navigate(e.http.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")),
				chromedp.SetValue(chromedp.CSS("#starter"), ex.starter), chromedp.Click(chromedp.CSS("#load")))
			browsertest.Eventually(t, x.code, `String(document.getElementById("source").value.length)`, itoa(len(starters.Source(ex.starter))))
			x.run(t, starters.Source(ex.starter))
			ex.onStarter(t, x)
			if st := x.task(t, ex.undone); st.State == judge.StateDone {
				t.Fatalf("the starting code %q got %s done: %s", ex.starter, ex.undone, st.Detail)
			} else {
				t.Logf("With the starting code, %s is %s: %s", ex.undone, st.State, st.Detail)
			}
			screenshot(t, x.challenge, "exercise-"+ex.id+"-starting")
			// The code page lists the exercise with the same live checks:
			// the task the starting code leaves undone is to do there too,
			// and the line at the top names it as in progress.
			exercise := "#ex-" + ex.id
			browsertest.Eventually(t, x.code, `document.querySelector(`+strconv.Quote(exercise+` [data-task="`+ex.undone+`"]`)+`).dataset.state`, "todo")
			poll(t, x.code, "the code page's line naming the exercise in progress",
				`document.getElementById("code-exercise-now").textContent.startsWith("Exercise in progress: "+document.querySelector(`+strconv.Quote(exercise+" .exercise-title")+`).textContent)`)

			// The reference solution, typed (and pasted, see enter).
			browsertest.Eval[bool](t, x.code, `(() => { const s = document.getElementById("source"); s.value = "";
				s.dispatchEvent(new Event("input")); return true })()`)
			x.enter(t, solution)
			if got := browsertest.Eval[string](t, x.code, `document.getElementById("source").value`); got != solution {
				t.Fatalf("the editor holds %d characters after typing, want the %d typed", len(got), len(solution))
			}
			x.run(t, solution)
			screenshot(t, x.code, "exercise-"+ex.id+"-solution")
			ex.onSolution(t, x)
			// Then every other life: Test my code, pressed on the code
			// page; its verdict decides each exercise's last task.
			if st := x.task(t, "tested"); st.State == judge.StateDone {
				t.Fatalf("tested done before any test: %s", st.Detail)
			}
			browsertest.Do(t, x.code, chromedp.Click(chromedp.CSS("#test")))
			x.waitDoneWithin(t, "tested", testDeadline)
			st := x.status(t)
			for _, task := range st.Tasks {
				if task.State != judge.StateDone && !x.done[task.ID] {
					t.Errorf("with the solution, task %s is %s: %s", task.ID, task.State, task.Detail)
				}
			}
			// The challenge page, polling in its own tab, says the same.
			browsertest.Eventually(t, x.challenge, browsertest.Text("#done-count"), itoa(st.Of))
			screenshot(t, x.challenge, "exercise-"+ex.id+"-done")
			browsertest.Eventually(t, x.code, `document.querySelector(`+strconv.Quote(exercise+" [data-progress]")+`).textContent`, "Completed")
			browsertest.Eventually(t, x.code, `String(document.querySelectorAll(`+strconv.Quote(exercise+` [data-task][data-state="done"]`)+`).length)`, itoa(st.Of))
			browsertest.Do(t, x.code, chromedp.ScrollIntoView(chromedp.CSS(exercise)))
			screenshot(t, x.code, "exercise-"+ex.id+"-on-the-code-page")
			// Hand the namespace back, so the next exercise's load on the
			// cluster is only its own.
			browsertest.Do(t, x.code, chromedp.Click(chromedp.CSS("#back")))
			browsertest.Eventually(t, x.code, `document.getElementById("code").dataset.running`, "false")
		})
	}
}

// exerciseRun is one learner going through one exercise: the code page and
// the challenge page, two tabs of one session.
type exerciseRun struct {
	e               *testEnv
	id, ns          string
	code, challenge context.Context
	// done holds the tasks seen done, which stay done, as the challenge
	// page keeps them.
	done map[string]bool
}

// startExercise opens the challenge page and presses its Start, then opens
// a second tab of the same session for the code page.
func startExercise(t *testing.T, e *testEnv, id string) *exerciseRun {
	t.Helper()
	x := &exerciseRun{e: e, id: id, done: map[string]bool{}}
	x.challenge = e.tab(t)
	browsertest.Do(t, x.challenge, chromedp.Navigate(e.http.URL+"/challenges/"+id), chromedp.WaitVisible(chromedp.CSS("#start-form")),
		chromedp.Click(chromedp.CSS(`#start-form input[name="confirm"]`)), chromedp.Click(chromedp.CSS(`#start-form button`)))
	poll(t, x.challenge, "the challenge started", `document.getElementById("start-message").textContent.startsWith("Started")`)
	code, cancel := chromedp.NewContext(x.challenge)
	t.Cleanup(cancel)
	x.code = code
	browsertest.Do(t, x.code, chromedp.Navigate(e.http.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")))
	x.ns = browsertest.Eval[string](t, x.code, `document.getElementById("code").dataset.namespace`)
	return x
}

// enter puts src into the empty editor as a learner does: its first line
// typed key by key, the rest pasted (Chromium's Input.insertText, the path
// a paste or an input method takes: real beforeinput and input events at
// the caret). Typing all of it is the same code path key after key, and
// took 2.5 minutes for the 9 KB solution on 2 busy cores (each key is a
// round trip to Chromium); the paste takes well under a second.
func (x *exerciseRun) enter(t *testing.T, src string) {
	t.Helper()
	first, rest, _ := strings.Cut(src, "\n")
	began := time.Now()
	browsertest.Do(t, x.code, chromedp.SendKeys(chromedp.CSS("#source"), first+"\n"))
	if _, err := chromedp.Call(x.code, input.InsertText, input.InsertTextParams{Text: rest}); err != nil {
		t.Fatalf("pasting the solution: %v", err)
	}
	t.Logf("Typed the first line and pasted the other %d bytes of the solution in %s", len(rest), time.Since(began).Round(time.Millisecond))
}

// run presses Run my code and waits until the server runs src.
func (x *exerciseRun) run(t *testing.T, src string) {
	t.Helper()
	browsertest.Do(t, x.code, chromedp.Click(chromedp.CSS("#run")))
	polltest.Until(t, deadline, "the learner's code handed the namespace", func() (bool, error) {
		c := x.e.server.CodeOf(x.ns)
		return c != nil && c.Ran == src && c.Running, nil
	})
	browsertest.Eventually(t, x.code, `document.getElementById("code").dataset.running`, "true")
	// The page has the run's own answer once the button is back: until then
	// it may still show the code that ran before.
	poll(t, x.code, "Run my code answered", `!document.getElementById("run").disabled`)
	if got := browsertest.Eval[string](t, x.code, browsertest.Text("#code-error")); got != "" {
		t.Fatalf("running the code shows an error: %s", got)
	}
}

func (x *exerciseRun) create(t *testing.T, name string) {
	t.Helper()
	if err := x.e.client.Create(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: x.ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func (x *exerciseRun) delete(t *testing.T, name string) {
	t.Helper()
	if err := x.e.client.Delete(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: x.ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// waitStep waits for a step of the namespace's trace.
func (x *exerciseRun) waitStep(t *testing.T, what string, f func(controller.Step) bool) {
	t.Helper()
	polltest.Until(t, deadline, what, func() (bool, error) {
		for _, raw := range x.e.recorder.Export(x.ns).Messages {
			var m trace.Message
			if err := json.Unmarshal(raw, &m); err == nil && f(m.Step) {
				return true, nil
			}
		}
		return false, nil
	})
}

// status asks the challenge's status endpoint from the code page's tab, as
// the challenge page does: since its Start, with the tasks seen done.
func (x *exerciseRun) status(t *testing.T) challenges.Status {
	t.Helper()
	var done []string
	for id := range x.done {
		done = append(done, id)
	}
	js := fmt.Sprintf(`(async () => {
		const mine = (JSON.parse(localStorage.getItem("oplab.challenges") || "{}"))[%q] || {};
		// Without its Start no check runs: a task undone would say nothing.
		if (!mine.started) return JSON.stringify({error: "the challenge page kept no Start"});
		const q = new URLSearchParams({since: String(mine.started), done: %q});
		const r = await fetch("/challenges/" + %q + "/status?" + q, {cache: "no-store"});
		// The session's checks are throttled, and the open pages poll too.
		return r.status === 429 ? "throttled" : await r.text();
	})()`, x.id, strings.Join(done, ","), url.PathEscape(x.id))
	var body string
	for try := 0; ; try++ {
		var err error
		body, err = chromedp.Run(x.code, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("asking the challenge's status: %v", err)
		}
		if body != "throttled" || try == 10 {
			break
		}
		time.Sleep(time.Second)
	}
	var st challenges.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Error != "" {
		t.Fatalf("the challenge's status: %s (%v)", body, err)
	}
	for _, task := range st.Tasks {
		if task.State == judge.StateDone {
			x.done[task.ID] = true
		}
	}
	return st
}

// task returns one task's state.
func (x *exerciseRun) task(t *testing.T, id string) judge.TaskState {
	t.Helper()
	for _, task := range x.status(t).Tasks {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("challenge %s has no task %s", x.id, id)
	return judge.TaskState{}
}

// pageShowsDone waits for the challenge page to show task id done.
func (x *exerciseRun) pageShowsDone(t *testing.T, id string) {
	t.Helper()
	browsertest.Eventually(t, x.challenge, browsertest.Text("#task-"+id+" .state-label"), "Done")
}

// testDeadline bounds a whole Test my code in a loaded suite: a battery
// takes about 20 s alone, and its children run behind everything else at
// nice 10 while the suite keeps both cores busy.
const testDeadline = 10 * time.Minute

// waitDone waits until the status says the task is done.
func (x *exerciseRun) waitDone(t *testing.T, id string) {
	t.Helper()
	x.waitDoneWithin(t, id, deadline)
}

// waitDoneWithin is waitDone with its own bound.
func (x *exerciseRun) waitDoneWithin(t *testing.T, id string, within time.Duration) {
	t.Helper()
	last := judge.TaskState{}
	polltest.Until(t, within, x.id+"/"+id+" done", func() (bool, error) {
		last = x.task(t, id)
		return last.State == judge.StateDone, fmt.Errorf("%s: %s", last.State, last.Detail)
	})
}
