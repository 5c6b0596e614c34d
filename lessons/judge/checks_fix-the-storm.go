package judge

import (
	"context"
	"fmt"

	"github.com/oplab-dev/oplab/controller"
)

// The fix-the-storm challenge: the learner's code rewrites status without
// a change (timestampOnly, checks_status-storm.go), then, fixed, skips the
// write.
func init() {
	RegisterCheck("fix-the-storm/storm", checkYourStorm)
	RegisterCheck("fix-the-storm/quiet", checkYourQuiet)
}

// stormsOf counts, per Database, the learner's rewrites.
func stormsOf(trace []controller.Step) map[string]int {
	n := map[string]int{}
	for _, s := range trace {
		if s.YourCode && timestampOnly(s) {
			n[s.Database]++
		}
	}
	return n
}

// stormAt is how many rewrites make a storm.
const stormAt = 3

func checkYourStorm(_ context.Context, env Env) (Result, error) {
	for db, n := range stormsOf(env.Trace) {
		if n >= stormAt {
			return Result{Done: true, Detail: fmt.Sprintf("Your code rewrote %s's status %d times without a change.", db, n)}, nil
		}
	}
	return Result{Detail: "Your code has not rewritten a status without a change yet: run the pitfall's code and create a Database."}, nil
}

// checkYourQuiet is done when, after a storm, one of the learner's
// reconciles of that Database skipped its status write.
func checkYourQuiet(_ context.Context, env Env) (Result, error) {
	rewrites := map[string]int{}
	for _, s := range env.Trace {
		if !s.YourCode {
			continue
		}
		if timestampOnly(s) {
			rewrites[s.Database]++
			continue
		}
		if s.Type == controller.StepStatus && s.Skipped && rewrites[s.Database] >= stormAt {
			return Result{Done: true, Detail: fmt.Sprintf("Your code found %s's status unchanged and skipped the write.", s.Database)}, nil
		}
	}
	return Result{Detail: "None of your reconciles has skipped an unchanged status write since the storm."}, nil
}
