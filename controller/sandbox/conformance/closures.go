package conformance

import (
	"fmt"
	"strings"
)

// ClosuresForLoop captures a three-clause loop's variable: since Go 1.22
// each iteration has its own.
func ClosuresForLoop() string {
	var fs []func() int
	for i := 0; i < 3; i++ {
		fs = append(fs, func() int { return i })
	}
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprint(f()))
	}
	return strings.Join(out, ",")
}

// ClosuresRangeLoop captures a range loop's key and value.
func ClosuresRangeLoop() string {
	var fs []func() string
	for i, name := range []string{"a", "b", "c"} {
		fs = append(fs, func() string { return fmt.Sprint(i, name) })
	}
	var out []string
	for _, f := range fs {
		out = append(out, f())
	}
	return strings.Join(out, ",")
}

// ClosuresLoopPointers takes the address of a loop variable.
func ClosuresLoopPointers() string {
	var ps []*string
	for _, name := range []string{"a", "b", "c"} {
		ps = append(ps, &name)
	}
	var qs []*int
	for i := 0; i < 3; i++ {
		qs = append(qs, &i)
	}
	return fmt.Sprint(*ps[0], *ps[1], *ps[2], *qs[0], *qs[1], *qs[2])
}

// ClosuresLoopVarChangedInBody changes a captured loop variable in the
// body: the change carries into the next iteration's copy.
func ClosuresLoopVarChangedInBody() string {
	var fs []func() int
	for i := 0; i < 6; i++ {
		fs = append(fs, func() int { return i })
		i++
	}
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprint(f()))
	}
	return strings.Join(out, ",")
}

// ClosuresCounter keeps state in a captured variable.
func ClosuresCounter() string {
	next := func() func() int {
		n := 0
		return func() int { n++; return n }
	}()
	next()
	next()
	shared := 0
	inc := func() { shared += 10 }
	inc()
	inc()
	return fmt.Sprint(next(), shared)
}

// ClosuresRecursive calls itself through a variable.
func ClosuresRecursive() string {
	var fib func(int) int
	fib = func(n int) int {
		if n < 2 {
			return n
		}
		return fib(n-1) + fib(n-2)
	}
	return fmt.Sprint(fib(15))
}

// ClosuresDeferInLoop defers a call per iteration, the loop's variable
// passed as an argument.
func ClosuresDeferInLoop() (out string) {
	func() {
		for i := 0; i < 3; i++ {
			defer func(n int) { out += fmt.Sprint(n) }(i)
		}
	}()
	return out
}
