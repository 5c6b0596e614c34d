package conformance

import "fmt"

// The min and max builtins (Go 1.21), which the interpreter does not know.

// MinMax declares variables named after builtins and
// uses min, max and len.
func MinMax() string {
	lo, hi := min(3, 1, 2), max(3, 1, 2)
	f := func() string {
		len := 5
		new := "n"
		return fmt.Sprint(len, new)
	}
	return fmt.Sprint(lo, hi, f(), len("abc"), min(2.5, 1))
}
