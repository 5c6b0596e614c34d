package learn

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/httpx"
)

// choiceOrder is the order the quiz page shows each question's choices in
// (quiz.Question.ChoiceOrder), afresh at each visit. Its seed travels in
// the form (the hidden field "order"), so the graded page shows the
// choices where the learner saw them. The zero value keeps them as written.
type choiceOrder struct {
	seed uint64
	set  bool
}

// freshOrder is a new order for a page about to be shown.
func freshOrder() choiceOrder { return choiceOrder{seed: rand.Uint64(), set: true} }

// parseOrder reads the form's field; a form without one (a page from
// before the shuffle) keeps the written order.
func parseOrder(v string) (choiceOrder, error) {
	if v == "" {
		return choiceOrder{}, nil
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return choiceOrder{}, fmt.Errorf("the form's field order is %q, not the number the quiz page wrote", httpx.Excerpt(v, 40))
	}
	return choiceOrder{seed: seed, set: true}, nil
}

// String is the form field's value, "" for the written order.
func (o choiceOrder) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatUint(o.seed, 10)
}

// of lists the written indexes of q's choices in the order shown.
func (o choiceOrder) of(q quiz.Question) []int {
	if !o.set {
		idx := make([]int, len(q.Choices))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	return q.ChoiceOrder(o.seed)
}
