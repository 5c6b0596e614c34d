package controller

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// Triggers say why a reconcile ran, as reported in StepReconcileStart.
const (
	// TriggerEvent: one or more watch events arrived since the last reconcile.
	TriggerEvent = "event"
	// TriggerRequeue: no event; the last reconcile failed (backoff) or asked
	// to be run again soon.
	TriggerRequeue = "requeue"
	// TriggerResync: no event; the periodic resync came due.
	TriggerResync = "resync"
)

// triggerBook remembers, per Database, how many watch events arrived since
// its last reconcile started and how that reconcile ended. A reconcile.Request
// carries only a name, by design; this book is how the timeline can still
// show several events coalescing into one reconcile, or a reconcile that no
// event caused. Handlers and workers run on different goroutines, so a mutex
// guards the two maps and nothing else.
//
// It also counts each Database's status writes, so that a status step can
// say which write it is.
type triggerBook struct {
	mu           sync.Mutex
	pending      map[types.NamespacedName]int
	lastEnd      map[types.NamespacedName]string // TriggerRequeue or TriggerResync
	statusWrites map[types.NamespacedName]int
	first        map[types.NamespacedName]string // the first pending event, in words
}

func newTriggerBook() *triggerBook {
	return &triggerBook{
		pending:      map[types.NamespacedName]int{},
		lastEnd:      map[types.NamespacedName]string{},
		statusWrites: map[types.NamespacedName]int{},
		first:        map[types.NamespacedName]string{},
	}
}

// statusWritten counts a status write of key and returns how many there have been.
func (b *triggerBook) statusWritten(key types.NamespacedName) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.statusWrites[key]++
	return b.statusWrites[key]
}

// eventArrived counts an enqueued event for key; what says what it was
// ("update StatefulSet shop").
func (b *triggerBook) eventArrived(key types.NamespacedName, what string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[key] == 0 {
		b.first[key] = what
	}
	b.pending[key]++
}

// reconcileStarted takes the events counted for key and says what triggered
// the reconcile now starting.
// It also returns the first of those events, in words.
func (b *triggerBook) reconcileStarted(key types.NamespacedName) (trigger string, events int, first string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	events, first = b.pending[key], b.first[key]
	delete(b.pending, key)
	delete(b.first, key)
	if events > 0 {
		return TriggerEvent, events, first
	}
	if end, ok := b.lastEnd[key]; ok {
		return end, 0, ""
	}
	// No event and no previous reconcile: a requeue scheduled by a dropped
	// event (drop-events pitfall) waiting for the resync.
	return TriggerResync, 0, ""
}

// reconcileEnded records what the next reconcile of key will be, absent events.
func (b *triggerBook) reconcileEnded(key types.NamespacedName, next string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastEnd[key] = next
}

// forget drops key once its Database is gone, so the book does not grow.
func (b *triggerBook) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, key)
	delete(b.lastEnd, key)
	delete(b.statusWrites, key)
	delete(b.first, key)
}

// pitfallFunc returns the pitfall of the Database an event maps to.
type pitfallFunc func(ctx context.Context, obj client.Object, key types.NamespacedName) pitfallSwitch

// queue is the work queue an event handler adds requests to.
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// traceHandler is the event handler of one watched kind: it maps the object
// to its Database, records the event on the trace and enqueues the request
// (or, with the drop-events pitfall, ignores it).
type traceHandler struct {
	kind string
	// owner maps an object to the Database to reconcile; false means none.
	owner func(client.Object) (types.NamespacedName, bool)
	// pitfall returns the pitfall of the Database key names.
	pitfall pitfallFunc
	book    *triggerBook
	tr      tracer
	resync  time.Duration
	gate    *pauseGate
	// message, when set, is said of every event (why a generic event came).
	message string
}

var _ handler.EventHandler = &traceHandler{}

// Create handles a create event (including the initial list after a start).
func (h *traceHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.handle(ctx, "create", e.Object, q)
}

// Update handles an update event; the new object is the one that counts.
func (h *traceHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.handle(ctx, "update", e.ObjectNew, q)
}

// Delete handles a delete event.
func (h *traceHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.handle(ctx, "delete", e.Object, q)
}

// Generic handles an event from a non-Kubernetes source.
func (h *traceHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.handle(ctx, "generic", e.Object, q)
}

func (h *traceHandler) handle(ctx context.Context, kind string, obj client.Object, q queue) {
	key, ok := h.owner(obj)
	if !ok {
		return
	}
	s := Step{
		Type:       StepEvent,
		Object:     ObjectRef{Kind: h.kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Database:   key.Name,
		Event:      kind,
		Generation: obj.GetGeneration(),
		Message:    h.message,
	}
	req := reconcile.Request{NamespacedName: key}
	if h.gate.hold(key) {
		// Paused: the event is shown arriving and held. It still counts
		// towards the reconcile that resuming will run, which then shows
		// how many events it coalesced.
		s.Held, s.Message = true, "held: namespace paused"
		h.tr.emit(s)
		h.book.eventArrived(key, kind+" "+h.kind+" "+obj.GetName())
		return
	}
	// Only an event that is not held needs the pitfall: a cache read.
	switch p := h.pitfall(ctx, obj, key); {
	case p.name == PitfallDropEvents:
		h.dropEvent(s, p, req, q)
	default:
		h.tr.emit(s)
		h.book.eventArrived(key, kind+" "+h.kind+" "+obj.GetName())
		q.Add(req)
	}
}

// selfKey maps a Database to itself.
func selfKey(obj client.Object) (types.NamespacedName, bool) {
	return client.ObjectKeyFromObject(obj), true
}

var databaseGK = schema.GroupKind{Group: dbv1.GroupVersion.Group, Kind: "Database"}

// ownerKey maps a child to the Database named in its controller reference.
// It reads the reference without copying: it runs on every child event.
func ownerKey(obj client.Object) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != databaseGK.Kind {
		return types.NamespacedName{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != databaseGK.Group {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, true
}

// noPitfall is for events no pitfall may drop: resuming a namespace.
func noPitfall(context.Context, client.Object, types.NamespacedName) pitfallSwitch {
	return pitfallSwitch{}
}

// pitfallOfObject reads the pitfall of a Database event from the object itself.
func pitfallOfObject(_ context.Context, obj client.Object, _ types.NamespacedName) pitfallSwitch {
	return pitfallSwitchOf(obj)
}

// pitfallOfOwner reads the pitfall of a child's Database from the cache.
func pitfallOfOwner(reader client.Reader) pitfallFunc {
	return func(ctx context.Context, _ client.Object, key types.NamespacedName) pitfallSwitch {
		var db dbv1.Database
		if err := reader.Get(ctx, key, &db); err != nil {
			return pitfallSwitch{}
		}
		return pitfallSwitchOf(&db)
	}
}
