package conformance

import (
	"errors"
	"fmt"
)

// DeferOrder runs deferred calls last in, first out, with their arguments
// evaluated at the defer.
func DeferOrder() string {
	var out []string
	func() {
		x := 1
		defer func(v int) { out = append(out, fmt.Sprint("arg", v)) }(x)
		defer func() { out = append(out, fmt.Sprint("closure", x)) }()
		x = 2
	}()
	return fmt.Sprint(out)
}

// DeferNamedResult changes a named result after return.
func DeferNamedResult() string {
	f := func() (n int, err error) {
		defer func() {
			if err != nil {
				n = -1
				err = fmt.Errorf("wrapped: %w", err)
			}
		}()
		return 5, errors.New("boom")
	}
	n, err := f()
	g := func() (n int) {
		defer func() { n *= 2 }()
		n = 3
		return n + 1
	}
	return fmt.Sprint(n, err, g())
}

// DeferRecover turns a panic into an error.
func DeferRecover() string {
	f := func(i int) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("recovered: %v", r)
			}
		}()
		s := []int{1, 2, 3}
		_ = s[i]
		if i == 1 {
			panic("one")
		}
		return nil
	}
	return fmt.Sprint(f(0), "|", f(1), "|", f(5) != nil)
}

// DeferRecoverValue recovers an error value and checks it.
func DeferRecoverValue() string {
	sentinel := errors.New("sentinel")
	f := func() (ok bool) {
		defer func() {
			r := recover()
			err, isErr := r.(error)
			ok = isErr && errors.Is(err, sentinel)
		}()
		panic(fmt.Errorf("wrap: %w", sentinel))
	}
	return fmt.Sprint(f())
}

// DeferMethodValue defers a method call whose receiver is evaluated at
// the defer.
func DeferMethodValue() string {
	var log []string
	add := func(s string) { log = append(log, s) }
	type step struct{ name string }
	run := func() {
		s := step{"first"}
		defer add(s.name)
		s.name = "second"
		add(s.name)
	}
	run()
	return fmt.Sprint(log)
}

// DeferRecoverRuntimeError recovers a runtime error and reads it as an
// error.
func DeferRecoverRuntimeError() string {
	f := func() (msg string) {
		defer func() {
			if err, ok := recover().(error); ok {
				msg = "error: " + err.Error()
			}
		}()
		var m map[string]int
		m["x"] = 1
		return "no panic"
	}
	return f()
}

// DeferInLiteralOfLaterFunction defers, in a function literal, calls of a
// function and a method declared further down the file.
func DeferInLiteralOfLaterFunction() (out string) {
	func() {
		n := noter{prefix: "m"}
		defer appendNote(&out, "f")
		defer n.note(&out, "1")
		out += "body;"
	}()
	return out
}

type noter struct{ prefix string }

func (n noter) note(out *string, s string) { *out += n.prefix + s + ";" }

func appendNote(out *string, s string) { *out += s + ";" }
