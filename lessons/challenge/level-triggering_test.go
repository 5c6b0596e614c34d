package challenge_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/challenge/challengetest"
)

// TestLevelTriggering makes three spec changes while paused, then resumes.
func TestLevelTriggering(t *testing.T) {
	challengetest.Run(t, "level-triggering", func(ctx context.Context, env challengetest.SolveEnv) error {
		if err := env.Pause(ctx); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "pause"); err != nil {
			return err
		}
		for _, spec := range []string{`{"spec":{"replicas":2}}`, `{"spec":{"replicas":3}}`, `{"spec":{"version":"16"}}`} {
			if err := patchTide(ctx, env, spec); err != nil {
				return err
			}
		}
		if err := env.WaitDone(ctx, "changes"); err != nil {
			return err
		}
		return env.Resume(ctx)
	})
}

func patchTide(ctx context.Context, env challengetest.SolveEnv, spec string) error {
	db := &dbv1.Database{}
	db.Namespace, db.Name = env.Namespace, "tide"
	return env.Client.Patch(ctx, db, client.RawPatch("application/merge-patch+json", []byte(spec)))
}
