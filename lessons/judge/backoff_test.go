package judge_test

import (
	"context"
	"testing"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestBackoff switches the pitfall on and off with the learner's own kubectl
// identity (setPitfall, as `kubectl annotate` or the lab's Pitfall menu would), and waits for the resync.
func TestBackoff(t *testing.T) {
	t.Parallel() // its own namespace (judgetest.Run); it mostly waits on backoffs and resyncs
	judgetest.Run(t, "backoff", func(ctx context.Context, env judgetest.SolveEnv) error {
		if err := setPitfall(ctx, env.Learner, env.Namespace, "tally", controller.PitfallNonIdempotentCreate); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "growing"); err != nil {
			return err
		}
		return setPitfall(ctx, env.Learner, env.Namespace, "tally", "")
	})
}
