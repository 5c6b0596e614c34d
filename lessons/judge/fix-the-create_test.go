package judge_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// TestFixTheCreate: the pitfall's code fails (and the second task stays
// undone while it runs); oplab's reconciler, the fix, passes.
func TestFixTheCreate(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "fix-the-create", func(ctx context.Context, env judgetest.SolveEnv) error {
		if err := env.RunCode(ctx, starters.Source("pitfall-create")); err != nil {
			return fmt.Errorf("running the pitfall: %w", err)
		}
		if err := env.Learner.Create(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "tally"}}); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "see-it-fail"); err != nil {
			return err
		}
		if err := env.RunCode(ctx, starters.Source("oplab")); err != nil {
			return fmt.Errorf("running the fix: %w", err)
		}
		if err := env.WaitDone(ctx, "fixed"); err != nil {
			return err
		}
		return passesTheTester(ctx, env, starters.Source("oplab"))
	})
}
