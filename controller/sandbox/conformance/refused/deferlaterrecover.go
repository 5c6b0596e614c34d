package refused

import "fmt"

// DeferLaterRecoverer defers, in a function literal, a function declared
// further down that recovers: the interpreter would drop the call, and a
// rewrite that keeps it would stop it recovering.
func DeferLaterRecoverer() (out string) {
	func() {
		defer recoverInto(&out) // sandbox: declare recoverInto above this function
		panic("boom")
	}()
	return out
}

func recoverInto(out *string) {
	if r := recover(); r != nil {
		*out = fmt.Sprint("recovered ", r)
	}
}
