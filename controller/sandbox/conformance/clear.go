package conformance

import "fmt"

// The clear builtin (Go 1.21), which the interpreter does not know.

// ClearAMap uses a struct as key and the clear builtin.
func ClearAMap() string {
	type key struct {
		ns, name string
	}
	m := map[key]int{{"a", "b"}: 1}
	m[key{"a", "b"}]++
	m[key{"c", "d"}] = 7
	before := len(m)
	v := m[key{"a", "b"}]
	clear(m)
	return fmt.Sprint(before, v, len(m))
}
