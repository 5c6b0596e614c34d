package refused

import "fmt"

type phase string

// AssertLookalike asserts an interface holding a phase to string: false
// in Go, true in the interpreter.
func AssertLookalike() string {
	var v any = phase("Ready")
	_, isString := v.(string) // sandbox: cannot tell string from
	return fmt.Sprint(isString)
}
