package refused

import (
	"errors"
	"fmt"
)

type retryError struct { // sandbox: error type of your own
	after int
}

func (e *retryError) Error() string { return fmt.Sprintf("retry after %ds", e.after) }

// ErrorTypeAs finds an error type of the code's own in a chain (the
// interpreter's errors.As panics).
func ErrorTypeAs() string {
	var err error = fmt.Errorf("wrap: %w", &retryError{after: 5})
	var re *retryError
	ok := errors.As(err, &re)
	return fmt.Sprint(ok, " ", err)
}

// ErrorTypeNilPointer returns a nil *retryError as an error: not nil in
// Go, nil in the interpreter.
func ErrorTypeNilPointer() string {
	f := func() error {
		var re *retryError
		return re
	}
	return fmt.Sprint(f() != nil)
}
