package refused

import "fmt"

// DeferLiteralInLoop defers a function literal that uses the loop's
// variable: Go 1.22 gives each iteration its own, the interpreter makes
// the literal when the deferred calls run.
func DeferLiteralInLoop() (out string) {
	func() {
		for i := 0; i < 3; i++ {
			defer func() { out += fmt.Sprint(i) }() // sandbox: a variable of the loop around it
		}
	}()
	return out
}
