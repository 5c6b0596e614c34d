package sandbox

import (
	"fmt"
	"testing"
)

// fmtVerbs pairs each verb with its operand as fmt does.
func TestFmtVerbs(t *testing.T) {
	for _, tt := range []struct {
		format string
		want   string
	}{
		{"%v %d", "v0 d1"},
		{"100%% %+v %#v %T", "+v0 #v1 T2"},
		{"%*d %-*.*f %s", "d1 f4 s5"},
		{"%5.2f|%-8s|%x", "f0 s1 x2"},
		{"%[2]v %v", ""},
		{"%v %[1]v", "v0"},
		{"trailing %", ""},
		{"%é", "é0"},
	} {
		var got string
		for i, v := range fmtVerbs(tt.format) {
			if i > 0 {
				got += " "
			}
			if v.plus {
				got += "+"
			}
			if v.sharp {
				got += "#"
			}
			got += fmt.Sprintf("%c%d", v.verb, v.arg)
		}
		if got != tt.want {
			t.Errorf("fmtVerbs(%q) = %q, want %q", tt.format, got, tt.want)
		}
	}
}
