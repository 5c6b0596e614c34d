package refused

// DeferFunctionValue defers a function value the function made: the
// interpreter waits for ever.
func DeferFunctionValue() (out string) {
	func() {
		cleanup := func() { out += "cleaned" }
		defer cleanup() // sandbox: a function value this function made
		out += "worked "
	}()
	return out
}
