package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// This file is how oplab runs the DatabaseReconciler: the wiring of
// SetupWithManager, with the trace, the pause gate and the pitfalls put
// around it from outside. Nothing here changes what the reconciler does
// for a Database without a pitfall; it watches, records and holds.
//
//   - The reconciler's client is wrapped (client/interceptor): ownWrites
//     lets it read its own writes (ownwrites.go), tracingClient records what
//     each call did (trace_client.go). Its APIReader is traced the same way.
//   - pitfallReconciler picks, per Database, the plain loop or one of its
//     broken variations (pitfalls.go).
//   - tracedReconciler opens and closes each reconcile on the trace and
//     holds a request of a paused namespace (trace_reconcile.go, pause.go).
//   - An event filter traces each watch event before it is queued, and
//     holds or drops it (triggers.go). Two channel sources queue what no
//     watch event brings: a resumed namespace's Databases, and the resync
//     standing in for a dropped event.

// ownedKinds are the kinds SetupWithManager Owns, in its order: the runner
// watches what the lesson shows (TestRunnerOwnsWhatSetupWithManagerOwns).
func ownedKinds() []client.Object {
	return []client.Object{&corev1.Secret{}, &corev1.Service{}, &appsv1.StatefulSet{}}
}

// watched is a kind SetupWithManager Watches without owning it, and how an
// object of it maps to its Database.
type watched struct {
	obj client.Object
	to  handler.MapFunc
}

// watchedKinds are the kinds SetupWithManager Watches, in its order (the
// same test keeps them one list).
func watchedKinds() []watched {
	return []watched{{&corev1.Pod{}, databaseOfPod}, {&corev1.Event{}, databaseOfWarning}}
}

// setupController registers the Database controller with mgr as oplab runs
// it. Its watches are SetupWithManager's, For the Database and Owns its
// three children; resumed carries the Databases oplab queues itself (a
// namespace resumed, handed to the learner's code or taken back).
func setupController(mgr ctrl.Manager, cfg *rest.Config, opts Options, gate *pauseGate, resumed <-chan sweepEvent, meter *queueMeter, labelled cache.ByObject, grant func(context.Context, string) error) (*codeClients, error) {
	traced := newTracedReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), mgr.GetEventRecorder(RecorderName), opts, gate)
	traced.code = &codeClients{cfg: cfg, scheme: mgr.GetScheme(), mapper: mgr.GetRESTMapper(),
		reads: mgr.GetClient(), book: traced.book, registry: opts.ImageRegistry, grant: grant, rate: CodeWriteRate}
	later := make(chan event.GenericEvent, laterBuffer)
	filter := &eventTracer{
		book: traced.book, tr: traced.tr, gate: gate, cache: mgr.GetCache(), resync: opts.ResyncPeriod,
		later: func(key types.NamespacedName) {
			select {
			case later <- event.GenericEvent{Object: &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
			default:
				// Full: this many dropped events are waiting already, and
				// a Database reconciled once has its resync scheduled.
			}
		},
	}
	atResync := handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) {
		q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}, opts.ResyncPeriod)
	}}
	scoped := opts.NamespaceSelector != nil
	b := ctrl.NewControllerManagedBy(mgr).For(&dbv1.Database{})
	for _, child := range ownedKinds() {
		if _, secret := child.(*corev1.Secret); secret && scoped {
			continue // watched per instance namespace, below
		}
		b = b.Owns(child)
	}
	for _, w := range watchedKinds() {
		b = b.Watches(w.obj, handler.EnqueueRequestsFromMapFunc(w.to))
	}
	if scoped {
		// Only the instance's namespaces count: the Namespace informer
		// selects them, and an event elsewhere is dropped before the trace
		// or the queue sees it (the first filter stops the rest).
		b = b.WithEventFilter(predicate.NewPredicateFuncs(inScope(mgr.GetCache())))
	}
	b = b.WithEventFilter(filter.filter()).
		WatchesRawSource(source.Channel(resumed, filter.resumed())).
		WatchesRawSource(source.Channel(later, atResync))
	if scoped {
		// Secrets are watched per instance namespace, never cluster-wide
		// (oplab may not): what Owns(&corev1.Secret{}) does, from the
		// per-namespace caches, through the same filter.
		secrets, err := secretCaches(mgr, cfg, opts, labelled)
		if err != nil {
			return nil, err
		}
		owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &dbv1.Database{}, handler.OnlyControllerOwner())
		b = b.WatchesRawSource(namespaceSource{caches: secrets, h: filtered{p: filter.filter(), h: owner}})
	}
	// The work queue, counted per namespace (queue.go), and its samples on
	// the trace each second one changed.
	traced.meter = meter
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		traced.meter.emitSamples(ctx, traced.tr)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("adding the work queue's samples: %w", err)
	}
	return traced.code, b.WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, RateLimiter: traced.backoff,
		NewQueue: newMeteredQueue(traced.meter)}).
		Named("database").
		Complete(traced)
}

// secretCaches starts one Secret cache per instance namespace, following the
// Namespace informer, with the manager.
func secretCaches(mgr ctrl.Manager, cfg *rest.Config, opts Options, labelled cache.ByObject) (*NamespaceCaches, error) {
	nsInformer, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Namespace{})
	if err != nil {
		return nil, fmt.Errorf("registering informer for namespaces: %w", err)
	}
	secrets, err := NewNamespaceCaches(cfg, cache.Options{Scheme: mgr.GetScheme(), ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: labelled}},
		&corev1.Secret{}, opts.Logger.WithName("secrets"))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := secrets.Follow(ctx, nsInformer); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("adding the per-namespace Secret caches: %w", err)
	}
	return secrets, nil
}

// filtered is an event handler behind a predicate: the builder applies its
// event filters to the watches it makes, not to a raw source's handler.
type filtered struct {
	p predicate.Predicate
	h handler.EventHandler
}

func (f filtered) Create(ctx context.Context, e event.CreateEvent, q queue) {
	if f.p.Create(e) {
		f.h.Create(ctx, e, q)
	}
}

func (f filtered) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	if f.p.Update(e) {
		f.h.Update(ctx, e, q)
	}
}

func (f filtered) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	if f.p.Delete(e) {
		f.h.Delete(ctx, e, q)
	}
}

func (f filtered) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	if f.p.Generic(e) {
		f.h.Generic(ctx, e, q)
	}
}

// laterBuffer is how many dropped events may wait to be queued for the
// resync; the channel source drains it at once.
const laterBuffer = 1024

// newTracedReconciler builds the reconciler as the controller runs it: the
// DatabaseReconciler with a client that reads its own writes and is traced,
// the pitfalls' wrapper, and the trace's wrapper around each reconcile. c
// reads from a cache.
func newTracedReconciler(c client.Client, apiReader client.Reader, scheme *runtime.Scheme, recorder events.EventRecorder, opts Options, gate *pauseGate) *tracedReconciler {
	book := newTriggerBook()
	own := newOwnWrites().client(c)
	plain := &DatabaseReconciler{
		Client:        tracingClient(own, own, book, opts.ImageRegistry),
		APIReader:     tracingReader(apiReader, opts.ImageRegistry),
		Scheme:        scheme,
		Recorder:      recorder,
		Clock:         opts.Clock,
		ResyncPeriod:  opts.ResyncPeriod,
		ImageRegistry: opts.ImageRegistry,
	}
	return &tracedReconciler{
		inner:   newPitfallReconciler(plain, own),
		tr:      tracer{sink: opts.Sink, clock: opts.Clock},
		book:    book,
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](backoffBase, backoffMax),
		resync:  opts.ResyncPeriod,
		gate:    gate,
		client:  plain.Client,
	}
}
