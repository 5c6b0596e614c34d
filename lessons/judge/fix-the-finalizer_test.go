package judge_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestFixTheFinalizer: without the finalizer the snapshot is lost; with
// oplab's reconciler, the fix, the delete waits for it.
func TestFixTheFinalizer(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "fix-the-finalizer", func(ctx context.Context, env judgetest.SolveEnv) error {
		if err := env.RunCode(ctx, starters.Source("pitfall-finalizer")); err != nil {
			return fmt.Errorf("running the pitfall: %w", err)
		}
		lost := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "lost"}}
		if err := env.Learner.Create(ctx, lost); err != nil {
			return err
		}
		if err := waitTrace(ctx, env, func(s controller.Step) bool {
			return s.YourCode && s.Database == "lost" && s.Type == controller.StepAction && s.Target != nil && s.Target.Kind == "StatefulSet"
		}); err != nil {
			return err
		}
		if err := env.Learner.Delete(ctx, lost); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "see-it-lost"); err != nil {
			return err
		}
		if err := env.RunCode(ctx, starters.Source("oplab")); err != nil {
			return fmt.Errorf("running the fix: %w", err)
		}
		kept := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "kept"}}
		if err := env.Learner.Create(ctx, kept); err != nil {
			return err
		}
		if err := waitTrace(ctx, env, func(s controller.Step) bool {
			return s.YourCode && s.Database == "kept" && s.Type == controller.StepFinalizer && s.Phase == "added"
		}); err != nil {
			return err
		}
		if err := env.Learner.Delete(ctx, kept); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "kept"); err != nil {
			return err
		}
		return passesTheTester(ctx, env, starters.Source("oplab"))
	})
}
