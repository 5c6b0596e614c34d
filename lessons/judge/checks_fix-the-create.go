package judge

import (
	"context"
	"fmt"

	"github.com/oplab-dev/oplab/controller"
)

// The fix-the-create challenge: the learner's code fails on AlreadyExists,
// then, fixed, succeeds twice in a row.
func init() {
	RegisterCheck("fix-the-create/failing", checkYourCreateFails)
	RegisterCheck("fix-the-create/fixed", checkYourReconcilesSucceed)
}

func checkYourCreateFails(_ context.Context, env Env) (Result, error) {
	for _, s := range env.Trace {
		if s.YourCode && s.Type == controller.StepAction && s.Action == "create" && s.Outcome == controller.OutcomeAlreadyExists {
			for _, r := range env.Trace {
				if r.YourCode && r.Type == controller.StepResult && r.Result == "error" && r.ReconcileID == s.ReconcileID {
					return Result{Done: true, Detail: fmt.Sprintf("Your reconcile of %s failed: its create of %s %s said AlreadyExists.",
						s.Database, s.Target.Kind, s.Target.Name)}, nil
				}
			}
		}
	}
	return Result{Detail: "None of your reconciles has failed on an AlreadyExists yet: run the pitfall's code and create a Database."}, nil
}

// checkYourReconcilesSucceed is done when, for some Database, the learner's
// last two reconciles ended without an error after one of theirs failed.
func checkYourReconcilesSucceed(_ context.Context, env Env) (Result, error) {
	type run struct {
		failedOnce bool
		okInARow   int
	}
	runs := map[string]*run{}
	for _, s := range env.Trace {
		if !s.YourCode || s.Type != controller.StepResult {
			continue
		}
		r := runs[s.Database]
		if r == nil {
			r = &run{}
			runs[s.Database] = r
		}
		if s.Result == "error" {
			r.failedOnce, r.okInARow = true, 0
			continue
		}
		if r.failedOnce {
			r.okInARow++
		}
	}
	for db, r := range runs {
		if r.okInARow >= 2 {
			return Result{Done: true, Detail: fmt.Sprintf("Your last %d reconciles of %s ended without an error.", r.okInARow, db)}, nil
		}
	}
	return Result{Detail: "Your code has not yet reconciled a Database twice in a row without an error since it failed."}, nil
}
