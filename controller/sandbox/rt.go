package sandbox

import (
	"fmt"
	"reflect"

	"github.com/traefik/yaegi/interp"
)

// rtExports is the package the rewritten code calls (rewrite.go), at
// rtPath. Learner code cannot import it: Check allows only the tables in
// symbols, and names starting with oplab are refused.
var rtExports = interp.Exports{rtPath + "/rt": {
	"Stringer":  reflect.ValueOf(rtStringer),
	"Recovered": reflect.ValueOf(rtRecovered),
}}

// rtStringer wraps a value of the learner's own type that has a String
// method for fmt. The interpreter passes fmt such a value bare, without
// its methods, so fmt printed its fields; as a fmt.Stringer it arrives in
// the interpreter's wrapper, whose String calls the learner's. The
// wrapper formats as fmt formats a Stringer: String for %v %s %q %x %X,
// the value itself for the other verbs (%d of a counted type).
func rtStringer(s fmt.Stringer) any { return stringer{s} }

type stringer struct{ s fmt.Stringer }

func (w stringer) Format(f fmt.State, verb rune) {
	switch verb {
	case 'v', 's', 'q', 'x', 'X':
		if verb == 'v' && f.Flag('#') {
			break
		}
		fmt.Fprintf(f, fmt.FormatString(f, verb), w.str())
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), w.bare())
}

// str calls String as fmt does: a panic in it is printed, and a nil
// pointer whose String panics prints <nil>.
func (w stringer) str() (s string) {
	defer func() {
		if r := recover(); r != nil {
			if v := reflect.ValueOf(w.bare()); v.Kind() == reflect.Pointer && v.IsNil() {
				s = "<nil>"
				return
			}
			s = fmt.Sprintf("%%!v(PANIC=String method: %v)", r)
		}
	}()
	return w.s.String()
}

// bare is the value inside the interpreter's wrapper (its IValue field),
// or s itself.
func (w stringer) bare() any {
	v := reflect.ValueOf(w.s)
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("IValue"); f.IsValid() && f.CanInterface() {
			return f.Interface()
		}
	}
	return w.s
}

// rtRecovered is what recover returned, as Go's recover returns it: the
// interpreter hands it over in a reflect.Value.
func rtRecovered(v any) any {
	if rv, ok := v.(reflect.Value); ok {
		if !rv.IsValid() {
			return nil
		}
		if rv.CanInterface() {
			return rv.Interface()
		}
	}
	return v
}
