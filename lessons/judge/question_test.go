package judge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/lessons/judge"
)

const questionFile = `---
id: judge
title: A challenge that ends in a judgement
lesson: reconciliation-loop#the-loop
tasks:
  - id: act
    text: Do something.
    check: test/a
  - id: decide
    text: Now judge.
    question: pick-two
    after: [act]
---
Body.
`

func loadJudge(t *testing.T) *judge.Challenge {
	t.Helper()
	set, err := load(t, map[string]string{"judge.md": questionFile})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("judge")
	return c
}

// A question task is locked behind its after tasks, then to do until the
// learner's browser has seen it answered; its state never comes from a
// check.
func TestQuestionTaskState(t *testing.T) {
	c := loadJudge(t)
	if q := c.Tasks[1].Question; q == nil || q.ID != "pick-two" || c.Tasks[1].Check != "" {
		t.Fatalf("task decide = %+v, want question pick-two and no check", c.Tasks[1])
	}
	verdicts["test/a"] = false
	t.Cleanup(func() { verdicts["test/a"] = false })
	ss, err := c.Evaluate(context.Background(), judge.Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ss[1].State != judge.StateLocked || !strings.Contains(ss[1].Detail, "task 1") {
		t.Errorf("before act: decide = %+v, want locked behind task 1", ss[1])
	}
	verdicts["test/a"] = true
	ss, _ = c.Evaluate(context.Background(), judge.Env{}, nil)
	if ss[1].State != judge.StateTodo || !strings.Contains(ss[1].Detail, "Answer the question") {
		t.Errorf("after act: decide = %+v, want to do, asking for the answer", ss[1])
	}
	ss, _ = c.Evaluate(context.Background(), judge.Env{}, map[string]bool{"decide": true})
	if ss[1].State != judge.StateDone {
		t.Errorf("answered: decide = %+v, want done", ss[1])
	}
}

func TestAnswer(t *testing.T) {
	c := loadJudge(t)
	got, err := c.Answer("decide", []int{2, 1})
	if err != nil || !got.Correct || !strings.Contains(got.Detail, "Because b and c.") {
		t.Errorf("right answer: %+v, %v; want correct with the explanation", got, err)
	}
	for _, tc := range []struct {
		picked []int
		want   string
	}{
		{[]int{1}, "one right choice is missing"},
		{[]int{0, 1}, "one of your picks is wrong, and one right choice is missing"},
		{[]int{0, 1, 2, 3}, "2 of your picks are wrong"},
		{[]int{0, 3}, "2 of your picks are wrong, and 2 right choices are missing"},
	} {
		got, err := c.Answer("decide", tc.picked)
		if err != nil || got.Correct || !strings.Contains(got.Detail, tc.want) || strings.Contains(got.Detail, "Because") {
			t.Errorf("Answer(%v) = %+v, %v; want wrong, saying %q and not the explanation", tc.picked, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		task   string
		picked []int
		want   string
	}{
		{"nope", []int{1}, `no task "nope"`},
		{"act", []int{1}, `task "act" of challenge judge is checked against your namespace`},
		{"decide", []int{7}, "choices 0 to 3, not 7"},
		{"decide", nil, "no choice picked"},
	} {
		if _, err := c.Answer(tc.task, tc.picked); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Answer(%s, %v) err = %v, want it to say %q", tc.task, tc.picked, err, tc.want)
		}
	}
}

func TestLoadRefusesBadQuestionTasks(t *testing.T) {
	both := strings.Replace(questionFile, "    question: pick-two", "    question: pick-two\n    check: test/b", 1)
	unknown := strings.Replace(questionFile, "question: pick-two", "question: no-such", 1)
	for name, tc := range map[string]struct{ file, want string }{
		"both":    {both, `judge.md: tasks[1] (decide): names both check "test/b" and question "pick-two"`},
		"unknown": {unknown, `judge.md: tasks[1] (decide): question "no-such" is not a challenge question`},
	} {
		_, err := load(t, map[string]string{"judge.md": tc.file})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

// Before Start no check runs: it would judge a namespace the challenge has
// not set up. Tasks the browser has seen done stay done.
func TestNotStartedRunsNoCheck(t *testing.T) {
	c := loadJudge(t)
	verdicts["test/a"] = true
	t.Cleanup(func() { verdicts["test/a"] = false })
	ss, err := c.Evaluate(context.Background(), judge.Env{NotStarted: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ss[0].State != judge.StateTodo || !strings.Contains(ss[0].Detail, "Press Start first") || strings.Contains(ss[0].Detail, "test/a") {
		t.Errorf("not started: act = %+v, want to do, asking for Start, its check not run", ss[0])
	}
	if ss[1].State != judge.StateLocked {
		t.Errorf("not started: decide = %+v, want locked", ss[1])
	}
	ss, _ = c.Evaluate(context.Background(), judge.Env{NotStarted: true}, map[string]bool{"act": true})
	if ss[0].State != judge.StateDone || ss[1].State != judge.StateTodo {
		t.Errorf("not started, act seen done: %+v, want act done and decide to answer", ss)
	}
}
