package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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
	first        map[types.NamespacedName]wake // the first pending event
	// written holds, per object, the resourceVersions the API server
	// returned from the reconcilers' own latest writes to it, so that the
	// watch event each write causes can say it is that write coming back.
	written map[ObjectRef]*ownEcho
	// writing counts the writes to each object under way: the watch
	// event of one may arrive before its writer has recorded what the API
	// server answered.
	writing map[ObjectRef]int
}

// ownEcho is what the reconcilers last wrote to one object.
type ownEcho struct {
	database string   // the Database it belongs to, for forget
	rvs      []string // the latest resourceVersions written, newest last
	what     []string // the write that returned each, in words
}

// echoesKept is how many of an object's own writes are remembered: a
// reconcile writes one object at most twice (a finalizer, then status),
// and its events arrive within milliseconds.
const echoesKept = 4

// wake is an event as the reconcile it queued reports it: its kind, its
// object, the watch that saw it and, when it was a reconciler's own write
// coming back, which write.
type wake struct {
	event, watch string
	object       ObjectRef
	own          string
}

// words is the event as FirstEvent says it: "update StatefulSet shop".
func (w wake) words() string {
	if w.event == "" {
		return ""
	}
	return w.event + " " + w.object.Kind + " " + w.object.Name
}

func newTriggerBook() *triggerBook {
	return &triggerBook{
		pending:      map[types.NamespacedName]int{},
		lastEnd:      map[types.NamespacedName]string{},
		statusWrites: map[types.NamespacedName]int{},
		first:        map[types.NamespacedName]wake{},
		written:      map[ObjectRef]*ownEcho{},
		writing:      map[ObjectRef]int{},
	}
}

// writingTo notes a write to ref under way; wrote ends it.
func (b *triggerBook) writingTo(ref ObjectRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writing[ref]++
}

// echoWait bounds how long an event waits for the write under way to its
// object to be recorded: the API server answered that write first, the
// writer is a few instructions from recording it.
const echoWait = 100 * time.Millisecond

// wrote records that a reconcile of database wrote ref and the API server
// answered with resourceVersion rv; what says which write ("status patch").
// An rv of "" ends a write that changed nothing (it failed).
func (b *triggerBook) wrote(database string, ref ObjectRef, rv, what string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writing[ref]--; b.writing[ref] <= 0 {
		delete(b.writing, ref)
	}
	if rv == "" {
		return
	}
	e := b.written[ref]
	if e == nil {
		e = &ownEcho{database: database}
		b.written[ref] = e
	}
	e.rvs, e.what = append(e.rvs, rv), append(e.what, what)
	if len(e.rvs) > echoesKept {
		e.rvs, e.what = e.rvs[1:], e.what[1:]
	}
}

// echo says which of the reconcilers' own writes made ref's version rv,
// "" when none did (someone else's write, or the cluster's own).
// A write to ref still under way may be the one: echo waits for it, at
// most echoWait.
func (b *triggerBook) echo(ref ObjectRef, rv string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for until := time.Now().Add(echoWait); ; {
		if e := b.written[ref]; e != nil {
			for i, v := range e.rvs {
				if v == rv {
					return e.what[i]
				}
			}
		}
		if b.writing[ref] == 0 || time.Now().After(until) {
			return ""
		}
		b.mu.Unlock()
		time.Sleep(time.Millisecond)
		b.mu.Lock()
	}
}

// statusWritten counts a status write of key and returns how many there have been.
func (b *triggerBook) statusWritten(key types.NamespacedName) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.statusWrites[key]++
	return b.statusWrites[key]
}

// eventArrived counts an enqueued event for key; what says what it was.
func (b *triggerBook) eventArrived(key types.NamespacedName, what wake) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[key] == 0 {
		b.first[key] = what
	}
	b.pending[key]++
}

// reconcileStarted takes the events counted for key and says what triggered
// the reconcile now starting.
// It also returns the first of those events.
func (b *triggerBook) reconcileStarted(key types.NamespacedName) (trigger string, events int, first wake) {
	b.mu.Lock()
	defer b.mu.Unlock()
	events, first = b.pending[key], b.first[key]
	delete(b.pending, key)
	delete(b.first, key)
	if events > 0 {
		return TriggerEvent, events, first
	}
	if end, ok := b.lastEnd[key]; ok {
		return end, 0, wake{}
	}
	// No event and no previous reconcile: a requeue scheduled by a dropped
	// event (drop-events pitfall) waiting for the resync.
	return TriggerResync, 0, wake{}
}

// reconcileEnded records what the next reconcile of key will be, absent events.
func (b *triggerBook) reconcileEnded(key types.NamespacedName, next string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastEnd[key] = next
}

// forget drops key once its Database is gone, so the book does not grow.
// It runs as the reconcile that found the Database gone ends: events
// counted meanwhile (the Database's own delete, arriving while a child's
// event was being reconciled) queued the next reconcile, which takes them
// as it starts; dropped here, that reconcile would call itself a resync
// beside the delete event that woke it.
func (b *triggerBook) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.lastEnd, key)
	delete(b.statusWrites, key)
	for ref, e := range b.written {
		if ref.Namespace == key.Namespace && e.database == key.Name {
			delete(b.written, ref)
		}
	}
}

// eventTracer sees every watch event before the controller queues it. It
// sits outside the controller's wiring as an event filter (a predicate),
// so the watches stay the plain For and Owns: it records the event on the
// trace and in the trigger book and lets it through, or holds it (the
// namespace is paused) or ignores it (the drop-events pitfall) by filtering
// it out.
type eventTracer struct {
	book *triggerBook
	tr   tracer
	gate *pauseGate
	// cache reads a child's Database, for its pitfall.
	cache  client.Reader
	resync time.Duration
	// later queues a request for the resync, as a dropped event's stand-in.
	later func(types.NamespacedName)
}

// filter is the predicate the controller's watches run every event through.
func (t *eventTracer) filter() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return t.admit("create", e.Object, "") },
		UpdateFunc:  func(e event.UpdateEvent) bool { return t.admit("update", e.ObjectNew, "") },
		DeleteFunc:  func(e event.DeleteEvent) bool { return t.admit("delete", e.Object, "") },
		GenericFunc: func(e event.GenericEvent) bool { return t.admit("generic", e.Object, "") },
	}
}

// admit traces one event and reports whether it may be queued. message,
// when set, is said of the event (why a generic event came).
func (t *eventTracer) admit(verb string, obj client.Object, message string) bool {
	if t.gate.isEnding(obj.GetNamespace()) {
		// A namespace the controller has left: ending with its session,
		// or a tester's scratch namespace, its driver's. Not traced, not
		// queued.
		return false
	}
	key, ok := databaseKey(obj)
	if !ok {
		// Not ours: For and Owns queue nothing for it either.
		return true
	}
	w := wake{event: verb, watch: watchOf(obj, message),
		object: ObjectRef{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	if _, isEvent := obj.(*corev1.Event); verb != "generic" && !isEvent {
		// What the watch delivered, held or dropped or not: the controller
		// saw it. A generic event is oplab's own, and carries no version;
		// a Kubernetes Event is a message about an object, which the
		// timeline quotes, not an object whose versions time travel shows.
		t.tr.observe(verb, w.object, withoutSecretData(obj))
	}
	if verb == "create" || verb == "update" {
		w.own = t.book.echo(w.object, obj.GetResourceVersion())
	}
	s := Step{
		Type:       StepEvent,
		Object:     w.object,
		Database:   key.Name,
		Event:      verb,
		Watch:      w.watch,
		Generation: obj.GetGeneration(),
		Message:    message,
		OwnWrite:   w.own,
	}
	if verb != "generic" {
		s.ResourceVersion = obj.GetResourceVersion()
	}
	if t.gate.hold(key) {
		// Paused: the event is shown arriving and held. It still counts
		// towards the reconcile that resuming will run, which then shows
		// how many events it coalesced.
		s.Held, s.Message = true, "held: namespace paused"
		t.tr.emit(s)
		t.book.eventArrived(key, w)
		return false
	}
	// Only a watch event that is not held needs the pitfall (a cache read
	// for a child's event). A generic event that says why it came (a
	// namespace resumed) is oplab's own and no pitfall drops it.
	if message == "" {
		if p := t.pitfallOf(obj, key); p.name == PitfallDropEvents {
			t.dropEvent(s, p, key)
			return false
		}
	}
	t.tr.emit(s)
	t.book.eventArrived(key, w)
	return true
}

// watchOf names the watch an event came through: For for the Database's
// own, Owns for a child's, Watches for a Pod's or a StatefulSet's Warning
// Event. An event oplab sends itself (message says why) came through no
// watch.
func watchOf(obj client.Object, message string) string {
	switch {
	case message != "":
		return ""
	case isDatabase(obj):
		return WatchFor
	case isWatched(obj):
		return WatchWatches
	}
	return WatchOwns
}

// isWatched says whether obj came through one of SetupWithManager's
// Watches: a Pod or an Event.
func isWatched(obj client.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.Event:
		return true
	}
	return false
}

// withoutSecretData is obj, but a Secret's metadata and type only: its data
// never leaves the controller for the history.
func withoutSecretData(obj client.Object) client.Object {
	if s, ok := obj.(*corev1.Secret); ok {
		return &corev1.Secret{ObjectMeta: s.ObjectMeta, Type: s.Type}
	}
	return obj
}

func isDatabase(obj client.Object) bool {
	_, ok := obj.(*dbv1.Database)
	return ok
}

// pitfallOf reads the pitfall of the Database an event maps to: from the
// object itself for a Database's own event, from the cache for a child's.
func (t *eventTracer) pitfallOf(obj client.Object, key types.NamespacedName) pitfallSwitch {
	if _, ok := obj.(*dbv1.Database); ok {
		return pitfallSwitchOf(obj)
	}
	var db dbv1.Database
	if err := t.cache.Get(context.Background(), key, &db); err != nil {
		return pitfallSwitch{}
	}
	return pitfallSwitchOf(&db)
}

// resumed handles the Databases oplab sends itself (a namespace resumed,
// handed over or taken back): each is traced like any other event, with
// why it came, and queued.
func (t *eventTracer) resumed() handler.TypedEventHandler[sweep, reconcile.Request] {
	return handler.TypedFuncs[sweep, reconcile.Request]{GenericFunc: func(_ context.Context, e sweepEvent, q queue) {
		if !t.admit("generic", e.Object.db, e.Object.why) {
			return
		}
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object.db)}
		if e.Object.why != whyResumed {
			// Other code reconciles from now on: the backoff earned by the
			// code before (up to 1000 s) is not its to wait out.
			q.Forget(req)
		}
		q.Add(req)
	}}
}

// queue is the controller's work queue.
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// databaseKey maps an event's object to the Database to reconcile, as For,
// Owns and Watches do: a Database to itself, a child to the Database named
// in its controller reference, a Pod or a StatefulSet's Warning Event as
// databaseOfPod and databaseOfWarning map them.
func databaseKey(obj client.Object) (types.NamespacedName, bool) {
	var reqs []reconcile.Request
	switch obj.(type) {
	case *dbv1.Database:
		return client.ObjectKeyFromObject(obj), true
	case *corev1.Pod:
		reqs = databaseOfPod(context.Background(), obj)
	case *corev1.Event:
		reqs = databaseOfWarning(context.Background(), obj)
	default:
		return ownerKey(obj)
	}
	if len(reqs) == 0 {
		return types.NamespacedName{}, false
	}
	return reqs[0].NamespacedName, true
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
