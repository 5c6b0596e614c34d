package judge_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestInterviewWalkthrough does the walk-through as a learner would: create,
// read each find-and-read answer off the timeline or with kubectl (after a
// wrong answer, refused with a hint), delete, read the snapshot's uid.
func TestInterviewWalkthrough(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "interview-walkthrough", func(ctx context.Context, env judgetest.SolveEnv) error {
		db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: env.Namespace}}
		if err := env.Learner.Create(ctx, db); err != nil {
			return err
		}
		create, err := traceUntil(ctx, env, "the create of StatefulSet shop", func(s controller.Step) bool {
			return s.Type == controller.StepAction && s.Action == "create" && s.Target != nil && s.Target.Kind == "StatefulSet"
		})
		if err != nil {
			return err
		}
		if err := judgetest.SolveInput(ctx, env, "owned-statefulset", otherReconcile(env, create.ReconcileID), rowID(create.ReconcileID)); err != nil {
			return err
		}
		ready, err := traceUntil(ctx, env, "the status write of Ready True", func(s controller.Step) bool {
			return s.Type == controller.StepStatus && !s.Skipped && slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
				return c.Type == controller.ConditionReady && c.To == "True"
			})
		})
		if err != nil {
			return err
		}
		// The reconcile that created the StatefulSet saw no ready replica.
		if err := judgetest.SolveInput(ctx, env, "ready", rowID(create.ReconcileID), rowID(ready.ReconcileID)); err != nil {
			return err
		}
		endpoint, err := databaseStatus(ctx, env, "shop", "status.endpoint", func(db *dbv1.Database) string { return db.Status.Endpoint })
		if err != nil {
			return err
		}
		if err := judgetest.SolveInput(ctx, env, "endpoint", "shop.default.svc:5432", endpoint); err != nil {
			return err
		}
		secret, err := databaseStatus(ctx, env, "shop", "status.secretName", func(db *dbv1.Database) string { return db.Status.SecretName })
		if err != nil {
			return err
		}
		if err := judgetest.SolveInput(ctx, env, "secret", "shop-password", secret); err != nil {
			return err
		}
		if err := env.Learner.Delete(ctx, db); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "finalized-delete"); err != nil {
			return err
		}
		uid, err := snapshotUID(ctx, env, "shop")
		if err != nil {
			return err
		}
		return judgetest.SolveInput(ctx, env, "snapshot-kept", noSuchUID, uid)
	})
}

// TestObservedGeneration scales orders, as a learner would from the card,
// and names the reconcile whose status write came back at the same generation.
func TestObservedGeneration(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "observed-generation", func(ctx context.Context, env judgetest.SolveEnv) error {
		var db dbv1.Database
		if err := env.Learner.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "orders"}, &db); err != nil {
			return err
		}
		// A reconcile that ended before the change: the wrong row a learner
		// may copy. One that had only begun might fetch orders after the
		// change and write the status this task asks about, a right answer.
		first, err := traceUntil(ctx, env, "a reconcile ended before the change", func(s controller.Step) bool {
			return s.Type == controller.StepResult && s.ReconcileID != ""
		})
		if err != nil {
			return err
		}
		patch := client.MergeFrom(db.DeepCopy())
		db.Spec.Replicas = 3
		if err := env.Learner.Patch(ctx, &db, patch); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "caught-up"); err != nil {
			return err
		}
		// A status write at the new generation, then the update event it
		// caused, read off the timeline.
		var writer string
		if _, err := readUntil(ctx, "a status write that came back as an event", func(context.Context) (string, error) {
			steps := env.Trace()
			for i, s := range steps {
				if s.Type != controller.StepStatus || s.Skipped || s.Generation < 2 || s.Database != "orders" {
					continue
				}
				for _, later := range steps[i+1:] {
					if later.Type == controller.StepEvent && later.Event == "update" && later.Object.Kind == "Database" && later.Object.Name == "orders" {
						if later.Generation == s.Generation {
							writer = s.ReconcileID
							return writer, nil
						}
						break
					}
				}
			}
			return "", nil
		}); err != nil {
			return err
		}
		return judgetest.SolveInput(ctx, env, "status-no-bump", rowID(first.ReconcileID), rowID(writer))
	})
}

// TestOwnerGC orphans the StatefulSet, waits for the adoption, then deletes
// the owner and lets the garbage collector work, all with the learner's
// own permissions: their Role may patch a StatefulSet, and the learner
// policy lets a metadata-only patch through.
func TestOwnerGC(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "owner-gc", func(ctx context.Context, env judgetest.SolveEnv) error {
		key := client.ObjectKey{Namespace: env.Namespace, Name: "cart"}
		var sts appsv1.StatefulSet
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := env.Learner.Get(ctx, key, &sts)
			return err == nil && len(sts.OwnerReferences) > 0, client.IgnoreNotFound(err)
		}); err != nil {
			return fmt.Errorf("wait for StatefulSet cart: %w", err)
		}
		orphan := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/ownerReferences"}]`))
		if err := env.Learner.Patch(ctx, &sts, orphan); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "adopted"); err != nil {
			return err
		}
		if err := env.Learner.Delete(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: env.Namespace}}); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "owner-deleted"); err != nil {
			return err
		}
		// The next task is judged on the trace: the finalizer's "removed"
		// row, which the controller records after the write that let cart go.
		if _, err := traceUntil(ctx, env, "cart's finalizer removed", func(s controller.Step) bool {
			return s.Type == controller.StepFinalizer && s.Phase == "removed" && s.Database == "cart"
		}); err != nil {
			return err
		}
		uid, err := snapshotUID(ctx, env, "cart")
		if err != nil {
			return err
		}
		return judgetest.SolveInput(ctx, env, "snapshot-outlives", noSuchUID, uid)
	})
}
