package judge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
	"github.com/oplab-dev/oplab/quiz"
)

// Checks for the engine's own tests: their verdict is read from a map the
// test sets, so a test decides which task is done.
var verdicts = map[string]bool{}

func init() {
	for _, name := range []string{"test/a", "test/b", "test/c"} {
		judge.RegisterCheck(name, func(context.Context, judge.Env) (judge.Result, error) {
			return judge.Result{Done: verdicts[name], Detail: name + " detail"}, nil
		})
	}
	judge.RegisterCheck("test/broken", func(context.Context, judge.Env) (judge.Result, error) {
		return judge.Result{}, errors.New("API server did not answer")
	})
	judge.RegisterPrepare("test/prepare", func(context.Context, judge.PrepareEnv) error { return nil })
}

// lessonsStub resolves only the links it lists.
type lessonsStub map[string]bool

func (l lessonsStub) Resolve(link string) error {
	if !l[link] {
		return errors.New("no such section")
	}
	return nil
}

// testQuestions are the quiz the test challenges may ask from.
var testQuestions = []quiz.Question{{
	ID: "pick-two", Prompt: "Which two?", Explanation: "Because b and c.",
	Choices: []quiz.Choice{{Text: "a"}, {Text: "b", Correct: true}, {Text: "c", Correct: true}, {Text: "d"}},
}}

var knownLessons = lessonsStub{"/lessons/reconciliation-loop#the-loop": true, "/lessons/status-owners-finalizers#finalizers": true}

const goodFile = `---
id: good
title: A good challenge
lesson: reconciliation-loop#the-loop
also: [status-owners-finalizers#finalizers]
prepare: test/prepare
tasks:
  - id: second
    text: Do the second thing.
    check: test/b
    after: [first]
  - id: first
    text: Do the first thing, with ` + "`code`" + `.
    hints: ["kubectl get databases -n $NS"]
    check: test/a
---
Some **markdown**.
`

func load(t *testing.T, files map[string]string) (*judge.Set, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, body := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return judge.Load(fsys, knownLessons, testQuestions)
}

func TestLoadGood(t *testing.T) {
	set, err := load(t, map[string]string{"good.md": goodFile})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	c, ok := set.Get("good")
	if !ok {
		t.Fatal("challenge good not found")
	}
	if c.LessonSlug != "reconciliation-loop" || c.LessonSection != "the-loop" || c.LessonURL() != "/lessons/reconciliation-loop#the-loop" {
		t.Errorf("lesson = %q %q %q", c.LessonSlug, c.LessonSection, c.LessonURL())
	}
	if got := []string{c.Tasks[0].ID, c.Tasks[1].ID}; got[0] != "first" || got[1] != "second" {
		t.Errorf("tasks in dependency order = %v, want [first second]", got)
	}
	if !strings.Contains(c.HTML, "<strong>markdown</strong>") {
		t.Errorf("body not rendered: %q", c.HTML)
	}
	if c.Tasks[0].TextHTML != "Do the first thing, with <code>code</code>." {
		t.Errorf("task text HTML = %q", c.Tasks[0].TextHTML)
	}
	if len(c.Tasks[0].HintsHTML) != 1 || c.Tasks[0].HintsHTML[0] != "kubectl get databases -n $NS" {
		t.Errorf("hints HTML = %q", c.Tasks[0].HintsHTML)
	}
	if len(set.ForLesson("reconciliation-loop")) != 1 || len(set.ForLesson("other")) != 0 {
		t.Errorf("ForLesson wrong")
	}
	if len(c.Also) != 1 || c.Also[0].URL() != "/lessons/status-owners-finalizers#finalizers" {
		t.Errorf("also = %+v, want status-owners-finalizers#finalizers", c.Also)
	}
	if got := set.ForLesson("status-owners-finalizers"); len(got) != 1 || got[0] != c {
		t.Errorf("ForLesson(status-owners-finalizers) = %v, want the challenge, by its also", got)
	}
	if sec, ok := c.SectionIn("status-owners-finalizers"); !ok || sec != "finalizers" {
		t.Errorf("SectionIn(status-owners-finalizers) = %q %v, want finalizers", sec, ok)
	}
}

// Each defect is an error naming the file and the field.
func TestLoadRefusesBadFiles(t *testing.T) {
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"unknown check", "check: test/a", "check: test/nope", []string{"bad.md", "tasks[1] (first)", `check "test/nope" is not registered`}},
		{"unknown prepare", "prepare: test/prepare", "prepare: nope", []string{"bad.md", `prepare "nope" is not registered`}},
		{"unknown starter", "prepare: test/prepare", "prepare: test/prepare\nstarter: pitfall-nope", []string{"bad.md", `starter "pitfall-nope" is not a starting code of the code page (known: skeleton, oplab,`}},
		{"unknown after", "after: [first]", "after: [zeroth]", []string{"bad.md", "tasks[0] (second)", `after "zeroth" names no task`}},
		{"missing lesson section", "lesson: reconciliation-loop#the-loop", "lesson: reconciliation-loop#no-such", []string{"bad.md", `lesson "reconciliation-loop#no-such"`, "no such section"}},
		{"lesson without anchor", "lesson: reconciliation-loop#the-loop", "lesson: reconciliation-loop", []string{"bad.md", `lesson "reconciliation-loop" must be a lesson slug and a section anchor`}},
		{"missing also section", "also: [status-owners-finalizers#finalizers]", "also: [status-owners-finalizers#finalizer]", []string{"bad.md", `also[0] "status-owners-finalizers#finalizer"`, "no such section"}},
		{"also without anchor", "also: [status-owners-finalizers#finalizers]", "also: [status-owners-finalizers#finalizers, finalizers]", []string{"bad.md", `also[1] "finalizers" must be a lesson slug and a section anchor`}},
		{"also repeats the lesson", "also: [status-owners-finalizers#finalizers]", "also: [reconciliation-loop#the-loop]", []string{"bad.md", `also[0] "reconciliation-loop#the-loop" repeats a section`}},
		{"id not the file name", "id: good", "id: other", []string{"bad.md", `id "other" must equal the file name "bad"`}},
		{"empty title", "title: A good challenge", "title: ''", []string{"bad.md", "title is empty"}},
		{"unknown field", "prepare: test/prepare", "prepar: test/prepare", []string{"bad.md", "front matter", "prepar"}},
		{"cycle", "    check: test/a\n", "    check: test/a\n    after: [second]\n", []string{"bad.md", "after forms a cycle among second, first"}},
		{"task id in capitals", "id: second", "id: Second", []string{"bad.md", `tasks[0]: id "Second" must be lowercase letters, digits and dashes`}},
		{"task id ending in a dash", "id: second", "id: second-", []string{"bad.md", `tasks[0]: id "second-" must be lowercase letters, digits and dashes`}},
		{"duplicate task", "id: second", "id: first", []string{"bad.md", `id "first" is used by an earlier task`}},
		{"no front matter", "---\nid: good", "id: good", []string{"bad.md", "front matter missing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(goodFile, tc.old, tc.new, 1)
			if src == goodFile {
				t.Fatalf("the case changes nothing: %q not in the file", tc.old)
			}
			src = strings.Replace(src, "id: good", "id: bad", 1)
			if tc.name == "id not the file name" {
				src = strings.Replace(goodFile, tc.old, tc.new, 1)
			}
			_, err := load(t, map[string]string{"bad.md": src, "good.md": goodFile})
			if err == nil {
				t.Fatal("Load accepted the file")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "good.md") {
				t.Errorf("error blames the good file too: %v", err)
			}
		})
	}
}

func TestEvaluateLocksAndKeepsDone(t *testing.T) {
	set, err := load(t, map[string]string{"good.md": goodFile})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("good")
	ctx := context.Background()
	states := func(already map[string]bool) string {
		t.Helper()
		ss, err := c.Evaluate(ctx, judge.Env{}, already)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, s := range ss {
			parts = append(parts, s.ID+"="+string(s.State))
		}
		return strings.Join(parts, " ")
	}
	verdicts["test/a"], verdicts["test/b"] = false, true
	if got := states(nil); got != "first=todo second=locked" {
		t.Errorf("nothing done: %s, want first=todo second=locked", got)
	}
	if ss, _ := c.Evaluate(ctx, judge.Env{}, nil); ss[1].Detail != "Waits until task 1 is done." {
		t.Errorf("locked detail = %q, want it to name the task by its number", ss[1].Detail)
	}
	verdicts["test/a"] = true
	if got := states(nil); got != "first=done second=done" {
		t.Errorf("both checks pass: %s", got)
	}
	verdicts["test/a"] = false // the learner's later work undid the first task's state
	if got := states(map[string]bool{"first": true}); got != "first=done second=done" {
		t.Errorf("first seen done before: %s, want it kept done", got)
	}
	verdicts["test/a"], verdicts["test/b"] = false, false
}

func TestEvaluateReportsCheckErrors(t *testing.T) {
	src := strings.Replace(goodFile, "check: test/a", "check: test/broken", 1)
	set, err := load(t, map[string]string{"good.md": src})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("good")
	ss, err := c.Evaluate(context.Background(), judge.Env{}, nil)
	if err == nil || !strings.Contains(err.Error(), "API server did not answer") {
		t.Errorf("error = %v, want the check's error", err)
	}
	if ss[0].State != judge.StateTodo || !strings.Contains(ss[0].Detail, "Could not check yet") {
		t.Errorf("state = %+v", ss[0])
	}
}

// The shipped challenges load against the real course: every check and
// prepare they name is registered and every lesson section exists.
func TestEmbeddedChallengesLoad(t *testing.T) {
	set, err := judgetest.LoadSet()
	if err != nil {
		t.Fatalf("load the embedded challenges: %v", err)
	}
	if _, ok := set.Get("interview-walkthrough"); !ok {
		t.Error("interview-walkthrough missing")
	}
}

// Issue 14 §1: the challenges cover every section of every numbered lesson,
// as their main lesson or in also.
func TestEmbeddedChallengesCoverTheLessons(t *testing.T) {
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	set, err := judge.LoadEmbedded(course)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string][]string{}
	for _, c := range set.Challenges {
		covered[c.Lesson] = append(covered[c.Lesson], c.ID)
		for _, a := range c.Also {
			covered[a.Ref] = append(covered[a.Ref], c.ID)
		}
	}
	sections := 0
	for _, l := range course.Lessons {
		if l.Kind != lessons.KindLesson {
			continue
		}
		for _, s := range l.Sections {
			sections++
			ref := l.Slug + "#" + s.ID
			if len(covered[ref]) == 0 {
				t.Errorf("lesson section %s (%q) is practised by no challenge (lesson: or also:)", ref, s.Title)
			}
		}
	}
	if sections == 0 {
		t.Fatal("the course has no numbered lesson with sections: the test proves nothing")
	}
	if len(set.Challenges) < 10 {
		t.Errorf("%d challenges, want at least ten", len(set.Challenges))
	}
}

func TestTraceKeepsStepsSinceStart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	e := trace.Export{Namespace: "lab-x", Messages: []json.RawMessage{
		json.RawMessage(`{"seq":1,"time":"2026-01-01T11:59:59Z","type":"event","object":{"kind":"Database","name":"old"}}`),
		json.RawMessage(`{"seq":2,"time":"2026-01-01T12:00:01Z","type":"state","object":{"kind":"Database","name":"shop"},"state":{}}`),
		json.RawMessage(`{"seq":3,"time":"2026-01-01T12:00:02Z","type":"finalizer","object":{"kind":"Database","name":"shop"},"phase":"removed","database":"shop"}`),
	}}
	steps, err := judge.Trace(e, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].Seq != 3 || steps[0].Type != controller.StepFinalizer || steps[0].Phase != "removed" {
		t.Errorf("steps = %+v, want only seq 3", steps)
	}
	if after, _ := judge.TraceAfter(e, 3, time.Time{}); len(after) != 0 {
		t.Errorf("TraceAfter(3) = %+v, want nothing", after)
	}
	if all, _ := judge.TraceAfter(e, 0, time.Time{}); len(all) != 2 || all[0].Seq != 1 {
		t.Errorf("TraceAfter(0) = %+v, want seq 1 and 3", all)
	}
	if got := judge.LastSeq(e); got != 3 {
		t.Errorf("LastSeq = %d, want 3", got)
	}
	if _, err := judge.Trace(trace.Export{Namespace: "lab-x", Messages: []json.RawMessage{json.RawMessage(`{`)}}, t0); err == nil ||
		!strings.Contains(err.Error(), "message 0 of namespace lab-x") {
		t.Errorf("bad message: err = %v", err)
	}
}
