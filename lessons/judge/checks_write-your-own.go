package judge

import (
	"context"
	"fmt"

	"github.com/oplab-dev/oplab/controller"
)

// The write-your-own challenge: the interview walk-through, each step
// done by the learner's own code (the trace marks its steps YourCode).
func init() {
	RegisterCheck("write-your-own/your-statefulset", yourCode(checkOwnedStatefulSet, func(s controller.Step) bool {
		return s.Type == controller.StepAction && s.Action == "create" && s.Target != nil && s.Target.Kind == "StatefulSet" &&
			(s.Outcome == controller.OutcomeCreated || s.Outcome == controller.OutcomeAlreadyExists)
	}, "Your code has not created a StatefulSet yet: press Run my code on the code page, then create a Database."))
	RegisterCheck("write-your-own/your-ready", yourCode(checkConnectionInfo, func(s controller.Step) bool {
		return s.Type == controller.StepStatus && s.Error == "" && !s.Skipped
	}, "Your code has not written the Database's status yet."))
	RegisterCheck("write-your-own/your-finalizer", yourCode(both(checkFinalizedDelete, checkSnapshotKept), func(s controller.Step) bool {
		return s.Type == controller.StepFinalizer && s.Phase == "removed"
	}, "Your code has not removed its finalizer from a deleted Database yet."))
}

// yourCode is check, done only once the trace shows the learner's code did
// the step mine recognises: oplab's own controller doing it does not count.
func yourCode(check Check, mine func(controller.Step) bool, notYet string) Check {
	return func(ctx context.Context, env Env) (Result, error) {
		did := false
		for _, s := range env.Trace {
			if s.YourCode && mine(s) {
				did = true
				break
			}
		}
		if !did {
			return Result{Detail: notYet}, nil
		}
		r, err := check(ctx, env)
		if err != nil || !r.Done {
			return r, err
		}
		r.Detail = fmt.Sprintf("Your code: %s", r.Detail)
		return r, nil
	}
}

// both is done when a and b are.
func both(a, b Check) Check {
	return func(ctx context.Context, env Env) (Result, error) {
		r, err := a(ctx, env)
		if err != nil || !r.Done {
			return r, err
		}
		return b(ctx, env)
	}
}
