package conformance

import (
	"fmt"
	"strings"
)

// Range over an integer (Go 1.22), which the interpreter does not know.

// RangeIntCaptured ranges over an integer (Go 1.22).
func RangeIntCaptured() string {
	var fs []func() int
	for i := range 3 {
		fs = append(fs, func() int { return i * 10 })
	}
	sum := 0
	for _, f := range fs {
		sum += f()
	}
	return fmt.Sprint(sum)
}

// RangeIntForms ranges over a typed count, without a variable,
// and assigns to an existing variable.
func RangeIntForms() string {
	var replicas int32 = 3
	var got []int32
	for r := range replicas {
		got = append(got, r)
	}
	n := 0
	for range 4 {
		n++
	}
	var last int
	for last = range 5 {
	}
	return fmt.Sprint(got, n, last)
}

// RangeIntNested nests ranges over integers, closures capturing
// both variables.
func RangeIntNested() string {
	var fs []func() string
	for i := range 2 {
		for j := range 2 {
			fs = append(fs, func() string { return fmt.Sprint(i, j) })
		}
	}
	var out []string
	for _, f := range fs {
		out = append(out, f())
	}
	return strings.Join(out, ",")
}
