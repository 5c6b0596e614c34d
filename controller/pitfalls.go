package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// PitfallAnnotation switches a pitfall on for one Database. Pitfalls are set
// per object, never globally, so one learner's deliberately broken Database
// cannot break anyone else's.
const PitfallAnnotation = "db.oplab.dev/pitfall"

// PitfallHiddenAnnotation, set to "true", hides a Database's pitfall from
// the learner: the trace and the lab say PitfallHidden where they would name
// it. A challenge whose exercise is to tell from behaviour which Database has
// which pitfall sets it. Only the name is hidden: the controller still runs
// the pitfall, and kubectl still shows both annotations.
const PitfallHiddenAnnotation = "db.oplab.dev/pitfall-hidden"

// PitfallHidden is what the trace and the lab say of the pitfall of a
// Database marked with PitfallHiddenAnnotation, whether a pitfall is on or
// not: which Database has one, and which, is what the learner finds out.
const PitfallHidden = "hidden"

// The pitfalls a learner can switch on with PitfallAnnotation.
const (
	// PitfallNonIdempotentCreate makes the controller create its children
	// blindly on every reconcile and treat AlreadyExists as an error.
	PitfallNonIdempotentCreate = "non-idempotent-create"
	// PitfallStatusThrash makes the controller write status on every
	// reconcile with a fresh timestamp, so each write triggers the next
	// reconcile.
	PitfallStatusThrash = "status-thrash"
	// PitfallNoFinalizer makes the controller run without its finalizer, so
	// a delete skips the final snapshot.
	PitfallNoFinalizer = "no-finalizer"
	// PitfallDropEvents makes the event handlers ignore every watch event
	// about the object and its children, so only the periodic resync
	// converges it.
	PitfallDropEvents = "drop-events"
)

// ThrashInterval is the least time between two status writes of a Database
// with the status-thrash pitfall. The storm stays visible on the timeline
// (about one reconcile a second, each triggered by the previous write) but
// cannot overload the API server. One second also guarantees that each write
// carries a different timestamp, since metav1.Time has second precision.
const ThrashInterval = time.Second

// PitfallInfo describes one pitfall for the UI and the docs.
type PitfallInfo struct {
	// Name is the annotation value that switches the pitfall on.
	Name string
	// Title is a short human name.
	Title string
	// Description says what breaks and what to watch for on the timeline.
	Description string
}

// Pitfalls lists every pitfall, in the order the course introduces them.
var Pitfalls = []PitfallInfo{
	{
		Name:  PitfallNonIdempotentCreate,
		Title: "Non-idempotent create",
		Description: "The controller calls Create for every child on every reconcile and returns the " +
			"AlreadyExists error instead of treating it as convergence. Watch the timeline: each reconcile " +
			"ends in an error, the Database turns Degraded, and the retries come further and further apart " +
			"as the work queue's exponential backoff grows.",
	},
	{
		Name:  PitfallStatusThrash,
		Title: "Status thrash",
		Description: "The controller writes status on every reconcile with a fresh lastTransitionTime, even " +
			"when nothing changed. Each write is a watch event, and each event triggers another reconcile: " +
			"a self-inflicted reconcile storm. oplab caps it at one write a second per Database so it stays " +
			"visible but cheap.",
	},
	{
		Name:  PitfallNoFinalizer,
		Title: "No finalizer",
		Description: "The controller never adds its finalizer (and removes it if present). Deleting the " +
			"Database then succeeds at once: the garbage collector removes the StatefulSet and its Pods, " +
			"and no final snapshot ConfigMap is written. The data is gone.",
	},
	{
		Name:  PitfallDropEvents,
		Title: "Dropped events",
		Description: "The event handlers ignore every watch event about this Database and its children, as an " +
			"edge-triggered controller that missed them would. Nothing happens until the periodic resync: " +
			"a level-triggered reconcile then converges everything at once, proving the loop does not need " +
			"the events to be right.",
	},
}

// PitfallOf returns the pitfall switched on for obj, or "" when none or when
// the annotation names no known pitfall (an unknown name is ignored rather
// than breaking the Database; ValidatePitfall reports it).
func PitfallOf(obj client.Object) string {
	name := obj.GetAnnotations()[PitfallAnnotation]
	if ValidatePitfall(name) != nil {
		return ""
	}
	return name
}

// PitfallHiddenOf reports whether obj's pitfall is hidden from the learner.
func PitfallHiddenOf(obj client.Object) bool {
	return obj.GetAnnotations()[PitfallHiddenAnnotation] == "true"
}

// PitfallShown returns the pitfall of obj as the trace and the lab may show
// it: PitfallHidden when it is hidden, else PitfallOf.
func PitfallShown(obj client.Object) string {
	if PitfallHiddenOf(obj) {
		return PitfallHidden
	}
	return PitfallOf(obj)
}

// pitfallSwitch is the pitfall of one Database twice over: the one the
// controller runs (name) and what the trace may say of it (shown).
type pitfallSwitch struct {
	name, shown string
}

func pitfallSwitchOf(obj client.Object) pitfallSwitch {
	return pitfallSwitch{name: PitfallOf(obj), shown: PitfallShown(obj)}
}

// ValidatePitfall returns an error naming the value when name is neither
// empty nor a known pitfall. The web layer uses it to refuse bad input.
func ValidatePitfall(name string) error {
	if name == "" {
		return nil
	}
	for _, p := range Pitfalls {
		if p.Name == name {
			return nil
		}
	}
	return fmt.Errorf("unknown pitfall %q in annotation %s: want one of %s", name, PitfallAnnotation, pitfallNames())
}

func pitfallNames() string {
	s := ""
	for i, p := range Pitfalls {
		if i > 0 {
			s += ", "
		}
		s += p.Name
	}
	return s
}

// The pitfalls are variations of the reconciler, all in this file, so that
// the reconciler the lessons show is the correct one and nothing else.
// pitfallReconciler wraps it from outside and picks, per Database:
//
//   - no-finalizer: reconcileWithoutFinalizer, the loop without steps 2
//     and 3;
//   - non-idempotent-create: reconcileCreatingBlindly, the loop that
//     creates every child on every reconcile;
//   - status-thrash: the plain loop, given a client that hides the
//     Database's conditions, so it builds them from scratch and writes
//     them on every reconcile (thrashClient);
//   - drop-events changes no reconciler code at all: the event filter
//     ignores the events (triggers.go, dropEvent).

// pitfallReconciler is the reconciler the controller runs: the plain one,
// unless the Database's pitfall swaps it for a broken variation.
type pitfallReconciler struct {
	plain *DatabaseReconciler
	// thrashing is the plain reconciler with thrashClient.
	thrashing *DatabaseReconciler
	// cache reads the Database without tracing it: this look at the
	// annotation is not one of the reconciler's steps.
	cache  client.Reader
	thrash *thrashLimiter
}

func newPitfallReconciler(plain *DatabaseReconciler, cache client.Reader) *pitfallReconciler {
	limiter := newThrashLimiter()
	thrashing := *plain
	thrashing.Client = thrashClient(plain.Client, limiter, plain.Clock)
	return &pitfallReconciler{plain: plain, thrashing: &thrashing, cache: cache, thrash: limiter}
}

var _ reconcile.Reconciler = &pitfallReconciler{}

func (p *pitfallReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	var db dbv1.Database
	err := p.cache.Get(ctx, req.NamespacedName, &db)
	if apierrors.IsNotFound(err) {
		p.thrash.forget(req.NamespacedName)
	}
	if err != nil {
		return p.plain.Reconcile(ctx, req)
	}
	switch PitfallOf(&db) {
	case PitfallNoFinalizer:
		return p.reconcileWithoutFinalizer(ctx, req)
	case PitfallNonIdempotentCreate:
		return p.reconcileCreatingBlindly(ctx, req)
	case PitfallStatusThrash:
		var held time.Duration
		res, err := p.thrashing.Reconcile(context.WithValue(ctx, thrashHoldKey{}, &held), req)
		if err == nil && held > 0 {
			// The write was held back: look again when it may go out.
			return ctrl.Result{RequeueAfter: held}, nil
		}
		return res, err
	}
	return p.plain.Reconcile(ctx, req)
}

// reconcileWithoutFinalizer is the no-finalizer pitfall: the loop as written
// by someone who never thought about deletion. It has no steps 2 and 3 (and
// removes a finalizer left from before the pitfall was switched on), so a
// delete goes through at once and no snapshot is ever taken.
func (p *pitfallReconciler) reconcileWithoutFinalizer(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	r := p.plain
	var db dbv1.Database
	if err := r.Client.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if controllerutil.ContainsFinalizer(&db, Finalizer) {
		msg := "nothing will hold a delete for the final snapshot"
		if !db.DeletionTimestamp.IsZero() {
			msg = "deleted without a snapshot"
		}
		if !PitfallHiddenOf(&db) { // hidden, the skipped phase alone tells it
			msg = "pitfall " + PitfallOf(&db) + ": " + msg
		}
		note(ctx, Step{Type: StepFinalizer, Phase: "skipped", Message: msg})
		if err := r.removeFinalizer(ctx, &db); err != nil {
			return r.finish(ctx, &db, observation{err: err})
		}
	}
	if !db.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	return r.finish(ctx, &db, r.ensureChildren(ctx, &db))
}

// reconcileCreatingBlindly is the non-idempotent-create pitfall: the loop as
// written by someone who assumed Create runs once. It calls Create for every
// child on every reconcile without looking first, and returns AlreadyExists
// as an error like any other, where getOrCreate treats it as convergence.
func (p *pitfallReconciler) reconcileCreatingBlindly(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	r := p.plain
	var db dbv1.Database
	if err := r.Client.Get(ctx, req.NamespacedName, &db); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("fetching database: %w", err)
	}
	if !db.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &db)
	}
	if err := r.ensureFinalizer(ctx, &db); err != nil {
		return r.finish(ctx, &db, observation{err: err})
	}
	sts := desiredStatefulSet(&db, r.ImageRegistry)
	var created []string
	for _, child := range []client.Object{desiredSecret(&db), desiredService(&db), sts} {
		if err := controllerutil.SetControllerReference(&db, child, r.Scheme); err != nil {
			return r.finish(ctx, &db, observation{err: fmt.Errorf("setting owner of %s %s: %w", kindOf(child), child.GetName(), err)})
		}
		if err := r.Client.Create(ctx, child); err != nil {
			return r.finish(ctx, &db, observation{err: fmt.Errorf("creating %s %s: %w", kindOf(child), child.GetName(), err)})
		}
		created = append(created, kindOf(child)+" "+child.GetName())
	}
	r.Recorder.Eventf(&db, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s", strings.Join(created, ", "))
	return r.finish(ctx, &db, observation{sts: sts})
}

// thrashClient is the status-thrash pitfall, made from outside the
// reconciler: it hides the Database's conditions from the reconciler, as a
// controller that builds its conditions from scratch would ignore them. The
// plain reconciler then finds every condition new, stamps each with a fresh
// lastTransitionTime and writes the status on every reconcile. Each write is
// a watch event that triggers the next reconcile. thrashLimiter keeps the
// storm to one write a second; a write that fails the reconcile (Degraded)
// is never held back.
func thrashClient(c client.Client, limiter *thrashLimiter, clock Clock) client.Client {
	return interceptor.NewClient(withoutWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if db, ok := obj.(*dbv1.Database); ok && err == nil {
				db.Status.Conditions = nil
			}
			return err
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			db, ok := obj.(*dbv1.Database)
			if !ok || sub != "status" || meta.IsStatusConditionTrue(db.Status.Conditions, ConditionDegraded) {
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			}
			wait := limiter.wait(client.ObjectKeyFromObject(db), clock.Now())
			if wait == 0 {
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			}
			// Not "unchanged": this loop would write, and oplab's cap holds
			// it back so the storm stays watchable. The timeline says so.
			note(ctx, Step{Type: StepStatus, Skipped: true, Held: true, ObservedGeneration: db.Status.ObservedGeneration,
				Message: "write held back: oplab allows a loop that writes on every reconcile one status write a second"})
			if held, ok := ctx.Value(thrashHoldKey{}).(*time.Duration); ok {
				*held = wait
			}
			return nil
		},
	})
}

// thrashHoldKey carries, in a thrashing reconcile's context, where
// thrashClient says how long a held-back write must wait.
type thrashHoldKey struct{}

// dropEvent is the drop-events pitfall: the event is traced as ignored and
// not queued. An edge-triggered controller that missed the event would
// never act. Ours is level-triggered: the periodic resync still comes, and
// later queues it for the resync in case no reconcile has scheduled one
// yet (AddAfter keeps the earliest due time, so repeated drops do not
// postpone it). A hidden pitfall stays unnamed: the ignored event is what
// the learner sees.
func (t *eventTracer) dropEvent(s Step, p pitfallSwitch, key types.NamespacedName) {
	s.Ignored, s.Pitfall = true, p.shown
	s.Message = fmt.Sprintf("ignored (%s); the resync in %s will reconcile", p.shown, t.resync)
	if p.shown == PitfallHidden { // the ignored event is what the learner sees, not why
		s.Message = fmt.Sprintf("ignored; the resync in %s will reconcile", t.resync)
	}
	t.tr.emit(s)
	t.later(key)
}

// thrashLimiter bounds the status-thrash pitfall: it remembers when each
// Database's status was last force-written. Reconciles of different objects
// run concurrently, hence the mutex; it guards a map and nothing else.
type thrashLimiter struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

func newThrashLimiter() *thrashLimiter {
	return &thrashLimiter{last: map[types.NamespacedName]time.Time{}}
}

// wait returns how long to wait before the next forced write of key may
// happen, and reserves the slot (records now) when it may happen at once.
func (l *thrashLimiter) wait(key types.NamespacedName, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.last[key]; ok {
		if next := last.Add(ThrashInterval); now.Before(next) {
			return next.Sub(now)
		}
	}
	l.last[key] = now
	return 0
}

// forget drops key once its Database is gone.
func (l *thrashLimiter) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, key)
}
