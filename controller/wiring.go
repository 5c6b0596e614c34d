package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
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
//     lets it read its own writes (fresh.go), tracingClient records what
//     each call did (tracing.go). Its APIReader is traced the same way.
//   - pitfallReconciler picks, per Database, the plain loop or one of its
//     broken variations (pitfalls.go).
//   - tracedReconciler opens and closes each reconcile on the trace and
//     holds a request of a paused namespace (tracing.go, pause.go).
//   - An event filter traces each watch event before it is queued, and
//     holds or drops it (events.go). Two channel sources queue what no
//     watch event brings: a resumed namespace's Databases, and the resync
//     standing in for a dropped event.

// setupController registers the Database controller with mgr as oplab runs
// it. Its watches are SetupWithManager's, For the Database and Owns its
// three children; resumed carries the Databases of a namespace resumed.
func setupController(mgr ctrl.Manager, opts Options, gate *pauseGate, resumed <-chan event.GenericEvent) error {
	traced := newTracedReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), mgr.GetEventRecorder(RecorderName), opts, gate)
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
	return ctrl.NewControllerManagedBy(mgr).
		For(&dbv1.Database{}).
		Owns(&corev1.Secret{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		WithEventFilter(filter.filter()).
		WatchesRawSource(source.Channel(resumed, filter.resumed())).
		WatchesRawSource(source.Channel(later, atResync)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, RateLimiter: traced.backoff}).
		Named("database").
		Complete(traced)
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
		Client:       tracingClient(own, own, book),
		APIReader:    tracingReader(apiReader),
		Scheme:       scheme,
		Recorder:     recorder,
		Clock:        opts.Clock,
		ResyncPeriod: opts.ResyncPeriod,
	}
	return &tracedReconciler{
		inner:   newPitfallReconciler(plain, own),
		tr:      tracer{sink: opts.Sink, clock: opts.Clock},
		book:    book,
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](backoffBase, backoffMax),
		resync:  opts.ResyncPeriod,
		gate:    gate,
	}
}
