package controller

import (
	"context"
	"time"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// StepType says what a trace Step records. The values are part of the JSON
// schema streamed over /ws and written to exported timelines.
type StepType string

// The step types, in the order a reconcile usually emits them.
const (
	// StepEvent is a watch event seen by an event handler, before it is
	// enqueued. Several events may coalesce into one reconcile.
	StepEvent StepType = "event"
	// StepReconcileStart opens a reconcile; Trigger says why it ran.
	StepReconcileStart StepType = "reconcile.start"
	// StepFetch is the result of reading the Database (found, gone, error).
	StepFetch StepType = "fetch"
	// StepDiff is desired vs actual for one child or for the whole object.
	StepDiff StepType = "diff"
	// StepRead is the learner's code reading one of the Database's
	// children (Found says whether it was there): what it compares the
	// child with is its own, so the trace makes no diff of it.
	StepRead StepType = "read"
	// StepAction is one change attempted on the cluster and its outcome.
	StepAction StepType = "action"
	// StepThrottled is a write of the learner's code held back by its
	// write rate (CodeWriteRate): Action and Target name the write,
	// Duration how long it waited.
	StepThrottled StepType = "throttled"
	// StepFinalizer is a phase of deletion handled through the finalizer.
	StepFinalizer StepType = "finalizer"
	// StepStatus is the status write: condition transitions, or skipped.
	StepStatus StepType = "status"
	// StepResult closes a reconcile: done, requeue after, or error with backoff.
	StepResult StepType = "result"
	// StepController is the controller itself starting or stopping (no
	// namespace), or one namespace paused or resumed (Object.Namespace set,
	// Phase "paused" or "resumed").
	StepController StepType = "controller"
	// StepQueue is the namespace's share of the work queue and of the
	// reconciles, sampled each second it changed (Queue): the numbers
	// controller-runtime exports as workqueue_* and
	// controller_runtime_reconcile_*, for one namespace. Object is
	// {Kind: "WorkQueue", Namespace: ns, Name: "database"}.
	StepQueue StepType = "queue"
)

// ObjectRef names the object a step concerns.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Outcome is the result of an action.
type Outcome string

// Action outcomes.
const (
	OutcomeCreated       Outcome = "Created"
	OutcomeAlreadyExists Outcome = "AlreadyExists" // converged: someone (maybe us) created it already
	OutcomeUpdated       Outcome = "Updated"
	OutcomeUnchanged     Outcome = "Unchanged" // not streamed any more: an unchanged child is a diff "in sync"; kept for older exported timelines
	OutcomeDeleted       Outcome = "Deleted"
	OutcomeError         Outcome = "Error"
)

// ConditionChange is one condition as the status write left it, with what it was before.
type ConditionChange struct {
	Type       string `json:"type"`
	From       string `json:"from,omitempty"` // previous status ("" when new)
	To         string `json:"to"`
	Reason     string `json:"reason"`
	Message    string `json:"message,omitempty"`
	Transition bool   `json:"transition"` // status flipped, so lastTransitionTime moved
	// LastTransitionTime is the condition's lastTransitionTime as written,
	// FromLastTransitionTime the one it replaced (RFC 3339). A rewrite that
	// changes nothing but the timestamp shows here: Transition false, the
	// times different.
	LastTransitionTime     string `json:"lastTransitionTime,omitempty"`
	FromLastTransitionTime string `json:"fromLastTransitionTime,omitempty"`
}

// FieldChange is one status field a write changed: its path as a learner
// reads it ("readyReplicas", "conditions[Ready]",
// "conditions[Ready].reason") and its values before and after, "" when
// absent.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

// The watches an event can come through, as Step.Watch names them.
const (
	// WatchFor is the controller's For watch: the Database itself.
	WatchFor = "For"
	// WatchOwns is one of its Owns watches: a Secret, Service or
	// StatefulSet whose controller reference names the Database.
	WatchOwns = "Owns"
	// WatchWatches is one of its Watches: a Pod whose label names the
	// Database, or a Warning Event about its StatefulSet.
	WatchWatches = "Watches"
)

// Step is one thing the controller saw or did. Seq is zero when emitted; the
// recorder that receives it stamps a monotonically increasing sequence number.
// Fields other than Seq, Time, Type and Object are set per type and omitted
// when empty.
type Step struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Type   StepType  `json:"type"`
	Object ObjectRef `json:"object"`

	// ReconcileID groups the steps of one reconcile (controller-runtime's reconcileID).
	ReconcileID string `json:"reconcileID,omitempty"`
	// Database is the Database a child's event or an action belongs to.
	Database string `json:"database,omitempty"`

	// Event: the watch event kind (create, update, delete, generic), the
	// object's generation, and whether it was enqueued or ignored (pitfall).
	Event      string `json:"event,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	Ignored    bool   `json:"ignored,omitempty"`
	// Held: the event arrived while its namespace was paused; it was not
	// queued, and resuming reconciles the Database. On a skipped status
	// step: the write was held back by the status-thrash pitfall's cap.
	Held bool `json:"held,omitempty"`

	// Reconcile start: trigger is "event" when watch events preceded it,
	// otherwise "requeue" or "resync". FirstEvent names the first of those
	// events: "update StatefulSet shop". WokenBy is that event's object and
	// Event its kind (create, update, delete, generic), as the event
	// handler saw them.
	Trigger    string     `json:"trigger,omitempty"`
	FirstEvent string     `json:"firstEvent,omitempty"`
	WokenBy    *ObjectRef `json:"wokenBy,omitempty"`
	// Watch (an event, and a reconcile.start a watch event woke) is the
	// watch that saw the event: WatchFor for the Database's own watch,
	// WatchOwns for an owned child's. Empty for an event oplab sends itself
	// (a namespace resumed), which says why in its message.
	Watch string `json:"watch,omitempty"`

	// OwnWrite (an event, and a reconcile.start it woke) says which write
	// of a reconciler's own the event is coming back through the watch
	// ("status patch", "your code's update"): the object's resourceVersion
	// is the one that write returned. Empty for anyone else's change.
	OwnWrite string `json:"ownWrite,omitempty"`

	// Fetch: "found", "not-found" or "error"; Generation is set when found.
	Found string `json:"found,omitempty"`
	// ResourceVersion: on an event, the object's resourceVersion as the
	// watch delivered it; on a fetch, the Database's resourceVersion as
	// read; on a write refused with a conflict, the one the write was
	// based on.
	ResourceVersion string `json:"resourceVersion,omitempty"`

	// Diff: what is missing or different, in words ("replicas 1 → 3").
	Differences []string `json:"differences,omitempty"`

	// Action: the verb (create, update, delete, patch), its target and outcome.
	Action  string     `json:"action,omitempty"`
	Target  *ObjectRef `json:"target,omitempty"`
	Outcome Outcome    `json:"outcome,omitempty"`
	// Conflict (an action or a status write): the API server refused the
	// write with 409 Conflict, because the object changed since it was read
	// (optimistic locking). Message explains it; nothing was written.
	Conflict bool `json:"conflict,omitempty"`

	// Finalizer phase: "added", "draining", "snapshot", "removed", "skipped".
	Phase string `json:"phase,omitempty"`

	// Status: the condition changes written, or Skipped when nothing changed.
	// Generation is the Database's generation; StatusWrites counts the
	// status writes this controller has made for the Database so far, this
	// one included, so a rewrite of an unchanged spec is plain to see.
	// Fields lists every status field the write changed, old and new.
	// Unchanged marks a write the API server accepted and kept as it was:
	// the status sent equalled the stored one, so the resourceVersion
	// (ResourceVersion) did not move and no watch event follows.
	Conditions         []ConditionChange `json:"conditions,omitempty"`
	Fields             []FieldChange     `json:"fields,omitempty"`
	Skipped            bool              `json:"skipped,omitempty"`
	Unchanged          bool              `json:"unchanged,omitempty"`
	ObservedGeneration int64             `json:"observedGeneration,omitempty"`
	StatusWrites       int               `json:"statusWrites,omitempty"`

	// Result: "done", "requeue" or "error". RequeueAfter is when the next
	// reconcile is due without any event: the resync after "done", the
	// requested delay after "requeue", the work queue's backoff after
	// "error". Retry (reconcile.start and result) counts the consecutive
	// failures before this reconcile: the retry number it is.
	Result       string        `json:"result,omitempty"`
	RequeueAfter time.Duration `json:"requeueAfterNs,omitempty"`
	Retry        int           `json:"retry,omitempty"`

	// Pitfall is the pitfall switched on for the object, if any, or
	// PitfallHidden, whether one is on or not, when the Database hides it.
	Pitfall string `json:"pitfall,omitempty"`

	// YourCode marks the steps of a reconcile run by the learner's own
	// code (Runner.HandOver) rather than oplab's reconciler.
	YourCode bool `json:"yourCode,omitempty"`

	// Queue (a queue step) is the namespace's queue sample.
	Queue *QueueSample `json:"queue,omitempty"`

	// Message is a human sentence; Error carries an error text.
	Message  string        `json:"message,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"durationNs,omitempty"`
}

// Sink receives trace steps. Emit must not block: the reconciler calls it on
// its hot path and must never wait on a browser.
type Sink interface {
	Emit(Step)
}

// Observer is a Sink that also keeps the objects the controller's watches
// deliver (the lab's time travel). The event filter hands it each object
// version it sees, before that event's step is emitted, so that the step
// follows it. Observe must not block, nor keep obj: a watch's object is the
// cache's, shared. A Secret reaches it with its metadata and type only.
type Observer interface {
	Observe(event string, ref ObjectRef, obj any)
}

// Clock is injected so tests can control time.
type Clock interface {
	Now() time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// DiscardSink drops every step; it is the sink when tracing is off.
type DiscardSink struct{}

// Emit drops s.
func (DiscardSink) Emit(Step) {}

// tracer stamps steps with the injected clock and hands them to the sink.
type tracer struct {
	sink  Sink
	clock Clock
}

// observe hands obj to the sink when it keeps objects (Observer).
func (t tracer) observe(event string, ref ObjectRef, obj any) {
	if o, ok := t.sink.(Observer); ok {
		o.Observe(event, ref, obj)
	}
}

func (t tracer) emit(s Step) {
	if s.Time.IsZero() {
		s.Time = t.clock.Now()
	}
	t.sink.Emit(s)
}

func (t tracer) now() time.Time { return t.clock.Now() }

// reconcileTrace is the trace of one reconcile. It travels in the
// reconcile's context.Context, from the Reconcile wrapper (reconcile.start
// and result) through the client interceptor (fetch, actions, status) to
// note. Every step it emits carries the reconcile's ID and the Database it
// is about. One reconcile runs on one goroutine, and so does every client
// call it makes: the fields need no lock.
type reconcileTrace struct {
	tracer
	id       string
	database ObjectRef
	pitfall  string
	// db is the Database as fetched, nil before the fetch: the wrappers
	// work out from it what the reconciler's calls mean.
	db *dbv1.Database

	// found is the fetch's outcome ("found", "not-found", "error"), "" before it.
	found string
	// observed is the fetched Database's status.observedGeneration.
	observed int64
	// statusWritten is set once the reconcile has written status;
	// statusSaid once any status step is emitted (a write, or one held back).
	statusWritten, statusSaid bool
	// yourCode: the learner's code runs this reconcile (handover.go).
	yourCode bool
}

func (rt *reconcileTrace) step(s Step) {
	s.ReconcileID = rt.id
	if s.Object.Name == "" {
		s.Object = rt.database
	}
	s.Database = rt.database.Name
	s.YourCode = rt.yourCode
	if s.Pitfall == "" {
		s.Pitfall = rt.pitfall
	}
	if s.Type == StepStatus {
		rt.statusSaid = true
	}
	rt.emit(s)
}

type traceKey struct{}

func withTrace(ctx context.Context, rt *reconcileTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, rt)
}

// traceOf returns the trace of the reconcile ctx belongs to, nil outside one.
func traceOf(ctx context.Context) *reconcileTrace {
	rt, _ := ctx.Value(traceKey{}).(*reconcileTrace)
	return rt
}

// note reports, on the trace of the reconcile ctx belongs to, what no API
// call shows. Only the pitfalls' variations use it; the reconciler itself
// is traced from outside. Outside a reconcile it does nothing.
func note(ctx context.Context, s Step) {
	if rt := traceOf(ctx); rt != nil {
		rt.step(s)
	}
}
