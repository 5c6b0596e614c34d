package conformance

import (
	"fmt"
	"strings"
)

func joinAll(sep string, parts ...string) string {
	return fmt.Sprint(len(parts), ":", strings.Join(parts, sep))
}

func sum(ns ...int) (total int) {
	for _, n := range ns {
		total += n
	}
	return total
}

// VariadicCalls calls variadic functions with none, some and a spread
// slice.
func VariadicCalls() string {
	parts := []string{"a", "b"}
	return fmt.Sprint(joinAll("-"), " ", joinAll("-", "x"), " ", joinAll("-", parts...), " ", sum(), sum(1, 2, 3))
}

// VariadicAppend appends a spread slice and a string's bytes.
func VariadicAppend() string {
	a := []int{1}
	b := []int{2, 3}
	a = append(a, b...)
	bs := append([]byte("ab"), "cd"...)
	var anys []any
	anys = append(anys, 1, "x", nil)
	return fmt.Sprint(a, string(bs), len(anys), fmt.Sprint(anys...))
}

// VariadicAnyForwarding forwards ...any to fmt.
func VariadicAnyForwarding() string {
	logf := func(format string, args ...any) string {
		return fmt.Sprintf("["+format+"]", args...)
	}
	return logf("%s=%d", "replicas", 3) + logf("none")
}

// VariadicFuncValue passes a variadic function as a value.
func VariadicFuncValue() string {
	f := sum
	apply := func(g func(...int) int, xs []int) int { return g(xs...) }
	return fmt.Sprint(f(4, 5), apply(sum, []int{1, 1}))
}
