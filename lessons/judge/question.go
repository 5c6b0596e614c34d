package judge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/oplab-dev/oplab/quiz"
)

// ErrNoTask is Answer's error for a task the challenge does not have.
var ErrNoTask = errors.New("no such task")

// Answered is the verdict on an answer to a question task.
type Answered struct {
	Correct bool
	// Detail says what was wrong without giving the answer away, or, once
	// right, the question's explanation.
	Detail string
}

// Answer grades picked (choice indexes) for question task taskID. It is
// the quiz's own grading: right only when picked is exactly the correct
// choices. A wrong answer says how many picks were wrong and how many right
// ones are missing, and not which: the learner tries again. An error names
// what is wrong with the request (no such task, a task checked against the
// cluster, a choice out of range, nothing picked). Answer does not know
// what the learner has done: a caller refuses a task that Evaluate finds
// locked before it asks.
func (c *Challenge) Answer(taskID string, picked []int) (Answered, error) {
	i := slices.IndexFunc(c.Tasks, func(t Task) bool { return t.ID == taskID })
	if i < 0 {
		return Answered{}, fmt.Errorf("challenge %s has no task %q: %w", c.ID, taskID, ErrNoTask)
	}
	t := c.Tasks[i]
	if t.Question == nil {
		return Answered{}, fmt.Errorf("task %q of challenge %s is checked against your namespace, not answered", taskID, c.ID)
	}
	g, err := quiz.GradeOne(*t.Question, picked)
	if err != nil {
		return Answered{}, err
	}
	if g.Correct {
		return Answered{Correct: true, Detail: rightDetail(t.Question)}, nil
	}
	right := t.Question.Correct()
	var wrong, missed int
	for _, p := range g.Picked {
		if !slices.Contains(right, p) {
			wrong++
		}
	}
	for _, r := range right {
		if !slices.Contains(g.Picked, r) {
			missed++
		}
	}
	var parts []string
	switch {
	case wrong == 1:
		parts = append(parts, "one of your picks is wrong")
	case wrong > 1:
		parts = append(parts, fmt.Sprintf("%d of your picks are wrong", wrong))
	}
	switch {
	case missed == 1:
		parts = append(parts, "one right choice is missing")
	case missed > 1:
		parts = append(parts, fmt.Sprintf("%d right choices are missing", missed))
	}
	return Answered{Detail: "Not yet: " + strings.Join(parts, ", and ") + ". Read the hints and try again."}, nil
}

// rightDetail is what a question task says once answered right, on the
// answer and on every evaluation after it.
func rightDetail(q *quiz.Question) string { return "Right. " + q.Explanation }
