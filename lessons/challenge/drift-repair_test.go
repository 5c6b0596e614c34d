package challenge_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/lessons/challenge/challengetest"
)

// TestDriftRepair deletes the StatefulSet as kubectl does (background
// propagation) and lets the controller repair it.
func TestDriftRepair(t *testing.T) {
	challengetest.Run(t, "drift-repair", func(ctx context.Context, env challengetest.SolveEnv) error {
		sts := &appsv1.StatefulSet{}
		sts.Namespace, sts.Name = env.Namespace, "shop"
		return env.Client.Delete(ctx, sts, client.PropagationPolicy("Background"))
	})
}
