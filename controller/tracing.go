package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/permission"
)

// The trace is taken from outside the reconciler: tracedReconciler opens
// and closes each reconcile (reconcile.start, result), the client the
// reconciler is given records what each API call did (fetch, action,
// finalizer, status), and the event handlers (events.go) record the watch
// events. The reconciler itself only notes what no API call shows.

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
	// client is the traced client inner uses, lent to a namespace's
	// override (override.go).
	client client.Client
}

var _ reconcile.Reconciler = &tracedReconciler{}

func (t *tracedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	if t.gate.hold(req.NamespacedName) {
		// A resync or retry came due while the namespace is paused: put it
		// aside. Resuming reconciles every Database of the namespace.
		return ctrl.Result{}, nil
	}
	rt := &reconcileTrace{
		tracer:   t.tr,
		id:       string(controller.ReconcileIDFromContext(ctx)),
		database: ObjectRef{Kind: "Database", Namespace: req.Namespace, Name: req.Name},
	}
	began := rt.now()
	trigger, n, first := t.book.reconcileStarted(req.NamespacedName)
	retry := 0
	if trigger == TriggerRequeue {
		retry = t.backoff.NumRequeues(req)
	}
	inner := t.reconcilerFor(req, rt)
	rt.step(Step{Type: StepReconcileStart, Trigger: trigger, Retry: retry, FirstEvent: first,
		Message: triggerMessage(trigger, n, retry)})

	res, err := inner.Reconcile(withTrace(ctx, rt), req)

	if rt.found == "found" && !rt.statusSaid {
		rt.step(Step{Type: StepStatus, Skipped: true, ObservedGeneration: rt.observed,
			Message: "status unchanged; nothing written"})
	}
	t.report(rt, req, res, err, rt.now().Sub(began))
	if rt.found == "not-found" {
		t.book.forget(req.NamespacedName)
	}
	return res, err
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

// tracingClient wraps c so that each call the reconciler makes is traced:
// reading its Database is the fetch step, a write to a child an action,
// adding or removing the finalizer a finalizer step, a status write the
// status step with the conditions it changed. before reads the Database as
// the reconciler last saw it, untraced, to tell what a write changed.
func tracingClient(c client.Client, before client.Reader, book *triggerBook) client.Client {
	t := &traceFuncs{before: before, book: book}
	return interceptor.NewClient(withoutWatch{c}, interceptor.Funcs{
		Get:               t.get,
		Create:            t.create,
		Update:            t.update,
		Patch:             t.patch,
		Delete:            t.delete,
		SubResourcePatch:  t.subResourcePatch,
		SubResourceUpdate: t.subResourceUpdate,
	})
}

type traceFuncs struct {
	before client.Reader
	book   *triggerBook
}

func (t *traceFuncs) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Get(ctx, key, obj, opts...)
	db, ok := obj.(*dbv1.Database)
	rt := traceOf(ctx)
	if !ok || rt == nil || key.Name != rt.database.Name || key.Namespace != rt.database.Namespace || rt.found != "" {
		return err
	}
	switch {
	case apierrors.IsNotFound(err):
		rt.found = "not-found"
		rt.step(Step{Type: StepFetch, Found: rt.found, Message: "the Database is gone; nothing to do"})
	case err != nil:
		rt.found = "error"
		rt.step(Step{Type: StepFetch, Found: rt.found, Error: errText(err)})
	default:
		rt.found, rt.observed, rt.pitfall = "found", db.Status.ObservedGeneration, PitfallShown(db)
		rt.step(Step{Type: StepFetch, Found: rt.found, Generation: db.Generation,
			Message: fmt.Sprintf("generation %d, observed %d", db.Generation, db.Status.ObservedGeneration)})
	}
	return err
}

func (t *traceFuncs) create(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	began := time.Now()
	err := c.Create(ctx, obj, opts...)
	outcome, msg := OutcomeCreated, ""
	switch {
	case apierrors.IsAlreadyExists(err):
		outcome, msg = OutcomeAlreadyExists, "already exists"
	case err != nil:
		outcome = OutcomeError
	}
	t.action(ctx, c, "create", obj, outcome, began, err, msg)
	return err
}

func (t *traceFuncs) update(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	began := time.Now()
	err := c.Update(ctx, obj, opts...)
	t.action(ctx, c, "update", obj, outcomeOf(err, OutcomeUpdated), began, err, "")
	return err
}

func (t *traceFuncs) delete(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	began := time.Now()
	err := c.Delete(ctx, obj, opts...)
	t.action(ctx, c, "delete", obj, outcomeOf(err, OutcomeDeleted), began, err, "")
	return err
}

// patch traces a patch of a child as an action, and a patch of the
// Database (the reconciler patches only its finalizers) as the finalizer
// step it amounts to.
func (t *traceFuncs) patch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	db, isDB := obj.(*dbv1.Database)
	had := false
	if isDB {
		had = t.hadFinalizer(ctx, db)
	}
	began := time.Now()
	err := c.Patch(ctx, obj, patch, opts...)
	rt := traceOf(ctx)
	if !isDB || err != nil || rt == nil {
		t.action(ctx, c, "patch", obj, outcomeOf(err, OutcomeUpdated), began, err, "")
		return err
	}
	switch has := controllerutil.ContainsFinalizer(db, Finalizer); {
	case has && !had:
		rt.step(Step{Type: StepFinalizer, Phase: "added", Duration: time.Since(began),
			Message: "finalizer " + Finalizer + " added: a delete will now wait for the final snapshot"})
	case had && !has:
		rt.step(Step{Type: StepFinalizer, Phase: "removed", Duration: time.Since(began),
			Message: "finalizer removed: the API server deletes the Database, the garbage collector its children"})
	default:
		t.action(ctx, c, "patch", obj, OutcomeUpdated, began, nil, "")
	}
	return nil
}

func (t *traceFuncs) hadFinalizer(ctx context.Context, db *dbv1.Database) bool {
	var old dbv1.Database
	if err := t.before.Get(ctx, client.ObjectKeyFromObject(db), &old); err != nil {
		return false
	}
	return controllerutil.ContainsFinalizer(&old, Finalizer)
}

func (t *traceFuncs) subResourcePatch(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return t.status(ctx, sub, obj, func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
}

func (t *traceFuncs) subResourceUpdate(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return t.status(ctx, sub, obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
}

// status traces a status write: the conditions it changed, compared with
// the status the reconciler had read, and how many writes this makes.
func (t *traceFuncs) status(ctx context.Context, sub string, obj client.Object, write func() error) error {
	db, ok := obj.(*dbv1.Database)
	rt := traceOf(ctx)
	if !ok || sub != "status" || rt == nil {
		return write()
	}
	var old dbv1.Database
	_ = t.before.Get(ctx, client.ObjectKeyFromObject(db), &old)
	began := time.Now()
	err := write()
	changes := conditionChanges(old.Status.Conditions, db.Status.Conditions)
	if err != nil {
		rt.step(Step{Type: StepStatus, Conditions: changes, Error: errText(err), Duration: time.Since(began)})
		return err
	}
	rt.statusWritten = true
	rt.step(Step{Type: StepStatus, Conditions: changes, Generation: db.Generation,
		ObservedGeneration: db.Status.ObservedGeneration, StatusWrites: t.book.statusWritten(client.ObjectKeyFromObject(db)),
		Duration: time.Since(began), Message: fmt.Sprintf("status written (%d condition change(s))", len(changes))})
	return nil
}

// action reports one change attempted on the cluster and its outcome.
func (t *traceFuncs) action(ctx context.Context, c client.Client, verb string, obj client.Object, outcome Outcome, began time.Time, err error, msg string) {
	rt := traceOf(ctx)
	if rt == nil {
		return
	}
	kind := ""
	if gvk, gerr := c.GroupVersionKindFor(obj); gerr == nil {
		kind = gvk.Kind
	}
	s := Step{Type: StepAction, Action: verb, Target: &ObjectRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Outcome: outcome, Message: msg, Duration: time.Since(began)}
	if err != nil && outcome == OutcomeError {
		s.Error = errText(err)
	}
	rt.step(s)
}

func outcomeOf(err error, ok Outcome) Outcome {
	if err != nil {
		return OutcomeError
	}
	return ok
}

// conditionChanges lists the conditions of next that differ from prev,
// a rewritten lastTransitionTime included.
func conditionChanges(prev, next []metav1.Condition) []ConditionChange {
	var out []ConditionChange
	for _, c := range next {
		old := meta.FindStatusCondition(prev, c.Type)
		if old != nil && equality.Semantic.DeepEqual(*old, c) {
			continue
		}
		ch := ConditionChange{Type: c.Type, To: string(c.Status), Reason: c.Reason, Message: c.Message, Transition: true,
			LastTransitionTime: rfc3339(c.LastTransitionTime)}
		if old != nil {
			ch.From = string(old.Status)
			ch.Transition = old.Status != c.Status
			ch.FromLastTransitionTime = rfc3339(old.LastTransitionTime)
		}
		out = append(out, ch)
	}
	return out
}

func rfc3339(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// withoutWatch lends a manager's client (which cannot watch) the Watch
// method the interceptor's client type requires; the reconciler never
// watches through it.
type withoutWatch struct{ client.Client }

func (withoutWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the reconciler's client does not watch")
}

// errText is an error as a step shows it: a permission oplab lacks in words
// (verb, resource, namespace, where to fix it), anything else as it is.
func errText(err error) string { return permission.Explain(err).Error() }
