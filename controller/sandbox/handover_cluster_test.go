package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// sharedCluster is the full-mode cluster the cluster tests share
// (kube-controller-manager and kwok make StatefulSets' Pods ready);
// TestMain stops it.
var sharedCluster = clustertest.Full(controller.CRDs, controller.InstallLearnerPolicies)

func startCluster(t testing.TB) *cluster.Cluster { return sharedCluster.Get(t) }

type steps struct {
	mu sync.Mutex
	s  []controller.Step
}

func (r *steps) Emit(s controller.Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s = append(r.s, s)
}

func (r *steps) find(f func(controller.Step) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.s {
		if f(s) {
			return true
		}
	}
	return false
}

// handOverEnv starts a controller for one new namespace and hands it to
// learner code compiled from src.
type handOverEnv struct {
	ctx    context.Context
	c      client.Client
	ns     string
	runner *controller.Runner
	sb     *Sandbox
	steps  *steps
}

func newHandOverEnv(t *testing.T, src string) *handOverEnv {
	t.Helper()
	cl := startCluster(t)
	ctx := context.Background()
	c, err := client.New(cl.Config(), client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	// A lab namespace, as oplab makes them: the learner code's policy
	// holds there.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbx-", Labels: map[string]string{"oplab.dev/lab": "true"}}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	rec := &steps{}
	opts := controller.DefaultOptions()
	opts.Sink, opts.Namespaces, opts.ResyncPeriod = rec, []string{ns.Name}, 5*time.Second
	r := controller.NewRunner(cl.Config(), opts)
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	sb := testSandbox(t)
	compileOK(t, sb, src)
	if err := r.GrantCode(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	r.HandOver(ns.Name, sb)
	return &handOverEnv{ctx: ctx, c: c, ns: ns.Name, runner: r, sb: sb, steps: rec}
}

// TestOplabStarterWalksTheInterview hands a namespace to the starter that
// is oplab's own reconciler in facade style and walks the interview: an
// owned StatefulSet, Ready, connection info, a delete through the
// finalizer that leaves the snapshot; every step of it on the trace,
// marked as the learner's code.
func TestOplabStarterWalksTheInterview(t *testing.T) {
	e := newHandOverEnv(t, starters.Source("oplab"))
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "shop"}}
	if err := e.c.Create(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 3*time.Minute, "Ready", func() (bool, error) {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(db), db); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(db.Status.Conditions, "Ready") && db.Status.ObservedGeneration == db.Generation &&
			db.Status.Endpoint != "" && db.Status.SecretName != "", nil
	})
	if !e.steps.find(func(s controller.Step) bool {
		return s.YourCode && s.Type == controller.StepAction && s.Action == "create" && s.Target != nil && s.Target.Kind == "StatefulSet"
	}) {
		t.Error("no StatefulSet create marked as your code on the trace")
	}
	if e.steps.find(func(s controller.Step) bool {
		return s.Database == "shop" && s.Type == controller.StepReconcileStart && !s.YourCode
	}) {
		t.Error("oplab's own reconciler ran on a handed-over namespace")
	}
	if err := e.c.Delete(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 3*time.Minute, "the Database gone", func() (bool, error) {
		err := e.c.Get(e.ctx, client.ObjectKeyFromObject(db), &dbv1.Database{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	var snap corev1.ConfigMap
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: controller.SnapshotName("shop")}, &snap); err != nil {
		t.Fatalf("the final snapshot: %v", err)
	}
	// The learner's code records "removed" once the write that lets the
	// Database go has returned, so the step can lag the Database's going.
	for _, phase := range []string{"added", "snapshot", "removed"} {
		polltest.Until(t, 3*time.Minute, "a finalizer step "+phase+" marked as your code", func() (bool, error) {
			return e.steps.find(func(s controller.Step) bool {
				return s.YourCode && s.Type == controller.StepFinalizer && s.Phase == phase && s.Database == "shop"
			}), nil
		})
	}

	// Back to oplab's controller: a new Database is reconciled by it.
	e.runner.TakeBack(e.ns)
	db2 := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "after"}}
	if err := e.c.Create(e.ctx, db2); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 3*time.Minute, "oplab's reconcile of the second Database", func() (bool, error) {
		return e.steps.find(func(s controller.Step) bool {
			return s.Database == "after" && s.Type == controller.StepResult && !s.YourCode
		}), nil
	})
}

// TestDeadlineIsAFailedReconcileRetried: learner code that never returns is
// a failed reconcile on the trace, and the work queue retries it.
func TestDeadlineIsAFailedReconcileRetried(t *testing.T) {
	e := newHandOverEnv(t, learner("", "\tfor {\n\t}"))
	e.sb.Deadline = 300 * time.Millisecond
	if err := e.c.Create(e.ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "spin"}}); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 3*time.Minute, "two failed reconciles", func() (bool, error) {
		return e.steps.find(func(s controller.Step) bool {
			return s.YourCode && s.Type == controller.StepResult && s.Result == "error" && s.Retry >= 1
		}), nil
	})
}

// BenchmarkRunToFirstReconcile is "press Run → the first reconcile of the
// learner's code on the timeline": compile in a fresh child, hand over,
// and the first result step marked your code for an existing Database.
func BenchmarkRunToFirstReconcile(b *testing.B) {
	cl := startCluster(b)
	ctx := context.Background()
	c, err := client.New(cl.Config(), client.Options{Scheme: newScheme()})
	if err != nil {
		b.Fatal(err)
	}
	// A lab namespace whose learner-code identity is granted once, as
	// /code grants it before a hand-over: the figure is the hand-over's.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbx-bench-", Labels: map[string]string{"oplab.dev/lab": "true"}}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	rec := &steps{}
	opts := controller.DefaultOptions()
	opts.Sink, opts.Namespaces = rec, []string{ns.Name}
	r := controller.NewRunner(cl.Config(), opts)
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Stop() })
	if err := r.GrantCode(ctx, ns.Name); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop"}}); err != nil {
		b.Fatal(err)
	}
	src := starters.Source("oplab")
	var d []time.Duration
	for b.Loop() {
		rec.mu.Lock()
		from := len(rec.s)
		rec.mu.Unlock()
		sb := &Sandbox{Command: testSandboxCommand}
		began := time.Now()
		if serr := sb.Compile(ctx, src); serr != nil {
			b.Fatal(serr)
		}
		r.HandOver(ns.Name, sb)
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for _, s := range rec.s[from:] {
				if s.YourCode && s.Type == controller.StepResult {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(began))
		r.TakeBack(ns.Name)
		sb.Close()
	}
	percentiles(b, "run-to-first-reconcile", d)
}
