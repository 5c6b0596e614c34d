package challenge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/challenge/challengetest"
)

// TestInterviewWalkthrough does the walk-through as a learner would: create,
// watch it converge, read the status, delete, find the snapshot.
func TestInterviewWalkthrough(t *testing.T) {
	challengetest.Run(t, "interview-walkthrough", func(ctx context.Context, env challengetest.SolveEnv) error {
		db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: env.Namespace}}
		if err := env.Learner.Create(ctx, db); err != nil {
			return err
		}
		for _, task := range []string{"owned-statefulset", "ready", "connection-info"} {
			if err := env.WaitDone(ctx, task); err != nil {
				return err
			}
		}
		return env.Learner.Delete(ctx, db)
	})
}

// TestObservedGeneration scales orders, as a learner would from the card.
func TestObservedGeneration(t *testing.T) {
	challengetest.Run(t, "observed-generation", func(ctx context.Context, env challengetest.SolveEnv) error {
		var db dbv1.Database
		if err := env.Learner.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "orders"}, &db); err != nil {
			return err
		}
		patch := client.MergeFrom(db.DeepCopy())
		db.Spec.Replicas = 3
		return env.Learner.Patch(ctx, &db, patch)
	})
}

// TestOwnerGC orphans the StatefulSet, waits for the adoption, then deletes
// the owner and lets the garbage collector work, all with the learner's
// own permissions: their Role may patch a StatefulSet, and the learner
// policy lets a metadata-only patch through.
func TestOwnerGC(t *testing.T) {
	challengetest.Run(t, "owner-gc", func(ctx context.Context, env challengetest.SolveEnv) error {
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
		return env.Learner.Delete(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: env.Namespace}})
	})
}
