package controller

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// TestQueueMeterMirrorsTheQueue: the meter counts as the priority queue
// does: an add of a key already ready coalesces, a delayed key counts as a
// retry and enters the depth only when its delay is over, a worker taking
// a key takes it out of the depth, and each reconcile is counted by result.
func TestQueueMeterMirrorsTheQueue(t *testing.T) {
	now := t0
	m := newQueueMeter(func() time.Time { return now }, 30*time.Second)
	key := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "lab-a", Name: name}}
	}
	for range 5 {
		m.added(key("shop"), 0, true) // five events, one key
	}
	m.added(key("cart"), 0, true)
	m.added(key("slow"), 4*time.Second, false)
	want := QueueSample{From: t0, Events: 6, Coalesced: 4, Adds: 2, Retries: 1, Depth: 2, Waiting: 1}
	if got := m.sample("lab-a"); got != want {
		t.Errorf("after the adds: %+v, want %+v", got, want)
	}
	m.taken(key("shop"))
	m.finished(key("shop"), reconcile.Result{RequeueAfter: time.Second}, nil, false)
	m.taken(key("cart"))
	m.finished(key("cart"), reconcile.Result{}, errors.New("boom"), true)
	now = now.Add(5 * time.Second) // slow's delay is over
	want = QueueSample{From: t0, Events: 6, Coalesced: 4, Adds: 3, Retries: 1, Depth: 1, Requeued: 1,
		Reconciles: ReconcileCounts{RequeueAfter: 1, Error: 1}, YourCode: ReconcileCounts{Error: 1}}
	if got := m.sample("lab-a"); got != want {
		t.Errorf("after two reconciles and a delay: %+v, want %+v", got, want)
	}
	if got := m.sample("lab-b"); got != (QueueSample{}) {
		t.Errorf("another namespace: %+v, want nothing", got)
	}
	// Taken only once changed, and forgotten once idle and empty.
	if got := m.changedSince(time.Minute); len(got) != 1 {
		t.Errorf("changed namespaces %v, want lab-a", got)
	}
	if got := m.changedSince(time.Minute); len(got) != 0 {
		t.Errorf("changed again without a change: %v", got)
	}
	m.taken(key("slow"))
	m.finished(key("slow"), reconcile.Result{}, nil, false)
	if got := m.changedSince(time.Minute); got["lab-a"].Depth != 0 || got["lab-a"].Reconciles.Success != 1 {
		t.Errorf("after the last reconcile: %+v", got)
	}
	now = now.Add(2 * time.Minute)
	m.changedSince(time.Minute)
	if _, kept := m.spaces["lab-a"]; kept {
		t.Errorf("an idle, empty namespace is still kept")
	}
}

// TestQueueNumbersAreControllerRuntimes runs the real controller, with one
// worker, over a few Databases (one in an error loop, one patched five
// times in a row), deletes them, and once its namespace's queue is empty
// compares what the meter counted with what controller-runtime's own
// metrics counted meanwhile: the same adds, retries and reconciles by
// result. It is not parallel: the metrics are the whole process's.
func TestQueueNumbersAreControllerRuntimes(t *testing.T) {
	e := newEnv(t)
	before := controllerMetrics(t)
	opts := e.testOptions()
	opts.MaxConcurrentReconciles = 1
	r := e.startController(opts)
	for _, db := range []*dbv1.Database{newDB("plain", 1, ""), newDB("other", 1, ""), newDB("third", 1, ""), newDB("twice", 1, PitfallNonIdempotentCreate)} {
		e.mustCreate(db)
	}
	for _, name := range []string{"plain", "other", "third"} {
		e.expectReady(name)
	}
	polltest.Until(e.t, deadline, "three failed reconciles of twice", func() (bool, error) {
		s, _ := r.QueueSample(e.ns)
		return s.Reconciles.Error >= 3, nil
	})
	for i := range 5 {
		db := e.getDB("plain")
		db.Annotations = map[string]string{"touch": fmt.Sprint(i)}
		if err := e.c.Update(e.ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"plain", "other", "third", "twice"} {
		if err := e.c.Delete(e.ctx, &dbv1.Database{ObjectMeta: e.getDB(name).ObjectMeta}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"plain", "other", "third", "twice"} {
		e.expectGone(&dbv1.Database{}, name)
	}
	var got QueueSample
	polltest.Until(e.t, deadline, "the namespace's queue empty", func() (bool, error) {
		s, ok := r.QueueSample(e.ns)
		got = s
		return ok && s.Depth == 0 && s.Waiting == 0 && s.Active == 0, nil
	})
	after := controllerMetrics(t)
	delta := func(name string) int64 { return int64(after[name] - before[name]) }
	for name, mine := range map[string]int64{
		"workqueue_adds_total":                                     got.Adds,
		"workqueue_retries_total":                                  got.Retries,
		"controller_runtime_reconcile_total{result=success}":       got.Reconciles.Success,
		"controller_runtime_reconcile_total{result=error}":         got.Reconciles.Error,
		"controller_runtime_reconcile_total{result=requeue_after}": got.Reconciles.RequeueAfter,
		"controller_runtime_reconcile_total{result=requeue}":       got.Reconciles.Requeue,
		"controller_runtime_reconcile_errors_total":                got.Reconciles.Error,
	} {
		if delta(name) != mine {
			t.Errorf("%s went up by %d; the namespace's meter says %d", name, delta(name), mine)
		}
	}
	t.Logf("the namespace's queue: %+v", got)

	// What the picture is for: events coalesced while their key waited in
	// the queue for the one worker, the error loop's retries.
	if got.Coalesced == 0 || got.Retries == 0 || got.Reconciles.Error < 3 {
		t.Errorf("no coalescing, retries or errors to see: %+v", got)
	}
}

// controllerMetrics reads controller-runtime's metrics of the controller
// named database: workqueue counters by name, reconcile totals by result.
func controllerMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	label := func(m *dto.Metric, name string) string {
		i := slices.IndexFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == name })
		if i < 0 {
			return ""
		}
		return m.GetLabel()[i].GetValue()
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "workqueue_adds_total", "workqueue_retries_total":
				if label(m, "name") == "database" {
					out[f.GetName()] += m.GetCounter().GetValue()
				}
			case "controller_runtime_reconcile_total":
				if label(m, "controller") == "database" {
					out[f.GetName()+"{result="+label(m, "result")+"}"] += m.GetCounter().GetValue()
				}
			case "controller_runtime_reconcile_errors_total":
				if label(m, "controller") == "database" {
					out[f.GetName()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
