package conformance

import (
	"fmt"
	"strconv"
	"strings"
)

type counter struct{ n int }

func (c counter) get() int { return c.n }

func (c *counter) inc() { c.n++ }

// CombosDeferredAssign assigns two values inside a deferred literal, the
// values computed by calls, into the named results.
func CombosDeferredAssign() string {
	f := func() (a, b string) {
		defer func() {
			a, b = strings.ToUpper(a), b+strconv.Itoa(len(a))
		}()
		return "x", "y"
	}
	a, b := f()
	return a + b
}

// CombosDeferInLoopWithMethodValue defers a call per iteration whose
// argument is a method value, bound at the defer.
func CombosDeferInLoopWithMethodValue() (out string) {
	run := func(f func() int) { out += fmt.Sprint(f()) }
	func() {
		c := counter{}
		for i := 0; i < 3; i++ {
			c.inc()
			defer run(c.get)
		}
	}()
	return out
}

// CombosTypeSwitchInLoop switches on the loop's value inside a closure
// per iteration.
func CombosTypeSwitchInLoop() string {
	var fs []func() string
	for i, v := range []any{1, "two", 3.0} {
		fs = append(fs, func() string {
			switch x := v.(type) {
			case int:
				return fmt.Sprint(i, "int", x+1)
			case string:
				return fmt.Sprint(i, "string", len(x))
			}
			return fmt.Sprint(i, "other")
		})
	}
	var out []string
	for _, f := range fs {
		out = append(out, f())
	}
	return strings.Join(out, ",")
}

// CombosLabelledTypeSwitch breaks out of a labelled type switch with an
// init statement from inside a loop in one of its cases.
func CombosLabelledTypeSwitch() string {
	n := 0
	var v any = []int{1, 2, 3, 4}
sw:
	switch s := v; xs := s.(type) {
	case []int:
		for _, x := range xs {
			if x > 2 {
				break sw
			}
			n += x
		}
		n = -1
	}
	return fmt.Sprint(n)
}

// CombosAssignWithMethodCallsOnTheLeft assigns to map entries whose keys
// are computed by calls, and swaps through method values.
func CombosAssignWithMethodCallsOnTheLeft() string {
	m := map[string]int{}
	c := &counter{}
	key := func() string { c.inc(); return strconv.Itoa(c.n) }
	m[key()], m[key()] = c.get(), c.n*10
	get := c.get
	a, b := 0, 0
	a, b = get(), len(m)
	return fmt.Sprint(m["1"], m["2"], a, b)
}

// CombosMultilineDefer defers a call whose arguments span lines.
func CombosMultilineDefer() (out string) {
	record := func(parts []string, sep string) { out = strings.Join(parts, sep) }
	func() {
		name := "shop"
		defer record([]string{
			name,
			strconv.Itoa(len(name)),
		}, "/")
		name = "changed"
	}()
	return out
}

// CombosCapturedLoopWithTwoVars captures both variables of a loop whose
// post statement assigns them together, and changes one in the body.
func CombosCapturedLoopWithTwoVars() string {
	var fs []func() int
	for i, j := 0, 6; i < j; i, j = i+1, j-1 {
		fs = append(fs, func() int { return i*10 + j })
		if i == 1 {
			j--
		}
	}
	var out []string
	for _, f := range fs {
		out = append(out, strconv.Itoa(f()))
	}
	return strings.Join(out, ",")
}

// CombosMethodValueLast ends an assignment of two values, and a deferred
// call, with a method value, bound where it is written.
func CombosMethodValueLast() (out string) {
	c := counter{n: 1}
	var n int
	var get func() int
	n, get = len(out), c.get
	c.n = 2
	func() {
		defer show(&out, n, c.get)
		c.n = 3
	}()
	return out + fmt.Sprint(n, get())
}

func show(out *string, a int, f func() int) { *out += fmt.Sprint(a, f(), ";") }
