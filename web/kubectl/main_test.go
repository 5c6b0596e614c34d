package kubectl

import (
	"os"
	"strings"
	"testing"
)

// TestMain runs this test binary as the terminal's child, or as the diff
// the child's kubectl diff starts, when asked to, as cmd/oplab's main does.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == ChildArg {
		os.Exit(RunChild(os.Stdin, os.Stdout))
	}
	if len(os.Args) == 4 && os.Args[3] == DiffArg {
		os.Exit(RunDiff(os.Args[1], os.Args[2], os.Stdout))
	}
	if probe := os.Getenv(probeEnv); probe != "" {
		os.Exit(runProbe(probe))
	}
	if len(os.Args) == 2 && strings.HasPrefix(os.Args[1], "fake-") {
		os.Exit(runFake(os.Args[1]))
	}
	os.Exit(m.Run())
}
