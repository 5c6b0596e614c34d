package conformance

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AssignFieldsWithCall is issue 51's case: a condition's fields set in one
// assignment with a call among the values.
func AssignFieldsWithCall() string {
	c := &metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Before"}
	n := 3
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, "After", fmt.Sprintf("%d/%d", n, n)
	return fmt.Sprint(c.Status, " ", c.Reason, " ", c.Message)
}

// AssignFieldsConstants is the same with constants only.
func AssignFieldsConstants() string {
	var c metav1.Condition
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, "After", "3/3"
	return fmt.Sprint(c.Status, " ", c.Reason, " ", c.Message)
}

// AssignValueThenCall puts a call after a plain value.
func AssignValueThenCall() string {
	f := func() int { return 7 }
	x, y := 0, 0
	x, y = 1, f()
	var a, b string
	a, b = "a", strconv.Itoa(f())
	var p, q int
	p, q = f(), 2
	return fmt.Sprint(x, y, a, b, p, q)
}

// AssignTwoCalls has calls on both sides.
func AssignTwoCalls() string {
	n := 0
	next := func() int { n++; return n }
	a, b := 0, 0
	a, b = next(), next()
	c, d := next(), next()
	return fmt.Sprint(a, b, c, d)
}

// AssignSwaps exchanges variables, slice elements and fields.
func AssignSwaps() string {
	a, b := 1, 2
	a, b = b, a
	s := []int{1, 2, 3}
	s[0], s[2] = s[2], s[0]
	type pair struct{ x, y string }
	p := pair{"x", "y"}
	p.x, p.y = p.y, p.x
	m := map[string]int{"a": 1, "b": 2}
	m["a"], m["b"] = m["b"], m["a"]
	return fmt.Sprint(a, b, s, p, m["a"], m["b"])
}

// AssignTupleFromCall takes two results of one call, a comma-ok map read
// and a conversion result.
func AssignTupleFromCall() string {
	f := func() (int, string) { return 4, "four" }
	var n int
	var s string
	n, s = f()
	m := map[string]int{"a": 1}
	v, ok := m["a"]
	var w int
	var ok2 bool
	w, ok2 = m["b"]
	i, err := strconv.Atoi("x")
	return fmt.Sprint(n, s, v, ok, w, ok2, i, err != nil)
}

// AssignIndexEvaluatedFirst checks that index operands on the left are
// evaluated before any assignment happens.
func AssignIndexEvaluatedFirst() string {
	s := []int{0, 0, 0}
	i := 0
	i, s[i] = 1, 9
	m := map[int]string{}
	k := 1
	k, m[k] = 2, "one"
	return fmt.Sprint(i, s, k, m)
}

// AssignThroughPointers checks that a pointer on the left is the one it was
// before the assignment.
func AssignThroughPointers() string {
	type box struct{ n int }
	p := &box{}
	old := p
	p, p.n = &box{n: 1}, 5
	return fmt.Sprint(old.n, p.n)
}

// AssignDefineMixed redeclares one name and declares another, the right
// side read before either is set.
func AssignDefineMixed() string {
	a := 1
	a, b := 2, strconv.Itoa(a)
	c, a := a*10, a+1
	return fmt.Sprint(a, b, c)
}

// AssignOps covers op-assignments and increments of map entries and
// fields.
func AssignOps() string {
	m := map[string]int{}
	m["a"]++
	m["a"] += 4
	type counter struct{ n int }
	c := &counter{}
	c.n += len(m)
	c.n <<= 2
	s := "x"
	s += strconv.Itoa(c.n)
	return fmt.Sprint(m["a"], c.n, s)
}

// AssignIntoConditions sets a condition found in a slice, by index, with a
// call among the values, as a status update does.
func AssignIntoConditions() string {
	conds := []metav1.Condition{{Type: "Ready"}, {Type: "Progressing"}}
	for i := range conds {
		conds[i].Status, conds[i].Message = metav1.ConditionTrue, fmt.Sprint("n=", i)
	}
	return fmt.Sprint(conds[0].Status, conds[0].Message, conds[1].Status, conds[1].Message)
}

// AssignInStatementSlots assigns two values in a for's post statement and
// an if's init statement.
func AssignInStatementSlots() string {
	s := []int{1, 2, 3, 4, 5}
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	var a, b int
	next := func() int { return len(s) }
	if a, b = next(), 1; a > b {
		return fmt.Sprint(s, a, b)
	}
	return "no"
}
