package judge

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// The fix-the-finalizer challenge: a Database of the learner's code deleted
// without a snapshot, then, fixed, one held by the learner's finalizer.
func init() {
	RegisterCheck("fix-the-finalizer/lost", checkYourSnapshotLost)
	RegisterCheck("fix-the-finalizer/kept", yourCode(both(checkFinalizedDelete, checkSnapshotKept), func(s controller.Step) bool {
		return s.Type == controller.StepFinalizer && s.Phase == "removed"
	}, "Your code has not removed its finalizer from a deleted Database yet."))
}

// unfinalized lists the Databases the learner's code created a StatefulSet
// for and never put a finalizer on, in the order they appear.
func unfinalized(trace []controller.Step) []string {
	var out []string
	seen, finalized := map[string]bool{}, map[string]bool{}
	for _, s := range trace {
		if !s.YourCode {
			continue
		}
		if s.Type == controller.StepFinalizer && s.Phase == "added" {
			finalized[s.Database] = true
		}
		if s.Type == controller.StepAction && s.Action == "create" && s.Target != nil && s.Target.Kind == "StatefulSet" && !seen[s.Database] {
			seen[s.Database] = true
			out = append(out, s.Database)
		}
	}
	var lost []string
	for _, db := range out {
		if !finalized[db] {
			lost = append(lost, db)
		}
	}
	return lost
}

func checkYourSnapshotLost(ctx context.Context, env Env) (Result, error) {
	candidates := unfinalized(env.Trace)
	if len(candidates) == 0 {
		return Result{Detail: "Your code has not yet created a StatefulSet for a Database without a finalizer: run the pitfall's code and create one."}, nil
	}
	for _, name := range candidates {
		found, err := env.Get(ctx, name, &dbv1.Database{})
		if err != nil {
			return Result{}, err
		}
		if found {
			continue
		}
		kept, err := env.Get(ctx, controller.SnapshotName(name), &corev1.ConfigMap{})
		if err != nil {
			return Result{}, err
		}
		if !kept {
			return Result{Done: true, Detail: fmt.Sprintf("Database %s is gone and no snapshot %s was written.", name, controller.SnapshotName(name))}, nil
		}
	}
	return Result{Detail: fmt.Sprintf("Delete Database %s.", candidates[0])}, nil
}
