package judge

import (
	"fmt"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// These tests read the five challenges' trace logic on hand-made traces, so
// it is tested even where no cluster runs; the self-tests (*_test.go named
// after each challenge) run it against the real controller.

// traceBuilder writes a trace in order, a second apart.
type traceBuilder struct {
	steps []controller.Step
	t     time.Time
}

func newStepTrace() *traceBuilder {
	return &traceBuilder{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

func (b *traceBuilder) add(s controller.Step) *traceBuilder {
	b.t = b.t.Add(time.Second)
	s.Time = b.t
	b.steps = append(b.steps, s)
	return b
}

func (b *traceBuilder) phase(p string) *traceBuilder {
	return b.add(controller.Step{Type: controller.StepController, Object: controller.ObjectRef{Kind: "Controller", Namespace: "ns", Name: "database"}, Phase: p})
}

func (b *traceBuilder) dbEvent(db string, gen int64, held bool) *traceBuilder {
	return b.add(controller.Step{Type: controller.StepEvent, Object: controller.ObjectRef{Kind: "Database", Namespace: "ns", Name: db},
		Database: db, Event: "update", Generation: gen, Held: held})
}

// reconcile adds a whole reconcile of db: start, fetch at gen, the given
// steps, result.
func (b *traceBuilder) reconcile(id, db string, gen int64, steps ...controller.Step) *traceBuilder {
	b.add(controller.Step{Type: controller.StepReconcileStart, ReconcileID: id, Database: db, Trigger: "event"})
	b.add(controller.Step{Type: controller.StepFetch, ReconcileID: id, Database: db, Found: "found", Generation: gen})
	for _, s := range steps {
		s.ReconcileID, s.Database = id, db
		b.add(s)
	}
	return b.add(controller.Step{Type: controller.StepResult, ReconcileID: id, Database: db, Result: "done", RequeueAfter: 30 * time.Second})
}

func finalizerStep(p string) controller.Step {
	return controller.Step{Type: controller.StepFinalizer, Phase: p}
}

func TestDeletedWhilePaused(t *testing.T) {
	deleted := newStepTrace().phase("paused").dbEvent(ledger, 2, true).phase("resumed").
		reconcile("r1", ledger, 2, finalizerStep("draining"), finalizerStep("snapshot"), finalizerStep("removed"))
	if !deletedWhilePaused(deleted.steps, ledger) {
		t.Error("a held event then a finalizing reconcile after the resume: want deleted while paused")
	}
	// A spec change held instead: the reconcile after the resume runs no
	// finalizer, and a later delete happened with the controller running.
	changed := newStepTrace().phase("paused").dbEvent(ledger, 2, true).phase("resumed").
		reconcile("r1", ledger, 2).dbEvent(ledger, 3, false).
		reconcile("r2", ledger, 3, finalizerStep("draining"), finalizerStep("snapshot"), finalizerStep("removed"))
	if deletedWhilePaused(changed.steps, ledger) {
		t.Error("a spec change held, the delete made later: want not deleted while paused")
	}
	if deletedWhilePaused(newStepTrace().reconcile("r1", ledger, 2, finalizerStep("removed")).steps, ledger) {
		t.Error("no pause at all: want not deleted while paused")
	}
}

func TestFinalizerAfterResume(t *testing.T) {
	l := newStepTrace().reconcile("r0", ledger, 1, finalizerStep("added")).phase("paused").dbEvent(ledger, 2, true).phase("resumed").
		reconcile("r1", ledger, 2, finalizerStep("draining")).
		reconcile("r2", ledger, 2, finalizerStep("draining"), finalizerStep("snapshot"), finalizerStep("removed"))
	phases, resumed := finalizerAfterResume(l.steps, ledger)
	if !resumed || joinPhases(phases) != "draining ×2 → snapshot → removed" {
		t.Errorf("finalizerAfterResume = %q, %v; want draining ×2 → snapshot → removed after the resume", joinPhases(phases), resumed)
	}
}

func TestReconcilesInterleaved(t *testing.T) {
	b := newStepTrace()
	b.add(controller.Step{Type: controller.StepReconcileStart, ReconcileID: "a", Database: "one"})
	b.add(controller.Step{Type: controller.StepReconcileStart, ReconcileID: "b", Database: "two"})
	b.add(controller.Step{Type: controller.StepAction, ReconcileID: "a", Database: "one", Action: "create"})
	b.add(controller.Step{Type: controller.StepAction, ReconcileID: "b", Database: "two", Action: "patch"})
	b.add(controller.Step{Type: controller.StepResult, ReconcileID: "a", Database: "one", Result: "done"})
	runs := stepLog(b.steps).reconciles("one", 0)
	if len(runs) != 1 || len(runs[0].actions()) != 1 || runs[0].actions()[0].Action != "create" || !runs[0].finished() {
		t.Errorf("reconciles(one) = %+v; want one finished run with its one create", runs)
	}
	if runs := stepLog(b.steps).reconciles("two", 0); len(runs) != 1 || runs[0].finished() {
		t.Errorf("reconciles(two) = %+v; want one unfinished run", runs)
	}
}

func TestStatefulSetDeletedAfterReady(t *testing.T) {
	stsDelete := controller.Step{Type: controller.StepEvent, Object: controller.ObjectRef{Kind: "StatefulSet", Name: shop}, Database: shop, Event: "delete"}
	ready := controller.Step{Type: controller.StepStatus, Conditions: []controller.ConditionChange{{Type: controller.ConditionReady, To: "True"}}}
	// An earlier shop's StatefulSet collected after the Start comes before
	// the new shop is Ready: it is not the learner's delete.
	b := newStepTrace().add(stsDelete).reconcile("r1", shop, 1, ready)
	if at := statefulSetDeleted(b.steps); at >= 0 {
		t.Errorf("a delete before shop was Ready counted, at %d", at)
	}
	b.add(stsDelete)
	if at := statefulSetDeleted(b.steps); at != len(b.steps)-1 {
		t.Errorf("statefulSetDeleted = %d, want the delete after Ready at %d", at, len(b.steps)-1)
	}
}

func TestTimestampOnly(t *testing.T) {
	rewrite := controller.Step{Type: controller.StepStatus, Conditions: []controller.ConditionChange{{
		Type: controller.ConditionReady, From: "True", To: "True",
		LastTransitionTime: "2026-12-01T10:00:02Z", FromLastTransitionTime: "2026-12-01T10:00:01Z",
	}}}
	if !timestampOnly(rewrite) {
		t.Error("Ready True→True with a new lastTransitionTime: want a timestamp-only rewrite")
	}
	flip := rewrite
	flip.Conditions = []controller.ConditionChange{{Type: controller.ConditionReady, From: "False", To: "True", Transition: true,
		LastTransitionTime: "2026-12-01T10:00:02Z", FromLastTransitionTime: "2026-12-01T10:00:01Z"}}
	if timestampOnly(flip) {
		t.Error("Ready False→True: a real transition, not a rewrite")
	}
	message := rewrite
	message.Conditions = []controller.ConditionChange{{Type: controller.ConditionProgressing, From: "True", To: "True",
		Message: "2/3 replicas ready.", LastTransitionTime: "2026-12-01T10:00:01Z", FromLastTransitionTime: "2026-12-01T10:00:01Z"}}
	if timestampOnly(message) {
		t.Error("a message change with the timestamp kept: not a rewrite")
	}
	skipped := rewrite
	skipped.Skipped = true
	if timestampOnly(skipped) {
		t.Error("a skipped write is no write")
	}
}

func TestResyncPeriodFromTrace(t *testing.T) {
	b := newStepTrace()
	b.add(controller.Step{Type: controller.StepResult, Result: "requeue", RequeueAfter: 2 * time.Second})
	if _, ok := stepLog(b.steps).resyncPeriod(); ok {
		t.Error("a requeue is not the resync")
	}
	b.add(controller.Step{Type: controller.StepResult, Result: "done", RequeueAfter: 7 * time.Second})
	if d, ok := stepLog(b.steps).resyncPeriod(); !ok || d != 7*time.Second {
		t.Errorf("resyncPeriod = %s, %v; want 7s", d, ok)
	}
}

func TestPauseWindows(t *testing.T) {
	b := newStepTrace().phase("paused").dbEvent(tide, 2, true).dbEvent(tide, 2, true).dbEvent(tide, 3, true).dbEvent(tide, 4, true)
	w, ok := stepLog(b.steps).bestWindow()
	if !ok || w.changes() != 3 || w.final() != 4 || w.resumed != -1 {
		t.Errorf("window = %+v; want 3 changes (2, 3, 4), still paused", w)
	}
	b.phase("resumed")
	ws := stepLog(b.steps).pauseWindows()
	if len(ws) != 1 || ws[0].resumed != len(b.steps)-1 || ws[0].reconciled {
		t.Errorf("windows = %+v; want one, resumed at the last step, no reconcile inside", ws)
	}
	// A reconcile inside the window (a pause that did not hold).
	c := newStepTrace().phase("paused").dbEvent(tide, 2, true).reconcile("r", tide, 2).phase("resumed")
	if ws := stepLog(c.steps).pauseWindows(); len(ws) != 1 || !ws[0].reconciled {
		t.Errorf("windows = %+v; want the reconcile inside noticed", ws)
	}
}

// BenchmarkTraceChecks runs the checks that read only the trace on a full
// ring (4096 steps of thrashing reconciles), as the page's status request
// does every 1.5 s per open challenge page.
func BenchmarkTraceChecks(b *testing.B) {
	tb := newStepTrace()
	for i := 0; len(tb.steps) < 4096; i++ {
		id := fmt.Sprintf("r%d", i)
		tb.reconcile(id, "bravo", 1, controller.Step{Type: controller.StepStatus, Pitfall: controller.PitfallStatusThrash,
			Conditions: []controller.ConditionChange{{Type: controller.ConditionReady, From: "True", To: "True",
				LastTransitionTime: "2026-12-01T10:00:02Z", FromLastTransitionTime: "2026-12-01T10:00:01Z"}}})
	}
	env := Env{Namespace: "ns", Trace: tb.steps}
	checks := map[string]Check{
		"status-storm/quiet": checkStormQuiet, "level-triggering/coalesced": checkTideCoalesced,
		"drift-repair/repaired-once": checkShopRepairedOnce, "died-mid-deletion/paused": checkLedgerPaused,
	}
	for name, c := range checks {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c(b.Context(), env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
