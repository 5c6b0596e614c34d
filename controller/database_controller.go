package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/permission"
)

// The RBAC the controller needs, generated into controller/config/rbac by
// controller-gen. The embedded cluster runs it as an admin, but these are
// the rules it would need anywhere else.
//
// +kubebuilder:rbac:groups=db.oplab.dev,resources=databases,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=db.oplab.dev,resources=databases/status,verbs=get;patch
// +kubebuilder:rbac:groups=db.oplab.dev,resources=databases/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services;secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update
// +kubebuilder:rbac:groups="",resources=pods;events,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// DatabaseReconciler reconciles a Database into a Secret, a headless
// Service and a StatefulSet. It is the ordinary reconciler and nothing
// else: oplab traces it, pauses it and breaks it on purpose from outside
// (wiring.go), through the client it is given and wrappers around Reconcile.
type DatabaseReconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly: for the few reads the
	// cache cannot answer (a child the cache has not seen yet, the Pods
	// left while draining).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Clock stamps conditions and snapshots; tests inject their own.
	Clock Clock
	// ResyncPeriod is how long after a successful reconcile the Database
	// is looked at again without any event.
	ResyncPeriod time.Duration
	// ImageRegistry, when set, is where the engines' images are pulled
	// from (a mirror); empty means their short names.
	ImageRegistry string
}

var _ reconcile.Reconciler = &DatabaseReconciler{}

// progressPoll is how soon a progressing Database (waiting for its
// replicas) is looked at again at first. The StatefulSet's status updates
// usually wake the reconciler first; the poll is the level-triggered safety
// net, so that a controller which missed those events still turns Ready
// seconds after it acted, not a whole resync later.
const progressPoll = 2 * time.Second

// lesson:begin reconcile-loop

// Reconcile is one pass of the control loop. It is level-triggered: it never
// asks which event woke it, it compares the whole desired state with the
// whole actual state and closes the gap. Running it twice in a row is safe:
// the second pass finds nothing to do and writes nothing.
func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// 1. Fetch the Database. The request carries only its name; the object
	//    comes from the informer cache, not from the event. If it is gone,
	//    there is nothing left to do: its children go with it through
	//    their ownerReferences.
	var db dbv1.Database
	if err := r.Client.Get(ctx, req.NamespacedName, &db); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("fetching database: %w", err)
	}

	// 2. A Database being deleted is handled by the finalizer: drain, take
	//    the final snapshot, then let it go.
	if !db.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &db)
	}

	// 3. Make sure the finalizer is there before creating anything, so that
	//    a delete from now on waits for the final snapshot.
	if err := r.ensureFinalizer(ctx, &db); err != nil {
		return r.finish(ctx, &db, observation{err: err})
	}

	// 4. Create or correct the children, in dependency order.
	obs := r.ensureChildren(ctx, &db)

	// 5. Compute the status from what we saw and write it once.
	return r.finish(ctx, &db, obs)
}

// lesson:end reconcile-loop

// SetupWithManager is the wiring as a learner writes it, and how the
// reconciler runs on a stock manager (TestSetupWithManagerAlone). oplab's
// Runner wires it with setupController (wiring.go): the same For and Owns,
// with the trace, the pause gate and the pitfalls added around them.

// lesson:begin controller-wiring

// SetupWithManager registers the controller with the manager. For names the
// kind it reconciles: every change to a Database queues that Database. Owns
// names the kinds it creates: a change to a Secret, Service or StatefulSet
// queues the Database named in its controller ownerReference, so a child
// deleted or edited by hand is put back. Watches names what it does not own
// but must see: the StatefulSet owns the Pods, so a Pod that crashes or
// cannot pull its image queues the Database its label names, and a Warning
// Event about the StatefulSet (a Pod the quota refused) queues the Database
// of that name. Either way the work queue receives only a name, and a burst
// of changes to one Database becomes one reconcile.
func (r *DatabaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&dbv1.Database{}).
		Owns(&corev1.Secret{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(databaseOfPod)).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(databaseOfWarning)).
		Named("database").
		Complete(r)
}

// lesson:end controller-wiring

// finish computes and writes the status and decides the result. An error
// goes back to controller-runtime, which requeues with backoff; success asks
// for the periodic resync, so drift that produced no event is still found.
func (r *DatabaseReconciler) finish(ctx context.Context, db *dbv1.Database, obs observation) (ctrl.Result, error) {
	// A permission oplab lacks is named in words, in the condition and the
	// timeline alike.
	obs.err = permission.Explain(obs.err)
	next := computeStatus(db, obs, r.Clock.Now())
	err := r.writeStatus(ctx, db, next)
	if apierrors.IsNotFound(err) && !db.DeletionTimestamp.IsZero() {
		// Our copy was stale: the Database is gone, finalized already.
		return ctrl.Result{}, nil
	}
	if err != nil && obs.err == nil {
		obs.err = permission.Explain(err)
	}
	if obs.err != nil {
		return ctrl.Result{}, obs.err
	}
	if progressing := meta.FindStatusCondition(next.Conditions, ConditionProgressing); progressing != nil &&
		progressing.Status == metav1.ConditionTrue && obs.deleting == "" {
		return ctrl.Result{RequeueAfter: r.progressWait(progressing.LastTransitionTime.Time)}, nil
	}
	return ctrl.Result{RequeueAfter: r.ResyncPeriod}, nil
}

// progressWait is how long a Database progressing since the given time may
// wait for its next look: progressPoll at first, then as long again as it
// has been progressing (looks at 2, 4, 8 s…), never longer than the resync.
func (r *DatabaseReconciler) progressWait(since time.Time) time.Duration {
	return max(min(r.Clock.Now().Sub(since), r.ResyncPeriod), min(progressPoll, r.ResyncPeriod))
}

// ensureChildren brings each child in line and returns what it saw, for the
// status. It stops at the first error: later children depend on earlier
// ones (the StatefulSet's Pods read the Secret, and the StatefulSet names
// the Service as its governing Service). What it created is announced in
// one Kubernetes Event rather than one per child: events are API writes
// too, and a thousand new Databases should not cost three thousand of them.
func (r *DatabaseReconciler) ensureChildren(ctx context.Context, db *dbv1.Database) observation {
	var created []string
	defer func() {
		if len(created) > 0 {
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s", strings.Join(created, ", "))
		}
	}()
	made, err := r.ensureSecret(ctx, db)
	if err != nil {
		return observation{err: err}
	}
	if made {
		created = append(created, "Secret "+SecretName(db.Name))
	}
	if made, err = r.ensureService(ctx, db); err != nil {
		return observation{err: err}
	}
	if made {
		created = append(created, "Service "+db.Name)
	}
	sts, made, err := r.ensureStatefulSet(ctx, db)
	if err != nil {
		return observation{err: err}
	}
	if made {
		created = append(created, "StatefulSet "+db.Name)
	}
	pods, err := r.lookAtPods(ctx, db, sts)
	return observation{sts: sts, pods: pods, err: err}
}

// lesson:begin already-exists

// getOrCreate reads the child desired names into actual, or creates it when
// it is missing and reports that it did. It reads from the cache, so a
// converged Database costs no API request at all. AlreadyExists is not an
// error: it means the child exists, only our cache had not seen it yet (we
// created it a moment ago, or someone else did). That is convergence, so
// read the live object and compare it like any other.
func (r *DatabaseReconciler) getOrCreate(ctx context.Context, desired, actual client.Object) (created bool, err error) {
	key, kind := client.ObjectKeyFromObject(desired), kindOf(desired)
	err = r.Client.Get(ctx, key, actual)
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading %s %s: %w", kind, key.Name, err)
	}
	err = r.Client.Create(ctx, desired)
	if apierrors.IsAlreadyExists(err) {
		if err := r.APIReader.Get(ctx, key, actual); err != nil {
			return false, fmt.Errorf("reading %s %s after AlreadyExists: %w", kind, key.Name, err)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating %s %s: %w", kind, key.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created child", "kind", kind, "name", key.Name)
	return true, nil
}

// lesson:end already-exists

// checkOwner says whether db may correct actual, and whether it adopts it
// doing so. A child with no controller (made before its Database, by hand or
// by an earlier run) is adopted; one another controller owns is left alone
// and reported: taking it over could destroy someone else's data.
func checkOwner(db *dbv1.Database, actual client.Object) (adopt bool, err error) {
	if owner := metav1.GetControllerOfNoCopy(actual); owner != nil && owner.UID != db.UID {
		return false, fmt.Errorf("%s %s exists but is controlled by %s %s, not by database %s",
			kindOf(actual), actual.GetName(), owner.Kind, owner.Name, db.Name)
	}
	return !metav1.IsControlledBy(actual, db), nil
}

// patchChild sends the fields of fixed that drifted from actual (a replica
// count changed by hand, a label removed) as a merge patch, adopting the
// child when adopt is set, and announces what it corrected.
func (r *DatabaseReconciler) patchChild(ctx context.Context, db *dbv1.Database, actual, fixed client.Object, adopt bool, differences []string) error {
	if adopt {
		differences = append([]string{adoptingDifference}, differences...)
		if err := controllerutil.SetControllerReference(db, fixed, r.Scheme); err != nil {
			return fmt.Errorf("adopting %s %s: %w", kindOf(fixed), fixed.GetName(), err)
		}
	}
	if err := r.Client.Patch(ctx, fixed, client.MergeFrom(actual)); err != nil {
		return fmt.Errorf("updating %s %s: %w", kindOf(fixed), fixed.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated child", "kind", kindOf(fixed), "name", fixed.GetName(), "differences", differences)
	r.Recorder.Eventf(db, fixed, corev1.EventTypeNormal, "Updated", "Update", "Updated %s %s: %v", kindOf(fixed), fixed.GetName(), differences)
	return nil
}

// adoptingDifference is how an unowned child's difference reads.
const adoptingDifference = "no owner: adopting it"

// kindOf names a child's kind in messages. The typed objects the controller
// builds carry no TypeMeta, so the kind comes from the Go type.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Secret:
		return "Secret"
	case *corev1.Service:
		return "Service"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *dbv1.Database:
		return "Database"
	case *corev1.Pod:
		return "Pod"
	case *corev1.Event:
		return "Event"
	}
	return fmt.Sprintf("%T", obj)
}
