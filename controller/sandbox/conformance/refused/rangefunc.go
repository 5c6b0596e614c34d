package refused

import "fmt"

func upTo(n int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := 0; i < n; i++ {
			if !yield(i) {
				return
			}
		}
	}
}

// RangeOverFunc ranges over an iterator function.
func RangeOverFunc() string {
	sum := 0
	for v := range upTo(4) { // sandbox: range over a function
		sum += v
	}
	return fmt.Sprint(sum)
}
