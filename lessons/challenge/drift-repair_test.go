package challenge_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/lessons/challenge/challengetest"
)

// TestDriftRepair deletes the StatefulSet as kubectl does (background
// propagation) and lets the controller repair it; independently of the
// checks, the Secret must be the same object afterwards (same UID, so the
// same password).
func TestDriftRepair(t *testing.T) {
	challengetest.Run(t, "drift-repair", func(ctx context.Context, env challengetest.SolveEnv) error {
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
