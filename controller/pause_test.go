package controller

import (
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// newNamespace creates another namespace beside the test's own.
func (e *env) newNamespace() string {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctl-"}}
	if err := e.c.Create(e.ctx, ns); err != nil {
		e.t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// expectReadyIn waits until the Database ns/name is Ready.
func (e *env) expectReadyIn(ns, name string) *dbv1.Database {
	e.t.Helper()
	var db dbv1.Database
	polltest.Until(e.t, deadline, "database "+ns+"/"+name+" Ready", func() (bool, error) {
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: name}, &db); err != nil {
			return false, err
		}
		return isReady(&db), nil
	})
	return &db
}

func controllerSteps(steps []Step, ns string) []string {
	var out []string
	for _, s := range steps {
		if s.Type == StepController && s.Object.Namespace == ns {
			out = append(out, s.Phase)
		}
	}
	return out
}

// TestPauseNamespaceHoldsOnlyThatNamespace pauses namespace A of a
// controller that serves A and B: A's creates, patches and deletes are held
// (even across a whole-controller restart) while B's Databases go Ready; on
// resume A converges, and its pending delete finishes with its snapshot.
func TestPauseNamespaceHoldsOnlyThatNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.ns, e.newNamespace()
	opts := e.testOptions()
	opts.Namespaces = []string{a, b}
	r := e.startController(opts)
	e.mustCreate(newDB("keep", 1, ""))
	e.mustCreate(newDB("hatch", 1, ""))
	e.expectReady("keep")
	e.expectReady("hatch")
	e.expectSettled("keep")
	e.expectSettled("hatch")

	r.PauseNamespace(a)
	if !r.NamespacePaused(a) || r.NamespacePaused(b) {
		t.Fatalf("paused: a %v b %v, want only a", r.NamespacePaused(a), r.NamespacePaused(b))
	}
	mark := e.sink.len()

	e.mustCreate(newDB("fresh", 1, ""))
	db := e.getDB("fresh")
	patch := client.MergeFrom(db.DeepCopy())
	db.Spec.Replicas = 2
	if err := e.c.Patch(e.ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, e.getDB("keep")); err != nil {
		t.Fatal(err)
	}
	// The escape hatch, taken while paused: the Database goes at once,
	// without its snapshot.
	hatch := e.getDB("hatch")
	if err := e.c.Delete(e.ctx, hatch); err != nil {
		t.Fatal(err)
	}
	hatch = e.getDB("hatch")
	patch = client.MergeFrom(hatch.DeepCopy())
	hatch.Finalizers = nil
	if err := e.c.Patch(e.ctx, hatch, patch); err != nil {
		t.Fatal(err)
	}
	e.expectGone(&dbv1.Database{}, "hatch")

	other := newDB("other", 1, "")
	other.Namespace = b
	if err := e.c.Create(e.ctx, other); err != nil {
		t.Fatal(err)
	}
	e.expectReadyIn(b, "other")

	// A whole-controller restart keeps the namespace paused.
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	if !r.NamespacePaused(a) {
		t.Fatal("namespace a is no longer paused after a restart")
	}
	other2 := newDB("other-2", 1, "")
	other2.Namespace = b
	if err := e.c.Create(e.ctx, other2); err != nil {
		t.Fatal(err)
	}
	e.expectReadyIn(b, "other-2")

	// Nothing in A was reconciled: no finalizer, no status, the delete pending.
	if db := e.getDB("fresh"); len(db.Finalizers) != 0 || len(db.Status.Conditions) != 0 {
		t.Errorf("paused Database fresh was reconciled: finalizers %v conditions %v", db.Finalizers, db.Status.Conditions)
	}
	if db := e.getDB("keep"); db.DeletionTimestamp.IsZero() || !slices.Contains(db.Finalizers, Finalizer) {
		t.Errorf("keep: deletionTimestamp %v finalizers %v, want Terminating with our finalizer", db.DeletionTimestamp, db.Finalizers)
	}
	for _, name := range []string{"fresh", "keep"} {
		steps := e.sink.since(mark, name)
		// (A reconcile already running when the pause came may finish;
		// none may start.)
		if slices.ContainsFunc(steps, func(s Step) bool { return s.Type == StepReconcileStart }) {
			t.Errorf("%s was reconciled while paused:\n%s", name, describe(steps))
		}
		if !slices.ContainsFunc(steps, func(s Step) bool { return s.Type == StepEvent && s.Held && s.Message != "" }) {
			t.Errorf("no held event for %s on the trace:\n%s", name, describe(steps))
		}
		if slices.ContainsFunc(steps, func(s Step) bool { return s.Type == StepEvent && !s.Held }) {
			t.Errorf("an event for %s was not held:\n%s", name, describe(steps))
		}
	}

	r.ResumeNamespace(a)
	if r.NamespacePaused(a) {
		t.Fatal("still paused after resume")
	}
	db = e.expectReady("fresh")
	if db.Status.ObservedGeneration != 2 || db.Status.ReadyReplicas != 2 {
		t.Errorf("fresh: observedGeneration %d readyReplicas %d, want 2 and 2", db.Status.ObservedGeneration, db.Status.ReadyReplicas)
	}
	e.expectGone(&dbv1.Database{}, "keep")
	e.expectSnapshot("keep")
	e.expectChildrenCollected("keep")
	e.expectChildrenCollected("hatch")
	var cm corev1.ConfigMap
	if err := e.c.Get(e.ctx, e.key(SnapshotName("hatch")), &cm); !apierrors.IsNotFound(err) {
		t.Errorf("snapshot of the escape-hatched Database: err %v, want NotFound", err)
	}

	// The resume reconcile coalesced what was held: one event-triggered
	// reconcile saw more than one event.
	resumed := e.sink.since(mark, "fresh")
	if !slices.ContainsFunc(resumed, func(s Step) bool {
		return s.Type == StepReconcileStart && s.Trigger == TriggerEvent && s.Message != "1 watch event"
	}) {
		t.Errorf("no reconcile of fresh coalesced the held events:\n%s", describe(resumed))
	}
	if got, want := controllerSteps(e.sink.all(), a), []string{"paused", "resumed"}; !slices.Equal(got, want) {
		t.Errorf("controller steps for namespace a = %v, want %v", got, want)
	}
	if got := controllerSteps(e.sink.all(), b); len(got) != 0 {
		t.Errorf("controller steps for namespace b = %v, want none", got)
	}
}

// blockingSink records steps, and blocks the reconcile of one Database at
// its start until released: a worker kept busy, so Stop has to wait.
type blockingSink struct {
	recordingSink
	name    string
	once    sync.Once
	blocked chan struct{}
	release chan struct{}
}

func (s *blockingSink) Emit(st Step) {
	s.recordingSink.Emit(st)
	if st.Type == StepReconcileStart && st.Object.Name == s.name {
		s.once.Do(func() {
			close(s.blocked)
			<-s.release
		})
	}
}

// TestRunningAnswersDuringStop checks that Running and the pause API do not
// wait behind a Stop that is waiting for a busy worker.
func TestRunningAnswersDuringStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sink := &blockingSink{name: "busy", blocked: make(chan struct{}), release: make(chan struct{})}
	opts := e.testOptions()
	opts.Sink = sink
	r := NewRunner(e.cfg, opts)
	if err := r.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.mustCreate(newDB("busy", 1, ""))
	<-sink.blocked

	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	polltest.Until(e.t, deadline, "Stop under way", func() (bool, error) {
		cur := r.cur.Load()
		return cur != nil && cur.stopping.Load(), nil
	})

	answered := make(chan bool, 1)
	go func() {
		running := r.Running()
		r.PauseNamespace(e.ns)
		_ = r.NamespacePaused(e.ns)
		r.ResumeNamespace(e.ns)
		answered <- running
	}()
	select {
	case running := <-answered:
		if !running {
			t.Error("Running() = false while the manager is still shutting down")
		}
	case <-time.After(deadline):
		t.Fatal("Running() and the pause API blocked behind Stop")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a reconcile was still running", err)
	default:
	}
	if err := r.Start(e.ctx); err == nil {
		t.Error("Start succeeded while the previous controller was stopping")
	}
	close(sink.release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if r.Running() {
		t.Error("Running() after Stop")
	}
}
