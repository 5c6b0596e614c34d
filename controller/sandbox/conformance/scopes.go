package conformance

import (
	"errors"
	"fmt"
	"strconv"
)

// ScopesShadowedErr declares a new err in an inner scope; the outer one
// stays as it was.
func ScopesShadowedErr() string {
	var err error
	if true {
		_, err := strconv.Atoi("x")
		_ = err
	}
	n, err := strconv.Atoi("12")
	if err == nil {
		n, err := strconv.Atoi("y")
		_ = n
		if err == nil {
			return "inner"
		}
	}
	return fmt.Sprint(n, err)
}

// ScopesIfElseChain uses if-statement variables in else branches.
func ScopesIfElseChain() string {
	find := func(s string) (int, error) {
		if s == "" {
			return 0, errors.New("empty")
		}
		return len(s), nil
	}
	var out string
	for _, s := range []string{"", "abc"} {
		if n, err := find(s); err != nil {
			out += "err:" + err.Error()
		} else if n > 2 {
			out += fmt.Sprint("long:", n)
		} else {
			out += fmt.Sprint("short:", n)
		}
		out += ";"
	}
	return out
}

// ScopesNamedResultShadow shadows a named result in a block.
func ScopesNamedResultShadow() string {
	f := func() (x int) {
		x = 1
		{
			x := 2
			x++
		}
		return
	}
	return fmt.Sprint(f())
}
