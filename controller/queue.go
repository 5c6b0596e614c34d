package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The work queue as a picture. controller-runtime exports its work queue's
// numbers (workqueue_adds_total, workqueue_depth, workqueue_retries_total)
// and its reconciles' (controller_runtime_reconcile_total by result,
// controller_runtime_reconcile_errors_total) for the whole controller. A
// learner shares the controller with the class, so the lab needs the same
// numbers for their namespace alone. meteredQueue is the controller's own
// queue (controller-runtime's priority queue, as it makes it), with every
// call counted per namespace exactly as the queue counts it for its
// metrics; tracedReconciler counts the reconciles as controller-runtime's
// reconcile handler does. TestQueueNumbersAreControllerRuntimes compares
// the two on the real cluster.

// QueueSample is one namespace's share of the controller's work queue and
// reconciles at a moment. The counters only grow (a controller started
// again starts them again from 0); the gauges are as of the moment.
type QueueSample struct {
	// From is when the counting began: the namespace's first event since
	// the controller started (or since its counters were forgotten, idle).
	// A picture drawn from the samples counts from zero then.
	From time.Time `json:"from"`
	// Events counts the watch events (and oplab's own sweeps) handed to
	// the queue to add at once: several of them for one Database before
	// it is reconciled coalesce into one add.
	Events int64 `json:"events"`
	// Coalesced counts the events whose key was in the queue, ready,
	// already: they changed nothing, the reconcile to come will see them.
	Coalesced int64 `json:"coalesced"`
	// Adds is workqueue_adds_total: keys that entered the queue ready to
	// be reconciled, whether a handler added them or a delay ran out.
	Adds int64 `json:"adds"`
	// Retries is workqueue_retries_total: keys added with a delay, a
	// failed reconcile's backoff or a requested requeue.
	Retries int64 `json:"retries"`
	// Depth is workqueue_depth: keys ready and waiting for a worker.
	Depth int `json:"depth"`
	// Waiting is keys in the queue still waiting out a delay (a backoff,
	// a requeue, the resync), which workqueue_depth leaves out.
	Waiting int `json:"waiting"`
	// Active is controller_runtime_active_workers: reconciles running now.
	Active int `json:"active"`
	// Requeued counts the reconciles that asked to run again sooner than
	// the resync (a requeue, in the timeline's words); controller-runtime
	// counts them among requeue_after, with every resync scheduled.
	Requeued int64 `json:"requeued"`
	// Reconciles is controller_runtime_reconcile_total by its result label:
	// success, error, requeue and requeue_after.
	Reconciles ReconcileCounts `json:"reconciles"`
	// YourCode counts the reconciles of them that the learner's own code
	// ran (Runner.HandOver), in the same results.
	YourCode ReconcileCounts `json:"yourCode"`
}

// ReconcileCounts are reconciles by how they ended, as
// controller_runtime_reconcile_total's result label names them; Error is
// also controller_runtime_reconcile_errors_total.
type ReconcileCounts struct {
	Success      int64 `json:"success,omitempty"`
	Error        int64 `json:"error,omitempty"`
	Requeue      int64 `json:"requeue,omitempty"`
	RequeueAfter int64 `json:"requeueAfter,omitempty"`
}

// Total is every reconcile counted.
func (c ReconcileCounts) Total() int64 { return c.Success + c.Error + c.Requeue + c.RequeueAfter }

// queueMeter keeps QueueSample per namespace. The work queue is called from
// every worker and event handler at once and keeps its own state under a
// lock; the meter mirrors that state, so it is changed under a lock of its
// own in the same calls, held for a few map operations.
type queueMeter struct {
	mu     sync.Mutex
	now    func() time.Time
	resync time.Duration // a requeue sooner than this is Requeued
	spaces map[string]*nsQueue
}

// nsQueue is one namespace's sample, the keys of it in the queue as the
// queue holds them, and when the sample last changed.
type nsQueue struct {
	QueueSample
	items   map[reconcile.Request]*time.Time // nil: ready; else ready at
	changed time.Time
	// rev counts the changes, sent is the rev last taken.
	rev, sent uint64
}

func newQueueMeter(now func() time.Time, resync time.Duration) *queueMeter {
	return &queueMeter{now: now, resync: resync, spaces: map[string]*nsQueue{}}
}

func (m *queueMeter) space(ns string) *nsQueue {
	q := m.spaces[ns]
	if q == nil {
		q = &nsQueue{items: map[reconcile.Request]*time.Time{}}
		q.From = m.now()
		m.spaces[ns] = q
	}
	q.changed = m.now()
	q.rev++
	return q
}

// added mirrors the priority queue's add of key with a delay after (0:
// ready at once); direct says a handler asked (an event).
func (m *queueMeter) added(key reconcile.Request, after time.Duration, direct bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.space(key.Namespace)
	if direct {
		q.Events++
	}
	var at *time.Time
	if after > 0 {
		t := m.now().Add(after)
		at = &t
		q.Retries++
	}
	have, ok := q.items[key]
	switch {
	case !ok && at == nil:
		q.items[key] = nil
		q.Adds++
		q.Depth++
	case !ok:
		q.items[key] = at
		q.Waiting++
	case have == nil:
		// Ready already: an add with any delay changes nothing.
		if direct {
			q.Coalesced++
		}
	case at == nil:
		// A delayed key added at once: ready now.
		q.items[key] = nil
		q.Waiting--
		q.Adds++
		q.Depth++
	case at.Before(*have):
		q.items[key] = at
	}
}

// ripen moves the keys whose delay has run out to ready, as the queue does
// on its own. Call with mu held.
func (m *queueMeter) ripen(q *nsQueue) {
	now := m.now()
	for key, at := range q.items {
		if at != nil && !at.After(now) {
			q.items[key] = nil
			q.Waiting--
			q.Adds++
			q.Depth++
			q.changed = now
			q.rev++
		}
	}
}

// taken mirrors a worker getting key from the queue.
func (m *queueMeter) taken(key reconcile.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.space(key.Namespace)
	if at, ok := q.items[key]; ok {
		if at != nil {
			// Its delay ran out and the queue handed it out before the
			// meter looked.
			q.Waiting--
			q.Adds++
			q.Depth++
		}
		delete(q.items, key)
		q.Depth--
	}
	q.Active++
}

// finished counts a reconcile of key that ended in res and err, as
// controller-runtime's reconcile handler labels it, and the worker free
// again.
func (m *queueMeter) finished(key reconcile.Request, res reconcile.Result, err error, yourCode bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.space(key.Namespace)
	q.Active--
	if err == nil && res.RequeueAfter > 0 && res.RequeueAfter < m.resync {
		q.Requeued++
	}
	for _, c := range []*ReconcileCounts{&q.Reconciles, yourCodeCounts(q, yourCode)} {
		if c == nil {
			continue
		}
		switch {
		case err != nil:
			c.Error++
		case res.RequeueAfter > 0:
			c.RequeueAfter++
		case res.Requeue: //nolint:staticcheck // counted as controller-runtime counts it
			c.Requeue++
		default:
			c.Success++
		}
	}
}

func yourCodeCounts(q *nsQueue, yourCode bool) *ReconcileCounts {
	if yourCode {
		return &q.YourCode
	}
	return nil
}

// changedSince returns the samples of the namespaces that changed since
// they were last taken, and forgets namespaces with nothing in the queue
// that have not changed for idle.
func (m *queueMeter) changedSince(idle time.Duration) map[string]QueueSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := map[string]QueueSample{}
	for ns, q := range m.spaces {
		m.ripen(q)
		if q.rev != q.sent {
			q.sent = q.rev
			out[ns] = q.QueueSample
			continue
		}
		if len(q.items) == 0 && q.Active == 0 && now.Sub(q.changed) > idle {
			delete(m.spaces, ns)
		}
	}
	return out
}

// sample is ns's sample now, the zero sample for a namespace it has not seen.
func (m *queueMeter) sample(ns string) QueueSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.spaces[ns]
	if q == nil {
		return QueueSample{}
	}
	m.ripen(q)
	return q.QueueSample
}

// meteredQueue is the controller's work queue: controller-runtime's
// priority queue, made as controller-runtime makes it, with each call
// counted by the meter. A rate-limited add is turned into the delay the
// rate limiter gives, here, so that the meter knows the delay: the queue
// asks the same limiter, which counts a failure each time it is asked.
type meteredQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	limiter workqueue.TypedRateLimiter[reconcile.Request]
	meter   *queueMeter
}

var _ priorityqueue.PriorityQueue[reconcile.Request] = &meteredQueue{}

// newMeteredQueue is the controller's NewQueue option.
func newMeteredQueue(meter *queueMeter) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		inner := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = limiter })
		return &meteredQueue{PriorityQueue: inner, limiter: limiter, meter: meter}
	}
}

func (q *meteredQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, key := range items {
		after := o.After
		if o.RateLimited {
			if rl := q.limiter.When(key); after == 0 || rl < after {
				after = rl
			}
		}
		q.meter.added(key, after, after == 0 && !o.RateLimited)
		q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{After: after, Priority: o.Priority}, key)
	}
}

func (q *meteredQueue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

func (q *meteredQueue) AddAfter(item reconcile.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, item)
}

func (q *meteredQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q *meteredQueue) GetWithPriority() (reconcile.Request, int, bool) {
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.meter.taken(item)
	}
	return item, priority, shutdown
}

func (q *meteredQueue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// sampleEvery is how often the samples of namespaces whose queue changed
// go on the trace; queueIdle, how long an empty namespace's counters are
// kept unchanged before they are forgotten (a namespace gone).
const (
	sampleEvery = time.Second
	queueIdle   = 10 * time.Minute
)

// emitSamples puts on the trace, every sampleEvery until ctx ends, a
// StepQueue for each namespace whose share of the queue changed: a picture
// of the queue each second, and none while nothing happens.
func (m *queueMeter) emitSamples(ctx context.Context, tr tracer) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for ns, s := range m.changedSince(queueIdle) {
			tr.emit(Step{Type: StepQueue, Object: ObjectRef{Kind: "WorkQueue", Namespace: ns, Name: "database"}, Queue: &s})
		}
	}
}
