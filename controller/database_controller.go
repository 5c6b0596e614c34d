package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// The RBAC the controller needs, generated into controller/config/rbac by
// controller-gen. The embedded cluster runs it as an admin, but these are
// the rules it would need anywhere else.
//
// +kubebuilder:rbac:groups=db.oplab.dev,resources=databases,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=db.oplab.dev,resources=databases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=db.oplab.dev,resources=databases/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=services;secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// reconciler reconciles a Database into a Secret, a headless Service and a
// StatefulSet, and reports every step to its trace sink.
type reconciler struct {
	// client reads from the informer cache and writes to the API server.
	client client.Client
	// apiReader reads from the API server directly: for the few reads the
	// cache cannot answer (a child the cache has not seen yet, Pods).
	apiReader client.Reader
	scheme    *runtime.Scheme
	recorder  events.EventRecorder
	tr        tracer
	book      *triggerBook
	thrash    *thrashLimiter
	// backoff is the work queue's per-item failure limiter; the reconciler
	// only reads it, to report on the timeline how long a retry will wait.
	backoff workqueue.TypedRateLimiter[reconcile.Request]
	resync  time.Duration
	// gate holds the requests of paused namespaces.
	gate *pauseGate
}

var _ reconcile.Reconciler = &reconciler{}

// Reconcile wraps one reconcile in its trace: a start step saying what
// triggered it, and a result step saying how it ended and how long it took.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	if r.gate.hold(req.NamespacedName) {
		// A resync or retry came due while the namespace is paused: put it
		// aside. Resuming reconciles every Database of the namespace.
		return ctrl.Result{}, nil
	}
	rt := &reconcileTrace{
		tracer:   r.tr,
		id:       string(controller.ReconcileIDFromContext(ctx)),
		database: ObjectRef{Kind: "Database", Namespace: req.Namespace, Name: req.Name},
	}
	began := rt.now()
	trigger, n := r.book.reconcileStarted(req.NamespacedName)
	rt.step(Step{Type: StepReconcileStart, Trigger: trigger, Message: triggerMessage(trigger, n, r.backoff.NumRequeues(req))})

	res, err := r.reconcile(ctx, rt, req)

	r.report(rt, req, res, err, rt.now().Sub(began))
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
func (r *reconciler) report(rt *reconcileTrace, req reconcile.Request, res ctrl.Result, err error, took time.Duration) {
	s := Step{Type: StepResult, Duration: took, RequeueAfter: res.RequeueAfter}
	switch {
	case err != nil:
		// The work queue retries after an exponential backoff that grows
		// with each consecutive failure: 5ms, 10ms, 20ms, ...
		s.Result, s.Error = "error", err.Error()
		s.RequeueAfter = expectedBackoff(r.backoff.NumRequeues(req))
		s.Message = fmt.Sprintf("error; retry with backoff in about %s", s.RequeueAfter)
		r.book.reconcileEnded(req.NamespacedName, TriggerRequeue)
	case res.RequeueAfter > 0 && res.RequeueAfter < r.resync:
		s.Result, s.Message = "requeue", fmt.Sprintf("requeue after %s", res.RequeueAfter)
		r.book.reconcileEnded(req.NamespacedName, TriggerRequeue)
	case res.RequeueAfter > 0:
		s.Result, s.Message = "done", fmt.Sprintf("done; resync in %s", res.RequeueAfter)
		r.book.reconcileEnded(req.NamespacedName, TriggerResync)
	default:
		s.Result, s.Message = "done", "done"
	}
	rt.step(s)
}

// lesson:begin reconcile-loop

// reconcile is one pass of the control loop. It is level-triggered: it never
// asks which event woke it, it compares the whole desired state with the
// whole actual state and closes the gap. Running it twice in a row is safe:
// the second pass finds nothing to do and writes nothing.
func (r *reconciler) reconcile(ctx context.Context, rt *reconcileTrace, req reconcile.Request) (ctrl.Result, error) {
	// 1. Fetch the Database. The request carries only its name; the object
	//    comes from the informer cache, not from the event. If it is gone,
	//    there is nothing left to do: its children go with it through
	//    their ownerReferences.
	var db dbv1.Database
	if err := r.client.Get(ctx, req.NamespacedName, &db); err != nil {
		if apierrors.IsNotFound(err) {
			rt.step(Step{Type: StepFetch, Found: "not-found", Message: "the Database is gone; nothing to do"})
			r.forget(req)
			return ctrl.Result{}, nil
		}
		rt.step(Step{Type: StepFetch, Found: "error", Error: err.Error()})
		return ctrl.Result{}, fmt.Errorf("fetching database: %w", err)
	}
	rt.pitfall = PitfallOf(&db)
	rt.step(Step{Type: StepFetch, Found: "found", Generation: db.Generation,
		Message: fmt.Sprintf("generation %d, observed %d", db.Generation, db.Status.ObservedGeneration)})

	// 2. A Database being deleted is handled by the finalizer: drain, take
	//    the final snapshot, then let it go.
	if !db.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, rt, &db)
	}

	// 3. Make sure the finalizer is there before creating anything, so that
	//    a delete from now on waits for the final snapshot.
	if err := r.ensureFinalizer(ctx, rt, &db); err != nil {
		return r.finish(ctx, rt, &db, observation{err: err})
	}

	// 4. Create or correct the children, in dependency order.
	sts, err := r.ensureChildren(ctx, rt, &db)

	// 5. Compute the status from what we saw and write it once.
	return r.finish(ctx, rt, &db, observation{sts: sts, err: err})
}

// lesson:end reconcile-loop

// finish computes and writes the status and decides the result. An error
// goes back to controller-runtime, which requeues with backoff; success asks
// for the periodic resync, so drift that produced no event is still found.
func (r *reconciler) finish(ctx context.Context, rt *reconcileTrace, db *dbv1.Database, obs observation) (ctrl.Result, error) {
	now := rt.now()
	next := computeStatus(db, obs, now)
	force := false
	if rt.pitfall == PitfallStatusThrash {
		if wait := r.thrash.wait(client.ObjectKeyFromObject(db), now); wait > 0 && obs.err == nil {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		thrash(&next, now)
		force = true
	}
	if err := r.writeStatus(ctx, rt, db, next, force); err != nil && obs.err == nil {
		obs.err = err
	}
	if obs.err != nil {
		return ctrl.Result{}, obs.err
	}
	return ctrl.Result{RequeueAfter: r.resync}, nil
}

// forget drops what the reconciler remembers about a Database that is gone.
func (r *reconciler) forget(req reconcile.Request) {
	r.book.forget(req.NamespacedName)
	r.thrash.forget(req.NamespacedName)
}

// ensureChildren brings each child in line and returns the StatefulSet as
// last seen, for the status. It stops at the first error: later children
// depend on earlier ones. What it created is announced in one Kubernetes
// Event rather than one per child: events are API writes too, and a
// thousand new Databases should not cost three thousand of them.
func (r *reconciler) ensureChildren(ctx context.Context, rt *reconcileTrace, db *dbv1.Database) (*appsv1.StatefulSet, error) {
	var sts *appsv1.StatefulSet
	var created []string
	defer func() {
		if len(created) > 0 {
			r.recorder.Eventf(db, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s", strings.Join(created, ", "))
		}
	}()
	for _, k := range children {
		obj, createdNow, err := r.ensureChild(ctx, rt, db, k)
		if err != nil {
			return sts, err
		}
		if createdNow {
			created = append(created, k.kind+" "+obj.GetName())
		}
		if s, ok := obj.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	return sts, nil
}

// ensureChild makes one child exist and match the spec, and says whether it
// created it. It reads the child from the cache, so a converged Database
// costs no API request at all.
func (r *reconciler) ensureChild(ctx context.Context, rt *reconcileTrace, db *dbv1.Database, k childKind) (client.Object, bool, error) {
	desired := k.desired(db)
	if err := controllerutil.SetControllerReference(db, desired, r.scheme); err != nil {
		return nil, false, fmt.Errorf("setting owner of %s %s: %w", k.kind, desired.GetName(), err)
	}
	if rt.pitfall == PitfallNonIdempotentCreate {
		obj, err := r.createBlindly(ctx, rt, k, desired)
		return obj, err == nil, err
	}
	actual := k.empty()
	err := r.client.Get(ctx, client.ObjectKeyFromObject(desired), actual)
	if apierrors.IsNotFound(err) {
		return r.create(ctx, rt, db, k, desired)
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s %s: %w", k.kind, desired.GetName(), err)
	}
	obj, err := r.correct(ctx, rt, db, k, actual, desired)
	return obj, false, err
}

// lesson:begin already-exists

// create creates a missing child. AlreadyExists is not an error: it means
// the child exists, only our cache had not seen it yet (we created it a
// moment ago, or someone else did). That is convergence, so read the live
// object and carry on comparing it like any other.
func (r *reconciler) create(ctx context.Context, rt *reconcileTrace, db *dbv1.Database, k childKind, desired client.Object) (client.Object, bool, error) {
	target := refOf(k.kind, desired)
	rt.diff(target, []string{"missing"})
	began := rt.now()
	err := r.client.Create(ctx, desired)
	if apierrors.IsAlreadyExists(err) {
		rt.action("create", target, OutcomeAlreadyExists, began, nil, "already exists: converged")
		actual := k.empty()
		if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(desired), actual); err != nil {
			return nil, false, fmt.Errorf("reading %s %s after AlreadyExists: %w", k.kind, desired.GetName(), err)
		}
		obj, err := r.correct(ctx, rt, db, k, actual, desired)
		return obj, false, err
	}
	if err != nil {
		rt.action("create", target, OutcomeError, began, err, "")
		return nil, false, fmt.Errorf("creating %s %s: %w", k.kind, desired.GetName(), err)
	}
	rt.action("create", target, OutcomeCreated, began, nil, "")
	ctrl.LoggerFrom(ctx).Info("Created child", "kind", k.kind, "name", desired.GetName())
	return desired, true, nil
}

// lesson:end already-exists

// createBlindly is the non-idempotent-create pitfall: Create on every
// reconcile, and AlreadyExists returned as an error like any other.
func (r *reconciler) createBlindly(ctx context.Context, rt *reconcileTrace, k childKind, desired client.Object) (client.Object, error) {
	target := refOf(k.kind, desired)
	began := rt.now()
	if err := r.client.Create(ctx, desired); err != nil {
		rt.action("create", target, OutcomeError, began, err, "pitfall non-idempotent-create: AlreadyExists treated as an error")
		return nil, fmt.Errorf("creating %s %s: %w", k.kind, desired.GetName(), err)
	}
	rt.action("create", target, OutcomeCreated, began, nil, "")
	return desired, nil
}

// correct compares an existing child with the desired one and patches what
// drifted (a replica count changed by hand, a label removed). A child that
// another owner controls is left alone and reported: adopting it could
// destroy someone else's data.
func (r *reconciler) correct(ctx context.Context, rt *reconcileTrace, db *dbv1.Database, k childKind, actual, desired client.Object) (client.Object, error) {
	target := refOf(k.kind, desired)
	if !metav1.IsControlledBy(actual, db) {
		err := fmt.Errorf("%s %s exists but is not controlled by database %s", k.kind, actual.GetName(), db.Name)
		rt.action("update", target, OutcomeError, rt.now(), err, "")
		return nil, err
	}
	differences := k.diff(actual, desired)
	rt.diff(target, differences)
	if len(differences) == 0 {
		rt.action("update", target, OutcomeUnchanged, rt.now(), nil, "")
		return actual, nil
	}
	began := rt.now()
	// Copying the cached object before changing it: objects from the cache
	// are shared, and a merge patch of the difference sends only the
	// fields that drifted.
	actual = actual.DeepCopyObject().(client.Object)
	patch := client.MergeFrom(actual.DeepCopyObject().(client.Object))
	k.correct(actual, desired)
	if err := r.client.Patch(ctx, actual, patch); err != nil {
		rt.action("patch", target, OutcomeError, began, err, "")
		return nil, fmt.Errorf("updating %s %s: %w", k.kind, actual.GetName(), err)
	}
	rt.action("patch", target, OutcomeUpdated, began, nil, "")
	ctrl.LoggerFrom(ctx).Info("Updated child", "kind", k.kind, "name", actual.GetName(), "differences", differences)
	r.recorder.Eventf(db, actual, corev1.EventTypeNormal, "Updated", "Update", "Updated %s %s: %v", k.kind, actual.GetName(), differences)
	return actual, nil
}

func refOf(kind string, obj client.Object) ObjectRef {
	return ObjectRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
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

// setupWithManager registers the controller. Every watch goes through a
// traceHandler, so the timeline sees each watch event before it is queued:
// the Database's own events and its children's, mapped to their Database
// through the controller ownerReference (what Owns() would do).
func (r *reconciler) setupWithManager(mgr ctrl.Manager, workers int, resumed <-chan event.GenericEvent) error {
	h := func(kind string, owner func(client.Object) (types.NamespacedName, bool), pitfall pitfallFunc) *traceHandler {
		return &traceHandler{kind: kind, owner: owner, pitfall: pitfall, book: r.book, tr: r.tr, resync: r.resync, gate: r.gate}
	}
	// A resumed namespace's Databases arrive as generic events, which the
	// timeline shows like any other event.
	resume := h("Database", selfKey, noPitfall)
	resume.message = "namespace resumed: reconcile every Database in it"
	ofOwner := pitfallOfOwner(mgr.GetCache())
	return ctrl.NewControllerManagedBy(mgr).
		Named("database").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: r.backoff}).
		Watches(&dbv1.Database{}, h("Database", selfKey, pitfallOfObject)).
		Watches(&corev1.Secret{}, h("Secret", ownerKey, ofOwner)).
		Watches(&corev1.Service{}, h("Service", ownerKey, ofOwner)).
		Watches(&appsv1.StatefulSet{}, h("StatefulSet", ownerKey, ofOwner)).
		WatchesRawSource(source.Channel(resumed, resume)).
		Complete(r)
}
