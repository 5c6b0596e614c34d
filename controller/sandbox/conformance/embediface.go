package conformance

import "fmt"

// Methods promoted from an embedded interface, which the interpreter
// panics on when called through the outer value.

type sizer interface{ size() int }

type fixed struct{ n int }

func (f *fixed) size() int { return f.n }

type sized struct {
	sizer
	label string
}

type wrapper struct{ sized }

// EmbeddingInterface calls methods promoted from an embedded interface of
// the code's own: directly, one level further, as a method value and a
// method expression, deferred, and through the interface.
func EmbeddingInterface() (out string) {
	s := sized{sizer: &fixed{3}, label: "s"}
	w := &wrapper{sized{sizer: &fixed{4}}}
	f := s.size
	g := sized.size
	func() {
		defer func(n int) { out += fmt.Sprint(" deferred ", n) }(w.size())
	}()
	var i sizer = s
	return fmt.Sprint(s.size(), w.size(), f(), g(s), i.size(), s.label) + out
}
