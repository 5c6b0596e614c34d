package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

// FuzzCompile feeds arbitrary source through the parent's whole compile
// path (Check in the parent; the type checker, the rewrites and the
// interpreter in a child): whatever the input, the parent gets an answer
// or a SourceError, and never panics.
func FuzzCompile(f *testing.F) {
	for _, st := range starters.All {
		f.Add(starters.Source(st.ID))
	}
	// The conformance corpus, as learner code: every rewrite and refusal
	// has a seed to mutate.
	for _, dir := range []string{conformanceDir, refusedDir} {
		for _, cf := range readCorpus(f, dir) {
			f.Add(cf.asLearnerCode())
		}
	}
	f.Add("package controller\nimport \"os\"\n")
	f.Add("package controller\nfunc init() { for {} }\n")
	f.Add("package")
	f.Add("\x00\xff")
	f.Add(learner("", "\treturn ctrl.Result{}, nil"))
	s := &Sandbox{Command: func() *exec.Cmd { return exec.Command(os.Args[0], ChildArg) }}
	f.Cleanup(s.Close)
	f.Fuzz(func(t *testing.T, src string) {
		serr := s.Compile(context.Background(), src)
		if serr != nil && serr.Message == "" {
			t.Fatalf("an error without a message for %q", src)
		}
		// The type checker or a rewrite panicked, or a rewrite produced
		// what does not parse: the sandbox's bug.
		if serr != nil && strings.HasPrefix(serr.Message, "the sandbox failed checking your code") {
			t.Fatalf("%v for %q", serr, src)
		}
	})
}
