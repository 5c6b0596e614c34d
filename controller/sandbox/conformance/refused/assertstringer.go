package refused

import "fmt"

type badge struct{ text string }

func (b badge) String() string { return "badge " + b.text }

// AssertOwnStringer takes a type of the code's own with a String method
// out of an any as a fmt.Stringer.
func AssertOwnStringer() string {
	var v any = badge{"x"}
	if s, ok := v.(fmt.Stringer); ok { // sandbox: does not always keep the methods of
		return s.String()
	}
	return "not a Stringer"
}
