package refused

import "fmt"

func mapInts[T any](xs []int, f func(int) T) []T { // sandbox: is generic
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// GenericInference infers a generic function's type argument from a
// function literal (the interpreter infers it wrongly).
func GenericInference() string {
	return fmt.Sprint(mapInts([]int{1, 2}, func(i int) string { return fmt.Sprint("n", i) }))
}
