package judge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons/judge"
)

const inputFile = `---
id: find
title: A challenge with a find task
lesson: reconciliation-loop#the-loop
tasks:
  - id: act
    text: Do something.
    check: test/a
  - id: which
    text: Which reconcile created the StatefulSet?
    input: statefulset-creator
    after: [act]
---
Body.
`

func loadFind(t *testing.T) *judge.Challenge {
	t.Helper()
	set, err := load(t, map[string]string{"find.md": inputFile})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("find")
	return c
}

func TestLoadRefusesBadInputTasks(t *testing.T) {
	withCheck := strings.Replace(inputFile, "    input: statefulset-creator", "    input: statefulset-creator\n    check: test/b", 1)
	withQuestion := strings.Replace(inputFile, "    input: statefulset-creator", "    input: statefulset-creator\n    question: pick-two", 1)
	all := strings.Replace(withCheck, "    check: test/b", "    check: test/b\n    question: pick-two", 1)
	unknown := strings.Replace(inputFile, "input: statefulset-creator", "input: favourite-colour", 1)
	for name, tc := range map[string]struct{ file, want string }{
		"check":    {withCheck, `find.md: tasks[1] (which): names both check "test/b" and input "statefulset-creator": a task is judged one way`},
		"question": {withQuestion, `find.md: tasks[1] (which): names both question "pick-two" and input "statefulset-creator"`},
		"all":      {all, `names check "test/b" and question "pick-two" and input "statefulset-creator"`},
		"unknown":  {unknown, `find.md: tasks[1] (which): input "favourite-colour" is not registered (RegisterInput; known: `},
	} {
		_, err := load(t, map[string]string{"find.md": tc.file})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

// An input task is locked behind its after tasks, then to do, asking for
// the answer, until the learner's browser has seen it answered right; no
// check ever makes it done, and a done list naming it early does not skip
// the tasks before.
func TestInputTaskState(t *testing.T) {
	c := loadFind(t)
	if c.Tasks[1].Input != "statefulset-creator" || c.Tasks[1].Check != "" || c.Tasks[1].Question != nil {
		t.Fatalf("task which = %+v, want input statefulset-creator only", c.Tasks[1])
	}
	verdicts["test/a"] = false
	t.Cleanup(func() { verdicts["test/a"] = false })
	ss, _ := c.Evaluate(context.Background(), judge.Env{}, map[string]bool{"which": true})
	if ss[1].State != judge.StateLocked {
		t.Errorf("before act, which in the done list: %+v, want locked", ss[1])
	}
	verdicts["test/a"] = true
	ss, _ = c.Evaluate(context.Background(), judge.Env{}, nil)
	if ss[1].State != judge.StateTodo || ss[1].Detail != "Type the reconcile ID above and submit it." {
		t.Errorf("after act: which = %+v, want to do, asking for the reconcile ID", ss[1])
	}
	ss, _ = c.Evaluate(context.Background(), judge.Env{NotStarted: true}, map[string]bool{"act": true})
	if ss[1].State != judge.StateTodo || !strings.Contains(ss[1].Detail, "Press Start first") {
		t.Errorf("not started: which = %+v, want to do, asking for Start", ss[1])
	}
	ss, _ = c.Evaluate(context.Background(), judge.Env{}, map[string]bool{"which": true})
	if ss[1].State != judge.StateDone {
		t.Errorf("answered: which = %+v, want done", ss[1])
	}
}

// creatorTrace is a hand-made trace of shop: one reconcile adds the
// finalizer, the next creates the StatefulSet.
func creatorTrace() []controller.Step {
	const first, second = "0a1b2c3d-0000-4000-8000-000000000001", "9f8e7d6c-0000-4000-8000-000000000002"
	target := &controller.ObjectRef{Kind: "StatefulSet", Namespace: "ns", Name: "shop"}
	return []controller.Step{
		{Type: controller.StepReconcileStart, ReconcileID: first, Database: "shop"},
		{Type: controller.StepFinalizer, ReconcileID: first, Database: "shop", Phase: "added"},
		{Type: controller.StepResult, ReconcileID: first, Database: "shop", Result: "done"},
		{Type: controller.StepReconcileStart, ReconcileID: second, Database: "shop"},
		{Type: controller.StepAction, ReconcileID: second, Database: "shop", Action: "create", Target: target, Outcome: controller.OutcomeCreated},
		{Type: controller.StepResult, ReconcileID: second, Database: "shop", Result: "done"},
	}
}

func TestSubmit(t *testing.T) {
	c := loadFind(t)
	env := judge.Env{Namespace: "ns", Trace: creatorTrace()}
	ctx := context.Background()
	for _, right := range []string{"#9f8e7d6c", "9F8E7D6C", "9f8e7d6c-0000-4000", "  #9f8e7d6c-0000-4000-8000-000000000002 "} {
		a, err := c.Submit(ctx, env, "which", right)
		if err != nil || !a.Correct || !strings.Contains(a.Detail, "reconcile #9f8e7d6c of Database shop created StatefulSet shop") {
			t.Errorf("Submit(%q) = %+v, %v; want right, naming the reconcile", right, a, err)
		}
	}
	for _, tc := range []struct{ answer, want string }{
		{"#0a1b2c3d", "Reconcile #0a1b2c3d did not create the StatefulSet; what it did: finalizer added."},
		{"#12345678", "No reconcile since your Start has an ID starting 12345678"},
		{"#9f8e7d6c-1", "No reconcile since your Start has an ID starting 9f8e7d6c-1"},
	} {
		a, err := c.Submit(ctx, env, "which", tc.answer)
		if err != nil || a.Correct || !strings.Contains(a.Detail, tc.want) || strings.Contains(a.Detail, "9f8e7d6c-0") || (tc.answer != "#9f8e7d6c-1" && strings.Contains(a.Detail, "9f8e7d6c")) {
			t.Errorf("Submit(%q) = %+v, %v; want wrong, saying %q and not the right ID", tc.answer, a, err, tc.want)
		}
	}
	none, err := c.Submit(ctx, judge.Env{Namespace: "ns"}, "which", "#9f8e7d6c")
	if err != nil || none.Correct || !strings.Contains(none.Detail, "No reconcile has created a StatefulSet since your Start") {
		t.Errorf("Submit on an empty trace = %+v, %v; want wrong, saying nothing was created", none, err)
	}

	for _, tc := range []struct {
		env          judge.Env
		task, answer string
		want         string
		bad          bool
	}{
		{env, "which", "", "the reconcile ID is empty: type a reconcile ID", true},
		{env, "which", " \t ", "the reconcile ID is empty", true},
		{env, "which", "#" + strings.Repeat("a", 40), "the reconcile ID is 41 characters long, more than the 37 it can be", true},
		{env, "which", "shop", `"shop" is not a reconcile ID: the 8 characters after # on its timeline row`, true},
		{env, "which", "#1234", `"#1234" is not a reconcile ID`, true},
		{env, "which", "\xff\xfe#12345678", "the reconcile ID is not valid text", true},
		{judge.Env{NotStarted: true}, "which", "#9f8e7d6c", "press Start first", false},
		{env, "act", "#9f8e7d6c", `task "act" of challenge find takes no typed answer`, false},
		{env, "nope", "#9f8e7d6c", `challenge find has no task "nope"`, false},
	} {
		_, err := c.Submit(ctx, tc.env, tc.task, tc.answer)
		var ie *judge.InputError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ie) != tc.bad {
			t.Errorf("Submit(%s, %q) err = %v, want it to say %q (a bad answer: %v)", tc.task, tc.answer, err, tc.want, tc.bad)
		}
	}
	if _, err := c.Submit(ctx, env, "nope", "x"); !errors.Is(err, judge.ErrNoTask) {
		t.Errorf("Submit(nope) err = %v, want ErrNoTask", err)
	}
	if _, err := c.Submit(ctx, judge.Env{NotStarted: true}, "which", "#9f8e7d6c"); !errors.Is(err, judge.ErrNotStarted) {
		t.Errorf("Submit before Start err = %v, want ErrNotStarted", err)
	}
}
