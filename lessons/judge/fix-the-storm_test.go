package judge_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestFixTheStorm: the pitfall's code storms; oplab's reconciler, the fix,
// skips the unchanged write.
func TestFixTheStorm(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "fix-the-storm", func(ctx context.Context, env judgetest.SolveEnv) error {
		if err := env.RunCode(ctx, starters.Source("pitfall-status")); err != nil {
			return fmt.Errorf("running the pitfall: %w", err)
		}
		if err := env.Learner.Create(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "storm"}}); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "see-the-storm"); err != nil {
			return err
		}
		if err := env.RunCode(ctx, starters.Source("oplab")); err != nil {
			return fmt.Errorf("running the fix: %w", err)
		}
		if err := env.WaitDone(ctx, "quiet"); err != nil {
			return err
		}
		return passesTheTester(ctx, env, starters.Source("oplab"))
	})
}
