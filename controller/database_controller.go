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
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// reconciler reconciles a Database into a Secret, a headless Service and a
// StatefulSet. It is traced from outside (tracing.go): its client records
// each API call, and a wrapper opens and closes each reconcile.
type reconciler struct {
	// client reads from the informer cache and writes to the API server.
	client client.Client
	// apiReader reads from the API server directly: for the few reads the
	// cache cannot answer (a child the cache has not seen yet, Pods).
	apiReader client.Reader
	scheme    *runtime.Scheme
	recorder  events.EventRecorder
	clock     Clock
	resync    time.Duration
	// thrash bounds the status-thrash pitfall (pitfalls.go).
	thrash *thrashLimiter
	// registry is where the engines' images come from (Options.ImageRegistry).
	registry string
}

var _ reconcile.Reconciler = &reconciler{}

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
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// 1. Fetch the Database. The request carries only its name; the object
	//    comes from the informer cache, not from the event. If it is gone,
	//    there is nothing left to do: its children go with it through
	//    their ownerReferences.
	var db dbv1.Database
	if err := r.client.Get(ctx, req.NamespacedName, &db); err != nil {
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

// finish computes and writes the status and decides the result. An error
// goes back to controller-runtime, which requeues with backoff; success asks
// for the periodic resync, so drift that produced no event is still found.
func (r *reconciler) finish(ctx context.Context, db *dbv1.Database, obs observation) (ctrl.Result, error) {
	if PitfallOf(db) == PitfallStatusThrash {
		return r.thrashStatus(ctx, db, obs)
	}
	// A permission oplab lacks is named in words, in the condition and the
	// timeline alike.
	obs.err = permission.Explain(obs.err)
	next := computeStatus(db, obs, r.clock.Now())
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
	return ctrl.Result{RequeueAfter: r.resync}, nil
}

// progressWait is how long a Database progressing since the given time may
// wait for its next look: progressPoll at first, then as long again as it
// has been progressing (looks at 2, 4, 8 s…), never longer than the resync.
func (r *reconciler) progressWait(since time.Time) time.Duration {
	return max(min(r.clock.Now().Sub(since), r.resync), min(progressPoll, r.resync))
}

// ensureChildren brings each child in line and returns what it saw, for the
// status. It stops at the first error: later children depend on earlier
// ones. What it created is announced in one Kubernetes Event rather than
// one per child: events are API writes too, and a thousand new Databases
// should not cost three thousand of them.
func (r *reconciler) ensureChildren(ctx context.Context, db *dbv1.Database) observation {
	var obs observation
	var created []string
	defer func() {
		if len(created) > 0 {
			r.recorder.Eventf(db, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s", strings.Join(created, ", "))
		}
	}()
	for _, k := range children {
		obj, outcome, err := r.ensureChild(ctx, db, k)
		if err != nil {
			obs.err = err
			return obs
		}
		if outcome == OutcomeCreated {
			created = append(created, k.kind+" "+obj.GetName())
		}
		if s, ok := obj.(*appsv1.StatefulSet); ok {
			obs.sts = s
		}
	}
	return obs
}

// ensureChild makes one child exist and match the spec, and says what it
// did: Created, Updated or Unchanged. It reads the child from the cache, so
// a converged Database costs no API request at all.
func (r *reconciler) ensureChild(ctx context.Context, db *dbv1.Database, k childKind) (client.Object, Outcome, error) {
	desired := k.desired(db, r.registry)
	if err := controllerutil.SetControllerReference(db, desired, r.scheme); err != nil {
		return nil, "", fmt.Errorf("setting owner of %s %s: %w", k.kind, desired.GetName(), err)
	}
	if PitfallOf(db) == PitfallNonIdempotentCreate {
		return r.createBlindly(ctx, k, desired)
	}
	actual := k.empty()
	err := r.client.Get(ctx, client.ObjectKeyFromObject(desired), actual)
	if apierrors.IsNotFound(err) {
		note(ctx, diffStep(k.kind, desired, []string{"missing"}))
		return r.create(ctx, db, k, desired)
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading %s %s: %w", k.kind, desired.GetName(), err)
	}
	return r.correct(ctx, db, k, actual, desired)
}

// lesson:begin already-exists

// create creates a missing child. AlreadyExists is not an error: it means
// the child exists, only our cache had not seen it yet (we created it a
// moment ago, or someone else did). That is convergence, so read the live
// object and carry on comparing it like any other.
func (r *reconciler) create(ctx context.Context, db *dbv1.Database, k childKind, desired client.Object) (client.Object, Outcome, error) {
	err := r.client.Create(ctx, desired)
	if apierrors.IsAlreadyExists(err) {
		actual := k.empty()
		if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(desired), actual); err != nil {
			return nil, "", fmt.Errorf("reading %s %s after AlreadyExists: %w", k.kind, desired.GetName(), err)
		}
		return r.correct(ctx, db, k, actual, desired)
	}
	if err != nil {
		return nil, "", fmt.Errorf("creating %s %s: %w", k.kind, desired.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Created child", "kind", k.kind, "name", desired.GetName())
	return desired, OutcomeCreated, nil
}

// lesson:end already-exists

// correct compares an existing child with the desired one and patches what
// drifted (a replica count changed by hand, a label removed). A child with
// no controller (made before its Database, by hand or by an earlier run)
// is adopted; one another controller owns is left alone and reported:
// taking it over could destroy someone else's data.
func (r *reconciler) correct(ctx context.Context, db *dbv1.Database, k childKind, actual, desired client.Object) (client.Object, Outcome, error) {
	if owner := metav1.GetControllerOfNoCopy(actual); owner != nil && owner.UID != db.UID {
		note(ctx, diffStep(k.kind, desired, []string{fmt.Sprintf("controlled by %s %s", owner.Kind, owner.Name)}))
		return nil, "", fmt.Errorf("%s %s exists but is controlled by %s %s, not by database %s",
			k.kind, actual.GetName(), owner.Kind, owner.Name, db.Name)
	}
	differences := k.diff(actual, desired)
	adopt := !metav1.IsControlledBy(actual, db)
	if adopt {
		differences = append([]string{"no owner: adopting it"}, differences...)
	}
	note(ctx, diffStep(k.kind, desired, differences))
	if len(differences) == 0 {
		return actual, OutcomeUnchanged, nil
	}
	// Copying the cached object before changing it: objects from the cache
	// are shared, and a merge patch of the difference sends only the
	// fields that drifted.
	actual = actual.DeepCopyObject().(client.Object)
	patch := client.MergeFrom(actual.DeepCopyObject().(client.Object))
	k.correct(actual, desired)
	if adopt {
		if err := controllerutil.SetControllerReference(db, actual, r.scheme); err != nil {
			return nil, "", fmt.Errorf("adopting %s %s: %w", k.kind, actual.GetName(), err)
		}
	}
	if err := r.client.Patch(ctx, actual, patch); err != nil {
		return nil, "", fmt.Errorf("updating %s %s: %w", k.kind, actual.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated child", "kind", k.kind, "name", actual.GetName(), "differences", differences)
	r.recorder.Eventf(db, actual, corev1.EventTypeNormal, "Updated", "Update", "Updated %s %s: %v", k.kind, actual.GetName(), differences)
	return actual, OutcomeUpdated, nil
}

// diffStep is the trace's diff of one child: what differs, in words.
func diffStep(kind string, obj client.Object, differences []string) Step {
	msg := "in sync"
	if len(differences) > 0 {
		msg = fmt.Sprintf("%d difference(s)", len(differences))
	}
	return Step{Type: StepDiff, Target: &ObjectRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Differences: differences, Message: msg}
}
