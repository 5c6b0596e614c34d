package judge_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestDriftRepair deletes the StatefulSet as kubectl does (background
// propagation) and lets the controller repair it; independently of the
// checks, the Secret must be the same object afterwards (same UID, so the
// same password).
func TestDriftRepair(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "drift-repair", func(ctx context.Context, env judgetest.SolveEnv) error {
		var before corev1.Secret
		key := client.ObjectKey{Namespace: env.Namespace, Name: "shop-credentials"}
		if err := env.Learner.Get(ctx, key, &before); err != nil {
			return err
		}
		sts := &appsv1.StatefulSet{}
		sts.Namespace, sts.Name = env.Namespace, "shop"
		if err := env.Learner.Delete(ctx, sts, client.PropagationPolicy("Background")); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "delete-child"); err != nil {
			return err
		}
		// The repair is the first create of StatefulSet shop after the
		// delete event; the create before it (the Prepare's) is the wrong
		// row a learner may copy. Its ID is typed once its reconcile has
		// ended, as a learner reads it off the finished row: the create's
		// step comes before the reconcile's result, and the check waits for
		// that (typed in between, in CI, the answer was refused "not yet").
		var original, repair string
		if _, err := readUntil(ctx, "the repair's reconcile to end", func(context.Context) (string, error) {
			deleted := false
			repair = ""
			for _, s := range env.Trace() {
				switch {
				case s.Type == controller.StepEvent && s.Object.Kind == "StatefulSet" && s.Event == "delete":
					deleted = true
				case s.Type == controller.StepAction && s.Action == "create" && s.Target != nil && s.Target.Kind == "StatefulSet" && s.Outcome == controller.OutcomeCreated:
					if deleted && repair == "" {
						repair = s.ReconcileID
					} else if !deleted {
						original = s.ReconcileID
					}
				case s.Type == controller.StepResult && repair != "" && s.ReconcileID == repair:
					return repair, nil
				}
			}
			return "", nil
		}); err != nil {
			return err
		}
		wrong := "#deadbeef"
		if original != "" {
			wrong = rowID(original)
		}
		if err := judgetest.SolveInput(ctx, env, "one-reconcile", wrong, rowID(repair)); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "ready-again"); err != nil {
			return err
		}
		var after corev1.Secret
		if err := env.Learner.Get(ctx, key, &after); err != nil {
			return err
		}
		if after.UID != before.UID {
			return fmt.Errorf("secret shop-credentials was replaced during the repair: uid %s, then %s", before.UID, after.UID)
		}
		return nil
	})
}
