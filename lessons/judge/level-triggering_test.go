package judge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestLevelTriggering makes three spec changes while paused, then resumes.
func TestLevelTriggering(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "level-triggering", func(ctx context.Context, env judgetest.SolveEnv) error {
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
		if err := env.Resume(ctx); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "coalesced"); err != nil {
			return err
		}
		return straightToFinal(env.Trace())
	})
}

// straightToFinal checks, independently of the challenge's checks, that the
// intermediate replica count never reached the StatefulSet: every diff of
// tide's StatefulSet after the pause went from 1 to 3.
func straightToFinal(trace []controller.Step) error {
	var diffs []string
	for _, s := range trace {
		if s.Type == controller.StepDiff && s.Database == "tide" && s.Target != nil && s.Target.Kind == "StatefulSet" {
			diffs = append(diffs, s.Differences...)
		}
	}
	if !slices.Contains(diffs, "replicas 1 → 3") || slices.ContainsFunc(diffs, func(d string) bool { return strings.Contains(d, "→ 2") }) {
		return fmt.Errorf("tide's StatefulSet diffs %q: want replicas 1 → 3 and never → 2", diffs)
	}
	return nil
}

func patchTide(ctx context.Context, env judgetest.SolveEnv, spec string) error {
	db := &dbv1.Database{}
	db.Namespace, db.Name = env.Namespace, "tide"
	return env.Learner.Patch(ctx, db, client.RawPatch("application/merge-patch+json", []byte(spec)))
}
