package judge

import (
	"context"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller"
)

// The status-storm checks find the Databases by what they do, as a learner
// must: every step says "pitfall: hidden" of all three alike.

// rewrite is a status write that moved Ready's lastTransitionTime without
// Ready changing: the thrasher's mark.
func rewrite() controller.Step {
	return controller.Step{Type: controller.StepStatus, Pitfall: controller.PitfallHidden,
		Conditions: []controller.ConditionChange{{Type: controller.ConditionReady, From: "True", To: "True",
			LastTransitionTime: "2026-12-01T10:00:02Z", FromLastTransitionTime: "2026-12-01T10:00:01Z"}}}
}

// blindCreate is a reconcile's create that met AlreadyExists.
func blindCreate() controller.Step {
	return controller.Step{Type: controller.StepAction, Action: "create", Outcome: controller.OutcomeAlreadyExists,
		Target: &controller.ObjectRef{Kind: "StatefulSet", Name: "alpha"}, Pitfall: controller.PitfallHidden}
}

// failed adds a reconcile of db that ends in error after steps.
func (b *traceBuilder) failed(id, db string, steps ...controller.Step) *traceBuilder {
	b.add(controller.Step{Type: controller.StepReconcileStart, ReconcileID: id, Database: db, Trigger: "requeue", Pitfall: controller.PitfallHidden})
	for _, s := range steps {
		s.ReconcileID, s.Database = id, db
		b.add(s)
	}
	return b.add(controller.Step{Type: controller.StepResult, ReconcileID: id, Database: db, Result: "error", Error: "already exists"})
}

func TestStormFoundByBehaviour(t *testing.T) {
	// charlie writes status once, as the correct controller does; alpha
	// fails on AlreadyExists; bravo rewrites timestamps.
	first := controller.Step{Type: controller.StepStatus, Pitfall: controller.PitfallHidden,
		Conditions: []controller.ConditionChange{{Type: controller.ConditionReady, To: "True", Transition: true, LastTransitionTime: "2026-12-01T10:00:01Z"}}}
	b := newStepTrace().reconcile("c1", "charlie", 1, first).
		failed("a1", "alpha", blindCreate()).
		reconcile("b1", "bravo", 1, first).reconcile("b2", "bravo", 1, rewrite())
	l := stepLog(b.steps)
	if name, ok := l.thrasher(); !ok || name != "bravo" {
		t.Errorf("thrasher = %q, %v; want bravo", name, ok)
	}
	if d := l.decoys("bravo"); d["alpha"] != controller.PitfallNonIdempotentCreate || len(d) != 1 {
		t.Errorf("decoys = %v; want alpha with %s", d, controller.PitfallNonIdempotentCreate)
	}
	// A create that met AlreadyExists and went on (a stale cache, taken as
	// convergence) is no pitfall.
	c := newStepTrace().reconcile("c1", "charlie", 1, blindCreate())
	if d := stepLog(c.steps).decoys("bravo"); len(d) != 0 {
		t.Errorf("decoys = %v; want none from a reconcile that ended done", d)
	}
	if _, ok := stepLog(newStepTrace().reconcile("c1", "charlie", 1, first).steps).thrasher(); ok {
		t.Error("a status write that flipped Ready is no thrash")
	}
}

func TestStormQuiet(t *testing.T) {
	skipped := controller.Step{Type: controller.StepStatus, Skipped: true}
	quiet := func(b *traceBuilder) Result {
		t.Helper()
		r, err := checkStormQuiet(context.Background(), Env{Namespace: "ns", Trace: b.steps})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Still thrashing: the limiter's skipped writes between rewrites come
	// within a second of the last rewrite, not a resync period after it.
	b := newStepTrace().reconcile("b1", "bravo", 1, rewrite()).reconcile("b2", "bravo", 1, skipped).reconcile("b3", "bravo", 1, rewrite())
	if r := quiet(b); r.Done {
		t.Errorf("still thrashing: done, %q", r.Detail)
	}
	// Off: the next reconciles skip the write. The trace builder's steps
	// are a second apart, a reconcile four of them, and its resync is 30s:
	// the seventh skips 28s after the last rewrite, the eighth 32s.
	for i := range 7 {
		b.reconcile("q"+string(rune('a'+i)), "bravo", 1, skipped)
	}
	if r := quiet(b); r.Done {
		t.Errorf("28s after the last rewrite: done, %q; want a whole resync period", r.Detail)
	}
	b.reconcile("resync", "bravo", 1, skipped)
	if r := quiet(b); !r.Done {
		t.Errorf("a skipped write a resync period after the last rewrite: not done, %q", r.Detail)
	}
	// Another Database rewrites after the storm ended: not quiet.
	withCharlie := &traceBuilder{steps: append([]controller.Step{}, b.steps...), t: b.t}
	withCharlie.reconcile("c1", "charlie", 1, rewrite())
	if r := quiet(withCharlie); r.Done || !strings.Contains(r.Detail, "charlie at ") {
		t.Errorf("charlie rewrote after the storm: done=%v, %q; want not done, naming charlie", r.Done, r.Detail)
	}
	// Switched on again: the storm's end moves.
	b.reconcile("b4", "bravo", 1, rewrite())
	if r := quiet(b); r.Done {
		t.Errorf("bravo thrashes again: done, %q", r.Detail)
	}
}
