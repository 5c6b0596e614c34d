package judge

import (
	"context"
	"fmt"
)

// The code exercises end in a test of the learner's own reconciler: the
// tester runs it through a Database's ordinary life and the faults the
// field's testers use on real operators (controller/tester), and must find
// nothing. What the trace shows is one schedule, the one that happened;
// the test is every other.
func init() {
	RegisterCheck("code/tested", checkTested)
}

func checkTested(_ context.Context, env Env) (Result, error) {
	switch t := env.Tested; {
	case t == nil:
		return Result{Detail: "No test of your code yet since Start: press Test my code on the code page."}, nil
	case t.Passed:
		return Result{Done: true, Detail: fmt.Sprintf("Your code passed every one of the tester's %d schedules.", t.Schedules)}, nil
	default:
		first := ""
		if len(t.Findings) > 0 {
			first = " The first: " + t.Findings[0] + "."
		}
		return Result{Detail: fmt.Sprintf("Your latest test found %d problem(s) in %d schedule(s): fix your code and test it again.%s",
			len(t.Findings), t.Schedules, first)}, nil
	}
}
