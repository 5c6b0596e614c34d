package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The trace is taken from outside the reconciler: tracedReconciler opens
// and closes each reconcile (reconcile.start, result); the client the
// reconciler is given records what each API call did (fetch, diff, action,
// finalizer, status), and so does its APIReader; the event filter
// (triggers.go) records the watch events. The reconciler's own code holds no
// trace call: what its calls mean (a child compared, Pods drained, a
// snapshot written) the wrappers work out from the calls themselves.

// tracedReconciler wraps the reconciler in its trace: a start step saying
// what triggered the reconcile, and a result step saying how it ended, how
// long it took and when the next one is due.
type tracedReconciler struct {
	inner reconcile.Reconciler
	tr    tracer
	book  *triggerBook
	// backoff is the work queue's per-item failure limiter; the wrapper
	// only reads it, to report how long a retry will wait.
	backoff workqueue.TypedRateLimiter[reconcile.Request]
	resync  time.Duration
	gate    *pauseGate
	// client is the traced client inner uses.
	client client.Client
	// code gives a namespace handed to learner code its own client, which
	// writes as the code's ServiceAccount (code_identity.go); nil lends it
	// client, oplab's own (tests of the hand-over alone).
	code *codeClients
	// meter counts each reconcile per namespace by its result (queue.go);
	// nil counts nothing (a Driver's reconciles, outside the queue).
	meter *queueMeter
}

var _ reconcile.Reconciler = &tracedReconciler{}

func (t *tracedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, err error) {
	yourCode := false
	if t.meter != nil {
		defer func() { t.meter.finished(req, res, err, yourCode) }()
	}
	if t.gate.hold(req.NamespacedName) {
		// A resync or retry came due while the namespace is paused: put it
		// aside. Resuming reconciles every Database of the namespace.
		return ctrl.Result{}, nil
	}
	if t.gate.isEnding(req.Namespace) {
		// The namespace is being deleted with its learner's session
		// (Runner.EndNamespace): a reconcile now would only recreate
		// children the API server refuses in a terminating namespace,
		// fail, retry and log each time (2,116 error lines for a class
		// of 307). Or it is a tester's scratch namespace, its driver's
		// to reconcile (Runner.Ignore).
		return ctrl.Result{}, nil
	}
	rt := &reconcileTrace{
		tracer:   t.tr,
		id:       reconcileID(ctx),
		database: ObjectRef{Kind: "Database", Namespace: req.Namespace, Name: req.Name},
	}
	began := rt.now()
	trigger, n, first := t.book.reconcileStarted(req.NamespacedName)
	retry := 0
	if trigger == TriggerRequeue {
		retry = t.backoff.NumRequeues(req)
	}
	inner := t.reconcilerFor(ctx, req, rt)
	yourCode = rt.yourCode
	start := Step{Type: StepReconcileStart, Trigger: trigger, Retry: retry, FirstEvent: first.words(),
		Message: triggerMessage(trigger, n, retry)}
	if first.event != "" {
		start.WokenBy, start.Event, start.Watch, start.OwnWrite = &first.object, first.event, first.watch, first.own
	}
	rt.step(start)

	res, err = inner.Reconcile(withTrace(ctx, rt), req)

	switch {
	case rt.found != "found" || rt.statusSaid:
	case !rt.yourCode:
		rt.step(Step{Type: StepStatus, Skipped: true, ObservedGeneration: rt.observed,
			Message: "status unchanged; nothing written"})
	case err == nil:
		// The learner's code may not compare before it writes, or write at
		// all: all the trace knows is that it wrote nothing.
		rt.step(Step{Type: StepStatus, Skipped: true, ObservedGeneration: rt.observed,
			Message: "no status write: your code wrote no status in this reconcile"})
	}
	// The learner's code that failed before a status write ends in its
	// error, which says why: no status step.
	t.report(rt, req, res, err, rt.now().Sub(began))
	if rt.found == "not-found" {
		t.book.forget(req.NamespacedName)
	}
	return res, err
}

// driverIDKey carries a reconcile's ID when a Driver, not
// controller-runtime, runs it.
type driverIDKey struct{}

// reconcileID is the reconcile's ID: controller-runtime's, or a Driver's.
func reconcileID(ctx context.Context) string {
	if id, ok := ctx.Value(driverIDKey{}).(string); ok {
		return id
	}
	return string(controller.ReconcileIDFromContext(ctx))
}

func triggerMessage(trigger string, events, failures int) string {
	switch {
	case trigger == TriggerEvent && events > 1:
		return fmt.Sprintf("%d watch events coalesced into one reconcile", events)
	case trigger == TriggerEvent:
		return "1 watch event"
	case trigger == TriggerRequeue && failures > 0:
		return fmt.Sprintf("retry %d after backoff", failures)
	case trigger == TriggerRequeue:
		return "requeued by the last reconcile"
	}
	return "periodic resync"
}

// report emits the result step and tells the trigger book what comes next.
func (t *tracedReconciler) report(rt *reconcileTrace, req reconcile.Request, res ctrl.Result, err error, took time.Duration) {
	s := Step{Type: StepResult, Duration: took, RequeueAfter: res.RequeueAfter}
	switch {
	case errors.Is(err, reconcile.TerminalError(nil)):
		s.Result, s.Error, s.RequeueAfter = "error", errText(err), 0
		s.Message = "error; not retried (terminal)"
	case err != nil:
		// The work queue retries after an exponential backoff that grows
		// with each consecutive failure: 5ms, 10ms, 20ms, ...
		s.Retry = t.backoff.NumRequeues(req)
		s.Result, s.Error = "error", errText(err)
		s.RequeueAfter = expectedBackoff(s.Retry)
		s.Message = fmt.Sprintf("error; retry %d with backoff in about %s", s.Retry+1, s.RequeueAfter)
		t.book.reconcileEnded(req.NamespacedName, TriggerRequeue)
	case res.RequeueAfter > 0 && res.RequeueAfter < t.resync:
		s.Result, s.Message = "requeue", fmt.Sprintf("requeue after %s", res.RequeueAfter.Round(time.Millisecond))
		t.book.reconcileEnded(req.NamespacedName, TriggerRequeue)
	case res.RequeueAfter > 0:
		s.Result, s.Message = "done", fmt.Sprintf("done; resync in %s", res.RequeueAfter)
		t.book.reconcileEnded(req.NamespacedName, TriggerResync)
	default:
		s.Result, s.Message = "done", "done"
	}
	rt.step(s)
}

// expectedBackoff mirrors the work queue's per-item exponential failure
// limiter: base·2^failures, capped. It is for the timeline only.
func expectedBackoff(failures int) time.Duration {
	d := backoffBase
	for range failures {
		if d >= backoffMax {
			return backoffMax
		}
		d *= 2
	}
	return min(d, backoffMax)
}

// The work queue's failure backoff: controller-runtime's defaults.
const (
	backoffBase = 5 * time.Millisecond
	backoffMax  = 1000 * time.Second
)
