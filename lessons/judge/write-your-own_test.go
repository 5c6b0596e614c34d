package judge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestWriteYourOwn: the skeleton, run on a Database, does not pass the
// first task; oplab's own reconciler in facade style, the reference
// solution, passes all three, and its Test my code passes where the
// skeleton's fails.
func TestWriteYourOwn(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "write-your-own", func(ctx context.Context, env judgetest.SolveEnv) error {
		// The starting code: it runs (its reconciles are on the trace)
		// and the first task stays undone.
		if err := env.RunCode(ctx, starters.Source("skeleton")); err != nil {
			return fmt.Errorf("running the skeleton: %w", err)
		}
		db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "shop"}}
		if err := env.Learner.Create(ctx, db); err != nil {
			return err
		}
		if err := waitTrace(ctx, env, func(s controller.Step) bool { return s.YourCode && s.Type == controller.StepResult }); err != nil {
			return fmt.Errorf("waiting for the skeleton's reconcile: %w", err)
		}
		check, _ := judge.LookupCheck("write-your-own/your-statefulset")
		r, err := check(ctx, judge.Env{Namespace: env.Namespace, Client: env.Client, Trace: env.Trace()})
		if err != nil {
			return err
		}
		if r.Done {
			return fmt.Errorf("the skeleton passed your-statefulset: %s", r.Detail)
		}

		// The reference solution.
		if err := env.RunCode(ctx, starters.Source("oplab")); err != nil {
			return fmt.Errorf("running the reference solution: %w", err)
		}
		if err := env.WaitDone(ctx, "your-ready"); err != nil {
			return err
		}
		if err := env.Learner.Delete(ctx, db); err != nil {
			return err
		}
		if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(db), &dbv1.Database{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}); err != nil {
			return err
		}
		// The last task is every other life: the skeleton's test fails,
		// the reference solution's passes.
		if tested, err := env.TestCode(ctx, starters.Source("skeleton")); err != nil || tested.Passed {
			return fmt.Errorf("the skeleton's test passed %v (%v); want it failed", tested.Passed, err)
		}
		return passesTheTester(ctx, env, starters.Source("oplab"))
	})
}

// passesTheTester presses Test my code on src, which must pass: the code
// exercises' last task.
func passesTheTester(ctx context.Context, env judgetest.SolveEnv, src string) error {
	tested, err := env.TestCode(ctx, src)
	if err != nil {
		return err
	}
	if !tested.Passed {
		return fmt.Errorf("the solution's test found %v", tested.Findings)
	}
	return nil
}

func waitTrace(ctx context.Context, env judgetest.SolveEnv, f func(controller.Step) bool) error {
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, s := range env.Trace() {
			if f(s) {
				return true, nil
			}
		}
		return false, nil
	})
}
