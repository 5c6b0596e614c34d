package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// stubReconciler records the client and requests it is given.
type stubReconciler struct {
	got  []reconcile.Request
	with client.Client
}

// Reconcile fetches its Database through c, as learner code does first.
func (s *stubReconciler) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	s.got = append(s.got, req)
	s.with = c
	if err := c.Get(ctx, req.NamespacedName, &dbv1.Database{}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: 3}, nil
}

// The dispatch only (which reconciler a worker calls, and how its steps are
// marked): no API server behaviour is involved, the learner's reconciler is
// a stub and oplab's finds no Database in the fake client.
func TestHandOverTakesItsNamespaceOnly(t *testing.T) {
	sink := &recordingSink{}
	opts := DefaultOptions()
	opts.Sink = sink
	gate := newPauseGate()
	c := fake.NewClientBuilder().WithScheme(testScheme).Build()
	tr := newTracedReconciler(c, c, testScheme, nil, opts.withDefaults(), gate)
	stub := &stubReconciler{}
	gate.handovers.m.Store("learner", NamespaceReconciler(stub))

	mine := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "learner", Name: "shop"}}
	res, err := tr.Reconcile(context.Background(), mine)
	if err != nil || res.RequeueAfter != 3 {
		t.Fatalf("handed-over reconcile: %v, %v; want the stub's result", res, err)
	}
	if len(stub.got) != 1 || stub.got[0] != mine {
		t.Fatalf("the stub got %v, want %v", stub.got, mine)
	}
	// The stub's Get went through the traced client: it is the fetch step.
	fetched := false
	for _, s := range sink.all() {
		fetched = fetched || s.Type == StepFetch && s.Found == "not-found" && s.YourCode && s.Object.Namespace == "learner"
	}
	if !fetched {
		t.Error("the learner's Get did not go through the traced client: no fetch step marked yourCode")
	}
	other := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "other", Name: "shop"}}
	if _, err := tr.Reconcile(context.Background(), other); err != nil {
		t.Fatalf("oplab's reconcile of a missing Database: %v", err)
	}
	if len(stub.got) != 1 {
		t.Fatalf("the stub reconciled another namespace: %v", stub.got)
	}
	for _, s := range sink.all() {
		if want := s.Object.Namespace == "learner"; s.YourCode != want {
			t.Errorf("step %s of %s/%s: yourCode %v, want %v", s.Type, s.Object.Namespace, s.Object.Name, s.YourCode, want)
		}
	}
	if len(sink.all()) < 4 {
		t.Errorf("steps: %v, want a start and a result for each reconcile", sink.all())
	}
	gate.handovers.m.Delete("learner")
	if _, err := tr.Reconcile(context.Background(), mine); err != nil || len(stub.got) != 1 {
		t.Fatalf("after the take-back: %v, the stub got %v", err, stub.got)
	}
}

// Each Database oplab queues itself says why on its event: the hand-over
// and the take-back were drawn as "namespace resumed", which a learner who
// had paused nothing could not place.
func TestSweepsSayWhyTheyCame(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("swept", 1, ""))
	polltest.Until(e.t, deadline, "a first reconcile of swept", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("swept"), func(s Step) bool { return s.Type == StepResult }), nil
	})
	sweptFor := func(why string) func() (bool, error) {
		return func() (bool, error) {
			return slices.ContainsFunc(e.sink.forDatabase("swept"), func(s Step) bool {
				return s.Type == StepEvent && s.Event == "generic" && s.Message == why
			}), nil
		}
	}
	r.HandOver(e.ns, &stubReconciler{})
	polltest.Until(e.t, deadline, "the hand-over's event on swept", sweptFor(whyHanded))
	r.TakeBack(e.ns)
	polltest.Until(e.t, deadline, "the take-back's event on swept", sweptFor(whyTakenBack))
	r.PauseNamespace(e.ns)
	r.ResumeNamespace(e.ns)
	polltest.Until(e.t, deadline, "the resume's event on swept", sweptFor(whyResumed))
	for _, s := range e.sink.forDatabase("swept") {
		if s.Type == StepEvent && s.Event == "generic" && !strings.HasSuffix(s.Message, ": reconcile every Database in it") {
			t.Errorf("a generic event says %q; want why, then what it does", s.Message)
		}
	}
}

// rewriter writes back the status it read, as learner code that writes on
// every reconcile does.
type rewriter struct{}

func (rewriter) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	var db dbv1.Database
	if err := c.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, c.Status().Update(ctx, &db)
}

// A status write that equals the stored status is one the real API server
// keeps as it was: no new resourceVersion, so no watch event. The step says
// so (Unchanged).
func TestAnUnchangedStatusWriteIsMarked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("same", 1, ""))
	polltest.Until(e.t, deadline, "oplab's status write on same", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("same"), func(s Step) bool { return s.Type == StepStatus && !s.Skipped && s.Error == "" }), nil
	})
	r.HandOver(e.ns, rewriter{})
	polltest.Until(e.t, deadline, "the rewriter's status write", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("same"), func(s Step) bool { return s.Type == StepStatus && s.YourCode }), nil
	})
	var got []Step
	for _, s := range e.sink.forDatabase("same") {
		if s.Type == StepStatus && s.YourCode {
			got = append(got, s)
		}
	}
	for _, s := range got {
		if !s.Unchanged || s.ResourceVersion == "" || !strings.Contains(s.Message, "no watch event follows") {
			t.Errorf("the learner's write of the status it read: %+v; want it marked unchanged, at the resourceVersion kept", s)
		}
	}
	// oplab's own writes changed something each time.
	for _, s := range e.sink.forDatabase("same") {
		if s.Type == StepStatus && !s.YourCode && s.Unchanged {
			t.Errorf("oplab's status write is marked unchanged: %+v", s)
		}
	}
}

// writesNothing fetches its Database and returns, writing nothing.
type writesNothing struct{}

func (writesNothing) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	return ctrl.Result{}, client.IgnoreNotFound(c.Get(ctx, req.NamespacedName, &dbv1.Database{}))
}

// failing fetches its Database and fails, as learner code that panics does.
type failing struct{}

func (failing) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	if err := c.Get(ctx, req.NamespacedName, &dbv1.Database{}); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, errors.New("your code panicked")
}

// Of a reconcile by the learner's code that wrote no status, the trace
// knows only that: it says "no status write", not that the status was
// found unchanged (oplab's comparison, which that code may not make); and
// of one that failed first, it says nothing beyond the error.
func TestNoStatusWriteOfYourCodeIsNotCalledUnchanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("quiet", 1, ""))
	polltest.Until(e.t, deadline, "oplab's first reconcile of quiet", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("quiet"), func(s Step) bool { return s.Type == StepResult }), nil
	})
	// The learner's reconciles: their result, and their status steps.
	type run struct {
		result string
		status []Step
	}
	yours := func() map[string]*run {
		runs := map[string]*run{}
		for _, s := range e.sink.forDatabase("quiet") {
			if !s.YourCode {
				continue
			}
			if runs[s.ReconcileID] == nil {
				runs[s.ReconcileID] = &run{}
			}
			switch s.Type {
			case StepResult:
				runs[s.ReconcileID].result = s.Result
			case StepStatus:
				runs[s.ReconcileID].status = append(runs[s.ReconcileID].status, s)
			}
		}
		return runs
	}
	ended := func(result string) func() (bool, error) {
		return func() (bool, error) {
			for _, r := range yours() {
				if r.result == result {
					return true, nil
				}
			}
			return false, nil
		}
	}
	r.HandOver(e.ns, writesNothing{})
	polltest.Until(e.t, deadline, "a reconcile that wrote nothing", ended("done"))
	r.HandOver(e.ns, failing{})
	polltest.Until(e.t, deadline, "a reconcile that failed", ended("error"))
	for id, run := range yours() {
		switch run.result {
		case "done":
			if len(run.status) != 1 || !run.status[0].Skipped || run.status[0].Message != "no status write: your code wrote no status in this reconcile" {
				t.Errorf("reconcile %s wrote nothing; its status steps %+v, want one saying no status write", id, run.status)
			}
		case "error":
			if len(run.status) != 0 {
				t.Errorf("reconcile %s failed before any write; its status steps %+v, want none", id, run.status)
			}
		}
	}
}

// readsChild reads its Database and the StatefulSet of the same name, and
// a Service that is not there.
type readsChild struct{}

func (readsChild) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	if err := c.Get(ctx, req.NamespacedName, &dbv1.Database{}); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := c.Get(ctx, req.NamespacedName, &appsv1.StatefulSet{}); err != nil {
		return ctrl.Result{}, err
	}
	if err := c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, client.IgnoreNotFound(c.Get(ctx, req.NamespacedName, &corev1.Service{}))
}

// A child the learner's code reads is a read on the timeline, found or not:
// the diff oplab's controller would make of it is not the learner's.
func TestYourCodesChildReadsAreReadsNotDiffs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("peek", 1, ""))
	polltest.Until(e.t, deadline, "oplab's diff of peek's StatefulSet", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("peek"), func(s Step) bool {
			return s.Type == StepDiff && !s.YourCode && s.Target != nil && s.Target.Kind == "StatefulSet"
		}), nil
	})
	r.HandOver(e.ns, readsChild{})
	read := func(kind, found string) func() (bool, error) {
		return func() (bool, error) {
			return slices.ContainsFunc(e.sink.forDatabase("peek"), func(s Step) bool {
				return s.YourCode && s.Type == StepRead && s.Target != nil && s.Target.Kind == kind && s.Found == found
			}), nil
		}
	}
	polltest.Until(e.t, deadline, "the learner's read of the StatefulSet, found", read("StatefulSet", "found"))
	polltest.Until(e.t, deadline, "the learner's read of the Service it deleted, not found", read("Service", "not-found"))
	for _, s := range e.sink.forDatabase("peek") {
		if s.YourCode && s.Type == StepDiff {
			t.Errorf("a reconcile of the learner's code has oplab's diff: %+v", s)
		}
	}
}

// New code starts with no backoff: the failures of the code before it
// (a learner runs one panicking version after another) made the first
// failure of the next wait up to 1000 s.
func TestAHandOverForgetsTheBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("flaky", 1, ""))
	polltest.Until(e.t, deadline, "oplab's first reconcile of flaky", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("flaky"), func(s Step) bool { return s.Type == StepResult }), nil
	})
	r.HandOver(e.ns, failing{})
	polltest.Until(e.t, deadline, "five failures in a row", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("flaky"), func(s Step) bool { return s.Type == StepResult && s.YourCode && s.Retry >= 5 }), nil
	})
	handed := len(e.sink.forDatabase("flaky"))
	r.HandOver(e.ns, failing{})
	// The reconcile the hand-over queued, and its result.
	var first Step
	polltest.Until(e.t, deadline, "the hand-over's reconcile failing", func() (bool, error) {
		swept := ""
		for _, s := range e.sink.forDatabase("flaky")[handed:] {
			switch {
			case s.Type == StepReconcileStart && s.Event == "generic" && swept == "":
				swept = s.ReconcileID
			case s.Type == StepResult && s.ReconcileID == swept && swept != "":
				first = s
				return true, nil
			}
		}
		return false, nil
	})
	if first.Retry > 1 {
		t.Errorf("the new code's first failure is retry %d, due in %s; want the backoff started afresh", first.Retry, first.RequeueAfter)
	}
}

// updatesFinalizer keeps the finalizer as the kubebuilder book does, with
// Update rather than Patch: added while the Database lives, removed once it
// is being deleted.
type updatesFinalizer struct{}

func (updatesFinalizer) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	var db dbv1.Database
	if err := c.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	switch {
	case db.DeletionTimestamp.IsZero() && controllerutil.AddFinalizer(&db, Finalizer):
		return ctrl.Result{}, c.Update(ctx, &db)
	case !db.DeletionTimestamp.IsZero() && controllerutil.RemoveFinalizer(&db, Finalizer):
		return ctrl.Result{}, c.Update(ctx, &db)
	}
	return ctrl.Result{}, nil
}

// A learner's Update that adds or removes the finalizer is the finalizer
// step, as a Patch is: the timeline, the judge and the demos read that
// step, whichever write the learner chose.
func TestFinalizerWrittenWithUpdateIsTheFinalizerStep(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv)
	e := newEnv(t)
	r := e.startController(e.testOptions())
	r.HandOver(e.ns, updatesFinalizer{})
	e.mustCreate(newDB("booked", 1, ""))
	yours := func(phase string) func() (bool, error) {
		return func() (bool, error) {
			return slices.ContainsFunc(e.sink.forDatabase("booked"), func(s Step) bool {
				return s.Type == StepFinalizer && s.Phase == phase && s.YourCode
			}), nil
		}
	}
	polltest.Until(e.t, deadline, "the learner's finalizer added", yours("added"))
	if err := e.c.Delete(e.ctx, e.getDB("booked")); err != nil {
		t.Fatal(err)
	}
	e.expectGone(&dbv1.Database{}, "booked")
	polltest.Until(e.t, deadline, "the learner's finalizer removed", yours("removed"))
	for _, s := range e.sink.forDatabase("booked") {
		if s.Type == StepAction && s.Target != nil && s.Target.Kind == "Database" {
			t.Errorf("the finalizer's write is an %s action too: %+v", s.Action, s)
		}
	}
}
