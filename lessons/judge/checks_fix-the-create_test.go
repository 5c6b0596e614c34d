package judge

import (
	"context"
	"testing"

	"github.com/oplab-dev/oplab/controller"
)

func yourResult(db, result string) controller.Step {
	return controller.Step{Type: controller.StepResult, YourCode: true, Database: db, Result: result}
}

// The fix-the-create checks read only the trace: a synthetic one is enough.
func TestFixTheCreateChecksReadTheTrace(t *testing.T) {
	failing := []controller.Step{
		yourResult("tally", "requeue"),
		{Type: controller.StepAction, YourCode: true, Database: "tally", ReconcileID: "r2", Action: "create",
			Outcome: controller.OutcomeAlreadyExists, Target: &controller.ObjectRef{Kind: "Service", Name: "tally"}},
		{Type: controller.StepResult, YourCode: true, Database: "tally", ReconcileID: "r2", Result: "error"},
		yourResult("tally", "error"),
	}
	oplabs := []controller.Step{yourResult("tally", "error"),
		{Type: controller.StepResult, Database: "tally", Result: "done"}, {Type: controller.StepResult, Database: "tally", Result: "done"}}
	for _, c := range []struct {
		name  string
		check Check
		trace []controller.Step
		done  bool
	}{
		{"failing: the pitfall's trace", checkYourCreateFails, failing, true},
		{"failing: no trace", checkYourCreateFails, nil, false},
		{"fixed: still failing", checkYourReconcilesSucceed, failing, false},
		{"fixed: one success after", checkYourReconcilesSucceed, append(failing[:len(failing):len(failing)], yourResult("tally", "done")), false},
		{"fixed: two successes after", checkYourReconcilesSucceed, append(failing[:len(failing):len(failing)], yourResult("tally", "requeue"), yourResult("tally", "done")), true},
		{"fixed: oplab's successes do not count", checkYourReconcilesSucceed, oplabs, false},
		{"fixed: successes without a failure first", checkYourReconcilesSucceed, []controller.Step{yourResult("a", "done"), yourResult("a", "done")}, false},
	} {
		r, err := c.check(context.Background(), Env{Namespace: "ns", Trace: c.trace})
		if err != nil || r.Done != c.done {
			t.Errorf("%s: done %v (%s), %v; want done %v", c.name, r.Done, r.Detail, err, c.done)
		}
	}
}

// yourCode counts only the learner's own steps.
func TestYourCodeNeedsTheLearnersStep(t *testing.T) {
	always := func(context.Context, Env) (Result, error) { return Result{Done: true, Detail: "ok"}, nil }
	check := yourCode(always, func(s controller.Step) bool { return s.Type == controller.StepFinalizer && s.Phase == "removed" }, "not yet")
	oplab := []controller.Step{{Type: controller.StepFinalizer, Phase: "removed"}}
	if r, _ := check(context.Background(), Env{Trace: oplab}); r.Done {
		t.Error("oplab's own finalizer step counted as the learner's")
	}
	mine := []controller.Step{{Type: controller.StepFinalizer, Phase: "removed", YourCode: true}}
	if r, _ := check(context.Background(), Env{Trace: mine}); !r.Done {
		t.Errorf("the learner's finalizer step did not count: %s", r.Detail)
	}
}

func yourRewrite(db, from, to string) controller.Step {
	return controller.Step{Type: controller.StepStatus, YourCode: true, Database: db,
		Conditions: []controller.ConditionChange{{Type: "Ready", From: "False", To: "False", LastTransitionTime: to, FromLastTransitionTime: from}}}
}

func TestFixTheStormChecksReadTheTrace(t *testing.T) {
	storm := []controller.Step{
		yourRewrite("s", "t0", "t1"), yourRewrite("s", "t1", "t2"), yourRewrite("s", "t2", "t3"),
	}
	skipped := controller.Step{Type: controller.StepStatus, YourCode: true, Database: "s", Skipped: true}
	oplabSkipped := controller.Step{Type: controller.StepStatus, Database: "s", Skipped: true}
	flip := controller.Step{Type: controller.StepStatus, YourCode: true, Database: "s",
		Conditions: []controller.ConditionChange{{Type: "Ready", From: "False", To: "True", Transition: true, LastTransitionTime: "t9", FromLastTransitionTime: "t0"}}}
	for _, c := range []struct {
		name  string
		check Check
		trace []controller.Step
		done  bool
	}{
		{"storm: three rewrites", checkYourStorm, storm, true},
		{"storm: two rewrites", checkYourStorm, storm[:2], false},
		{"storm: a real transition is no rewrite", checkYourStorm, []controller.Step{flip, flip, flip}, false},
		{"quiet: still storming", checkYourQuiet, storm, false},
		{"quiet: skipped after the storm", checkYourQuiet, append(storm[:3:3], skipped), true},
		{"quiet: skipped before the storm", checkYourQuiet, append([]controller.Step{skipped}, storm...), false},
		{"quiet: oplab's skip does not count", checkYourQuiet, append(storm[:3:3], oplabSkipped), false},
	} {
		r, err := c.check(context.Background(), Env{Namespace: "ns", Trace: c.trace})
		if err != nil || r.Done != c.done {
			t.Errorf("%s: done %v (%s), %v; want done %v", c.name, r.Done, r.Detail, err, c.done)
		}
	}
}

func TestUnfinalizedReadsTheLearnersSteps(t *testing.T) {
	create := func(db string, mine bool) controller.Step {
		return controller.Step{Type: controller.StepAction, YourCode: mine, Database: db, Action: "create", Target: &controller.ObjectRef{Kind: "StatefulSet", Name: db}}
	}
	added := controller.Step{Type: controller.StepFinalizer, YourCode: true, Database: "kept", Phase: "added"}
	got := unfinalized([]controller.Step{create("lost", true), added, create("kept", true), create("oplabs", false)})
	if len(got) != 1 || got[0] != "lost" {
		t.Errorf("unfinalized = %v, want [lost]", got)
	}
}
