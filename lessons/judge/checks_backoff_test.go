package judge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// run adds one reconcile of tally started by trigger and ending in result
// after backoff (the work queue's, for an error), with pitfall on its steps.
func (b *traceBuilder) run(id, trigger, result string, after time.Duration, pitfall string) *traceBuilder {
	b.add(controller.Step{Type: controller.StepReconcileStart, ReconcileID: id, Database: tally, Trigger: trigger})
	b.add(controller.Step{Type: controller.StepFetch, ReconcileID: id, Database: tally, Found: "found", Generation: 1, Pitfall: pitfall})
	return b.add(controller.Step{Type: controller.StepResult, ReconcileID: id, Database: tally, Result: result, RequeueAfter: after, Pitfall: pitfall})
}

const nic = controller.PitfallNonIdempotentCreate

// The streak must be failures in a row, each backoff longer than the last:
// a success between them, or a backoff that did not grow, starts it again.
func TestBackoffStreakNeedsGrowth(t *testing.T) {
	ms := time.Millisecond
	interrupted := newStepTrace().run("a", "event", "error", 5*ms, nic).run("b", "requeue", "error", 10*ms, nic).
		run("c", "event", "done", 30*time.Second, "").run("d", "event", "error", 5*ms, nic)
	if end, best := growingStreak(stepLog(interrupted.steps).reconciles(tally, 0)); end >= 0 || len(best) != 2 {
		t.Errorf("two failures, a success, one failure: end %d best %v, want no streak, best 2", end, best)
	}
	flat := newStepTrace().run("a", "event", "error", 5*ms, nic).run("b", "requeue", "error", 5*ms, nic).run("c", "requeue", "error", 5*ms, nic)
	if end, _ := growingStreak(stepLog(flat.steps).reconciles(tally, 0)); end >= 0 {
		t.Errorf("three failures with the same backoff: end %d, want no streak", end)
	}
	grown := newStepTrace().run("a", "event", "error", 5*ms, nic).run("b", "event", "error", 10*ms, nic).run("c", "requeue", "error", 20*ms, nic)
	runs := stepLog(grown.steps).reconciles(tally, 0)
	if end, best := growingStreak(runs); end != 2 || len(best) != 3 {
		t.Errorf("5ms, 10ms, 20ms: end %d best %v, want the third run", end, best)
	}
	if convergedRun(runs) >= 0 {
		t.Error("no success after the streak: want not converged")
	}
	// A done run still carrying the pitfall (it cannot happen with
	// non-idempotent-create, but another pitfall might) is not the mend.
	grown.run("d", "event", "done", 30*time.Second, controller.PitfallStatusThrash).run("e", "event", "done", 30*time.Second, "").
		run("f", "resync", "done", 30*time.Second, "")
	runs = stepLog(grown.steps).reconciles(tally, 0)
	if at := convergedRun(runs); at != 4 {
		t.Errorf("converged run = %d, want 4 (the first done run with no pitfall)", at)
	}
	if r, err := checkBackoffResync(context.Background(), Env{Trace: grown.steps}); err != nil || !r.Done {
		t.Errorf("a resync after the converging run: %+v %v, want done", r, err)
	}
	early := grown.steps[:len(grown.steps)-3] // without run f
	if r, _ := checkBackoffResync(context.Background(), Env{Trace: early}); r.Done || !strings.Contains(r.Detail, "30s") {
		t.Errorf("no resync yet: %+v, want not done, naming when it is due", r)
	}
	// A resync before the mend does not count.
	before := newStepTrace().run("a", "resync", "done", 30*time.Second, "").run("b", "event", "error", 5*ms, nic).
		run("c", "requeue", "error", 10*ms, nic).run("d", "requeue", "error", 20*ms, nic).run("e", "event", "done", 30*time.Second, "")
	if r, _ := checkBackoffResync(context.Background(), Env{Trace: before.steps}); r.Done {
		t.Errorf("only a resync before the failures: %+v, want not done", r)
	}
}
