package challenge_test

import (
	"context"

	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/challenge/challengetest"
)

// TestInterviewWalkthrough does the walk-through as a learner would: create,
// watch it converge, read the status, delete, find the snapshot.
func TestInterviewWalkthrough(t *testing.T) {
	challengetest.Run(t, "interview-walkthrough", func(ctx context.Context, env challengetest.SolveEnv) error {
		db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: env.Namespace}}
		if err := env.Client.Create(ctx, db); err != nil {
			return err
		}
		for _, task := range []string{"owned-statefulset", "ready", "connection-info"} {
			if err := env.WaitDone(ctx, task); err != nil {
				return err
			}
		}
		return env.Client.Delete(ctx, db)
	})
}
