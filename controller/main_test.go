package controller

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// deadline bounds every wait. It is generous on purpose: the tests check
// that things happen, never how fast.
const deadline = 3 * time.Minute

func TestMain(m *testing.M) {
	// controller-runtime complains, with a stack trace, when no logger is set.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if err := shared.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

var (
	// shared is the full-mode cluster the package's tests share, with the
	// Database CRD installed.
	shared     = clustertest.Full(CRDs, InstallLearnerPolicies)
	testScheme = newTestScheme()
)

func newTestScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := dbv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// sharedCluster returns the package's cluster, started on first use.
func sharedCluster(t testing.TB) *cluster.Cluster { return shared.Get(t) }

// env is one test's slice of the shared cluster: its own namespace, a direct
// (uncached) client, and optionally a controller restricted to the namespace.
type env struct {
	t      testing.TB
	ctx    context.Context
	cfg    *rest.Config
	c      client.Client
	ns     string
	sink   *recordingSink
	runner *Runner
}

// newEnv creates a namespace; it does not start a controller.
func newEnv(t testing.TB) *env {
	t.Helper()
	cl := sharedCluster(t)
	cfg := rest.CopyConfig(cl.Config())
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	// Labelled as oplab's lab namespaces are: learner code runs only
	// where its admission policy holds, and the policy holds only there.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctl-", Labels: map[string]string{"oplab.dev/lab": "true"}}}
	ctx := context.Background()
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return &env{t: t, ctx: ctx, cfg: cfg, c: c, ns: ns.Name, sink: &recordingSink{}}
}

// testOptions are the shipped options with a short resync, so tests about
// resyncs do not wait 30 s, and the test's recording sink.
func (e *env) testOptions() Options {
	o := DefaultOptions()
	o.ResyncPeriod = 2 * time.Second
	o.Sink = e.sink
	o.Namespaces = []string{e.ns}
	return o
}

// startController starts a controller for the namespace and stops it when
// the test ends.
func (e *env) startController(opts Options) *Runner {
	e.t.Helper()
	r := NewRunner(e.cfg, opts)
	if err := r.Start(e.ctx); err != nil {
		e.t.Fatalf("starting controller: %v", err)
	}
	e.t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			e.t.Errorf("stopping controller: %v", err)
		}
	})
	e.runner = r
	return r
}

func newDB(name string, replicas int32, pitfall string) *dbv1.Database {
	db := &dbv1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       dbv1.DatabaseSpec{Replicas: replicas},
	}
	if pitfall != "" {
		db.Annotations = map[string]string{PitfallAnnotation: pitfall}
	}
	return db
}

// mustCreate creates obj in the test's namespace.
func (e *env) mustCreate(obj client.Object) {
	e.t.Helper()
	obj.SetNamespace(e.ns)
	if err := e.c.Create(e.ctx, obj); err != nil {
		e.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (e *env) key(name string) client.ObjectKey { return client.ObjectKey{Namespace: e.ns, Name: name} }

func (e *env) getDB(name string) *dbv1.Database {
	e.t.Helper()
	var db dbv1.Database
	if err := e.c.Get(e.ctx, e.key(name), &db); err != nil {
		e.t.Fatalf("getting database %s: %v", name, err)
	}
	return &db
}

// expectReady waits until the Database is Ready for its current generation.
func (e *env) expectReady(name string) *dbv1.Database {
	e.t.Helper()
	var db dbv1.Database
	polltest.Until(e.t, deadline, "database "+name+" Ready", func() (bool, error) {
		if err := e.c.Get(e.ctx, e.key(name), &db); err != nil {
			return false, err
		}
		return isReady(&db), nil
	})
	return &db
}

// markAfterReadyStep returns the sink's length just after the status step
// of the write that made name Ready. The object can read Ready before that
// step has reached the sink, so counting from "now" after expectReady could
// take the Ready write itself for a later one.
func (e *env) markAfterReadyStep(name string) int {
	e.t.Helper()
	mark := 0
	polltest.Until(e.t, deadline, "the status step that made "+name+" Ready", func() (bool, error) {
		for i, s := range e.sink.all() {
			if s.Database == name && s.Type == StepStatus && slices.ContainsFunc(s.Conditions, func(c ConditionChange) bool {
				return c.Type == ConditionReady && c.To == "True" && c.Transition
			}) {
				mark = i + 1
				return true, nil
			}
		}
		return false, nil
	})
	return mark
}

func isReady(db *dbv1.Database) bool {
	c := meta.FindStatusCondition(db.Status.Conditions, ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == db.Generation &&
		db.Status.ObservedGeneration == db.Generation
}

// expectGone waits until obj no longer exists.
func (e *env) expectGone(obj client.Object, name string) {
	e.t.Helper()
	polltest.Until(e.t, deadline, fmt.Sprintf("%T %s gone", obj, name), func() (bool, error) {
		err := e.c.Get(e.ctx, e.key(name), obj)
		return apierrors.IsNotFound(err), err
	})
}

// expectSettled waits until the last reconcile of name found nothing to do:
// it ended with a skipped status write and no reconcile is running.
func (e *env) expectSettled(name string) {
	e.t.Helper()
	polltest.Until(e.t, deadline, "database "+name+" settled", func() (bool, error) {
		steps := e.sink.forDatabase(name)
		var lastStart, lastStatus, lastResult int = -1, -1, -1
		for i, s := range steps {
			switch s.Type {
			case StepReconcileStart:
				lastStart = i
			case StepStatus:
				if s.Skipped {
					lastStatus = i
				} else {
					lastStatus = -1
				}
			case StepResult:
				lastResult = i
			}
		}
		return lastStart >= 0 && lastStatus > lastStart && lastResult > lastStatus, nil
	})
}

// recordingSink keeps every step. Emit takes a mutex for an append, which
// is as close to never blocking as a test needs.
type recordingSink struct {
	mu    sync.Mutex
	steps []Step
}

func (s *recordingSink) Emit(st Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, st)
}

func (s *recordingSink) all() []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.steps)
}

func (s *recordingSink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps)
}

// forDatabase returns the steps about the Database name (its own and its
// children's), in order.
func (s *recordingSink) forDatabase(name string) []Step {
	var out []Step
	for _, st := range s.all() {
		if st.Database == name {
			out = append(out, st)
		}
	}
	return out
}

// since returns the steps about name emitted after the first n steps.
func (s *recordingSink) since(n int, name string) []Step {
	all := s.all()
	var out []Step
	for _, st := range all[min(n, len(all)):] {
		if st.Database == name {
			out = append(out, st)
		}
	}
	return out
}

func describe(steps []Step) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "  %s %s/%s", s.Type, s.Object.Kind, s.Object.Name)
		if s.Target != nil {
			fmt.Fprintf(&b, " → %s/%s", s.Target.Kind, s.Target.Name)
		}
		for _, kv := range [][2]string{
			{"event", s.Event}, {"trigger", s.Trigger}, {"found", s.Found}, {"action", s.Action}, {"outcome", string(s.Outcome)},
			{"phase", s.Phase}, {"result", s.Result}, {"msg", s.Message}, {"err", s.Error},
		} {
			if kv[1] != "" {
				fmt.Fprintf(&b, " %s=%q", kv[0], kv[1])
			}
		}
		if s.Skipped {
			b.WriteString(" skipped")
		}
		if s.Ignored {
			b.WriteString(" ignored")
		}
		if len(s.Differences) > 0 {
			fmt.Fprintf(&b, " diff=%q", s.Differences)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// deleteServiceAndWaitForIt deletes the Database's Service behind the
// controller's back and waits until a new one (another UID) stands in its place.
func (e *env) deleteServiceAndWaitForIt(name string) {
	e.t.Helper()
	var svc corev1.Service
	if err := e.c.Get(e.ctx, e.key(name), &svc); err != nil {
		e.t.Fatal(err)
	}
	oldUID := svc.UID
	if err := e.c.Delete(e.ctx, &svc); err != nil {
		e.t.Fatal(err)
	}
	polltest.Until(e.t, deadline, "the Service recreated", func() (bool, error) {
		var got corev1.Service
		err := e.c.Get(e.ctx, e.key(name), &got)
		return err == nil && got.UID != oldUID, client.IgnoreNotFound(err)
	})
}
