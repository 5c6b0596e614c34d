package challenges

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/web/learn"
)

// A question task shows its choices in an order of the learner's own: the
// same at each of their visits (a no-JS answer draws the page again), not
// the same for every learner, each choice keeping its written value.
func TestQuestionChoicesInTheLearnersOwnOrder(t *testing.T) {
	content, err := learn.LoadContent()
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{opts: Options{Course: content.Course, Set: content.Challenges}}
	values := func(ns string) map[string]string {
		out := map[string]string{}
		for _, c := range content.Challenges.Challenges {
			for _, tv := range h.pageView(c, ns, time.Time{}, "").Tasks {
				if tv.Question == nil {
					continue
				}
				for _, ch := range tv.Question.Choices {
					out[c.ID+"/"+tv.ID] += ch.Value + " "
				}
			}
		}
		return out
	}
	first := values("lab-a")
	if len(first) == 0 {
		t.Fatal("no challenge has a question task: the test proves nothing")
	}
	if again := values("lab-a"); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("one learner's orders changed between visits: %v then %v", first, again)
	}
	differ := 0
	for i := range 8 {
		other := values(fmt.Sprintf("lab-%d", i))
		for task, order := range other {
			if order != first[task] {
				differ++
			}
			shown := slices.Sorted(slices.Values(strings.Fields(order)))
			if fmt.Sprint(shown) != fmt.Sprint(slices.Sorted(slices.Values(strings.Fields(first[task])))) {
				t.Errorf("%s: learner %d sees choices %q, learner a %q: not the same choices", task, i, order, first[task])
			}
		}
	}
	if differ == 0 {
		t.Errorf("eight learners all see the choices in learner a's order %v: not shuffled", first)
	}
}
