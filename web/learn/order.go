package learn

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	"github.com/oplab-dev/oplab/web/httpx"
)

// choiceOrder is the order a quiz page shows each question's choices in,
// shuffled afresh at each visit: a learner taking the quiz again should
// remember the answer, not its place. The seed travels in the form (the
// hidden field "order"), so the graded page shows the choices where the
// learner saw them. Choices keep their written index as their value, so
// grading, the script and the browser's record never see the shuffle.
// The zero value keeps them as written.
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

// of lists the written indexes of question id's n choices in the order
// shown; each question has its own order under one seed.
func (o choiceOrder) of(id string, n int) []int {
	if !o.set {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return rand.New(rand.NewPCG(o.seed, h.Sum64())).Perm(n)
}
