package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// The tests in this file run each lab scenario on the real cluster and
// assert, from the recorded steps, the evidence its lesson promises.

// reconciles groups steps by reconcile, in the order the reconciles started.
func reconciles(steps []Step) [][]Step {
	var ids []string
	by := map[string][]Step{}
	for _, s := range steps {
		if s.ReconcileID == "" {
			continue
		}
		if _, ok := by[s.ReconcileID]; !ok {
			ids = append(ids, s.ReconcileID)
		}
		by[s.ReconcileID] = append(by[s.ReconcileID], s)
	}
	out := make([][]Step, 0, len(ids))
	for _, id := range ids {
		out = append(out, by[id])
	}
	return out
}

func TestScenarioFirstReconcile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("first", 1, ""))
	e.expectReady("first")
	e.expectSettled("first")

	all := reconciles(e.sink.forDatabase("first"))
	if len(all) == 0 {
		t.Fatal("no reconcile traced")
	}
	first := all[0]
	var created []string
	for _, s := range first {
		if s.Type == StepAction && s.Outcome == OutcomeCreated {
			created = append(created, s.Target.Kind)
		}
	}
	if want := []string{"Secret", "Service", "StatefulSet"}; !slices.Equal(created, want) {
		t.Errorf("first reconcile created %v, want %v:\n%s", created, want, describe(first))
	}
	i := slices.IndexFunc(first, func(s Step) bool { return s.Type == StepStatus && !s.Skipped })
	if i < 0 || first[i].ObservedGeneration != 1 || first[i].Generation != 1 || first[i].StatusWrites != 1 {
		t.Errorf("first reconcile's status write = %+v, want observedGeneration 1 of generation 1, write 1:\n%s", first, describe(first))
	}
	if last := first[len(first)-1]; last.Type != StepResult || last.Result == "error" {
		t.Errorf("first reconcile ended with %+v", last)
	}
	// Each unchanged child of a later reconcile reads "in sync": a diff,
	// never an action.
	for _, rec := range all[1:] {
		for _, s := range rec {
			if s.Type == StepAction && s.Outcome == OutcomeUnchanged {
				t.Errorf("an unchanged child was reported as an action: %+v", s)
			}
		}
	}
}

func TestScenarioFinalizer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("final", 1, ""))
	e.expectReady("final")
	mark := e.sink.len()
	if err := e.c.Delete(e.ctx, e.getDB("final")); err != nil {
		t.Fatal(err)
	}
	e.expectGone(&dbv1.Database{}, "final")
	e.expectChildrenCollected("final")
	e.expectSnapshot("final")
	polltest.Until(e.t, deadline, "a reconcile finding final gone", func() (bool, error) {
		return slices.ContainsFunc(e.sink.since(mark, "final"), func(s Step) bool {
			return s.Type == StepFetch && s.Found == "not-found"
		}), nil
	})

	steps := e.sink.since(mark, "final")
	var phases []string
	for _, s := range steps {
		if s.Type == StepFinalizer && (len(phases) == 0 || phases[len(phases)-1] != s.Phase) {
			phases = append(phases, s.Phase)
		}
		if s.Result == "error" || s.Outcome == OutcomeError || s.Error != "" {
			t.Errorf("error row during the delete: %+v", s)
		}
	}
	if want := []string{"draining", "snapshot", "removed"}; !slices.Equal(phases, want) {
		t.Errorf("finalizer phases %v, want %v:\n%s", phases, want, describe(steps))
	}
}

func TestScenarioDropEventsConvergesInOneResync(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	opts := e.testOptions()
	opts.ResyncPeriod = 6 * time.Second // longer than progressPoll, as shipped
	e.startController(opts)
	e.mustCreate(newDB("deaf", 1, PitfallDropEvents))
	db := e.expectReady("deaf")
	// The object reads Ready before the controller has recorded the write
	// that made it so; the steps are read once that row is in.
	e.markAfterReadyStep("deaf")

	steps := e.sink.forDatabase("deaf")
	if !slices.ContainsFunc(steps, func(s Step) bool { return s.Type == StepEvent && s.Ignored }) {
		t.Errorf("no ignored event:\n%s", describe(steps))
	}
	resyncs := 0
	readyAt := -1
	for i, s := range steps {
		if s.Type == StepEvent && !s.Ignored {
			t.Errorf("event not ignored: %+v", s)
		}
		if s.Type == StepReconcileStart && s.Trigger == TriggerResync {
			resyncs++
		}
		if s.Type == StepStatus && slices.ContainsFunc(s.Conditions, func(c ConditionChange) bool {
			return c.Type == ConditionReady && c.To == "True"
		}) {
			readyAt = i
			break
		}
	}
	if readyAt < 0 || resyncs != 1 {
		t.Errorf("Ready after %d resyncs (status step %d), want it in the first:\n%s", resyncs, readyAt, describe(steps))
	}
	// The result of the resync that created the children says when the
	// next look comes: soon, since it is still progressing.
	if !slices.ContainsFunc(steps[:max(readyAt, 0)], func(s Step) bool {
		return s.Type == StepResult && s.Result == "requeue" && s.RequeueAfter == progressPoll
	}) {
		t.Errorf("no requeue after %s while progressing:\n%s", progressPoll, describe(steps))
	}
	if c := meta.FindStatusCondition(db.Status.Conditions, ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
}

func TestScenarioStatusThrashRewritesAreVisible(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("storm", 1, PitfallStatusThrash))
	e.expectReady("storm")
	mark := e.markAfterReadyStep("storm")
	var writes []Step
	polltest.Until(e.t, deadline, "four more status writes", func() (bool, error) {
		writes = nil
		for _, s := range e.sink.since(mark, "storm") {
			if s.Type == StepStatus && !s.Skipped && s.Error == "" {
				writes = append(writes, s)
			}
		}
		return len(writes) >= 4, nil
	})
	gen := writes[0].Generation
	for i, w := range writes {
		if w.Generation != gen || w.ObservedGeneration != gen {
			t.Errorf("write %d: generation %d observed %d, want the spec unchanged at %d", i, w.Generation, w.ObservedGeneration, gen)
		}
		if i > 0 && w.StatusWrites != writes[i-1].StatusWrites+1 {
			t.Errorf("write %d: statusWrites %d after %d, want a counter going up by one", i, w.StatusWrites, writes[i-1].StatusWrites)
		}
		if len(w.Conditions) == 0 {
			t.Errorf("write %d lists no condition change: the rewrite is invisible", i)
		}
		for _, c := range w.Conditions {
			if c.Transition || c.LastTransitionTime == c.FromLastTransitionTime {
				t.Errorf("write %d: condition %+v, want only its lastTransitionTime rewritten", i, c)
			}
		}
	}
}

func TestScenarioAlreadyExistsIsConvergence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A Service and a Secret made before their Database, by someone else or
	// an earlier run: no owner, no labels, the wrong port.
	e.mustCreate(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "early"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "old", Port: 1234}}},
	})
	e.mustCreate(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName("early")},
		StringData: map[string]string{"password": "kept"},
	})
	e.startController(e.testOptions())
	e.mustCreate(newDB("early", 1, ""))
	db := e.expectReady("early")

	var svc corev1.Service
	if err := e.c.Get(e.ctx, e.key("early"), &svc); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&svc); ref == nil || ref.UID != db.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("Service controller reference %+v, want the Database's", ref)
	}
	if got := portsOf(svc.Spec.Ports); !slices.Equal(got, []string{"postgres:5432"}) {
		t.Errorf("Service ports %v, want corrected to postgres:5432", got)
	}
	var secret corev1.Secret
	if err := e.c.Get(e.ctx, e.key(SecretName("early")), &secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["password"]) != "kept" || !metav1.IsControlledBy(&secret, db) {
		t.Errorf("Secret password %q owner %v: want the existing credentials kept and the Secret adopted",
			secret.Data["password"], metav1.GetControllerOf(&secret))
	}

	steps := e.sink.forDatabase("early")
	for _, kind := range []string{"Service", "Secret"} {
		if !slices.ContainsFunc(steps, func(s Step) bool {
			return s.Type == StepAction && s.Action == "create" && s.Target.Kind == kind && s.Outcome == OutcomeAlreadyExists
		}) {
			t.Errorf("no create %s → AlreadyExists on the trace:\n%s", kind, describe(steps))
		}
		if !slices.ContainsFunc(steps, func(s Step) bool {
			return s.Type == StepAction && s.Action == "patch" && s.Target.Kind == kind && s.Outcome == OutcomeUpdated
		}) {
			t.Errorf("the existing %s was not corrected:\n%s", kind, describe(steps))
		}
	}
	if slices.ContainsFunc(steps, func(s Step) bool { return s.Result == "error" }) {
		t.Errorf("AlreadyExists ended a reconcile in error:\n%s", describe(steps))
	}
}

func TestChildOwnedByAnotherControllerIsLeftAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	boss := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "boss"}}
	e.mustCreate(boss)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: boss.UID, Controller: ptr.To(true),
		}}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "other", Port: 1234}}},
	}
	e.mustCreate(svc)
	e.startController(e.testOptions())
	e.mustCreate(newDB("taken", 1, ""))

	polltest.Until(e.t, deadline, "Degraded naming the other controller", func() (bool, error) {
		c := meta.FindStatusCondition(e.getDB("taken").Status.Conditions, ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "controlled by ConfigMap boss"), nil
	})
	var got corev1.Service
	if err := e.c.Get(e.ctx, e.key("taken"), &got); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&got); ref == nil || ref.UID != boss.UID || got.Spec.Ports[0].Port != 1234 {
		t.Errorf("the other controller's Service was changed: owner %+v ports %v", ref, got.Spec.Ports)
	}
	// The result step ends the reconcile whose status write said Degraded,
	// so it may come a moment after that write is seen.
	polltest.Until(e.t, deadline, "an error result for a child controlled by someone else", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("taken"), func(s Step) bool { return s.Type == StepResult && s.Result == "error" }), nil
	})
}
