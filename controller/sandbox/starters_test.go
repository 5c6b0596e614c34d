package sandbox

import (
	"context"
	"testing"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

// Every starting point the code page offers compiles in a real child.
func TestStartersCompile(t *testing.T) {
	s := testSandbox(t)
	for _, st := range starters.All {
		src := starters.Source(st.ID)
		if src == "" {
			t.Errorf("starter %s has no source", st.ID)
			continue
		}
		if serr := s.Compile(context.Background(), src); serr != nil {
			t.Errorf("starter %s: %v", st.ID, serr)
		}
	}
}
