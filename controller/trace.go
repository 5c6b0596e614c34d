package controller

import (
	"fmt"
	"time"
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
	// StepAction is one change attempted on the cluster and its outcome.
	StepAction StepType = "action"
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
	OutcomeUnchanged     Outcome = "Unchanged"
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
}

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
	// queued, and resuming reconciles the Database.
	Held bool `json:"held,omitempty"`

	// Reconcile start: trigger is "event" when watch events preceded it,
	// otherwise "requeue" or "resync".
	Trigger string `json:"trigger,omitempty"`

	// Fetch: "found", "not-found" or "error"; Generation is set when found.
	Found string `json:"found,omitempty"`

	// Diff: what is missing or different, in words ("replicas 1 → 3").
	Differences []string `json:"differences,omitempty"`

	// Action: the verb (create, update, delete, patch), its target and outcome.
	Action  string     `json:"action,omitempty"`
	Target  *ObjectRef `json:"target,omitempty"`
	Outcome Outcome    `json:"outcome,omitempty"`

	// Finalizer phase: "added", "draining", "snapshot", "removed", "skipped".
	Phase string `json:"phase,omitempty"`

	// Status: the condition changes written, or Skipped when nothing changed.
	Conditions         []ConditionChange `json:"conditions,omitempty"`
	Skipped            bool              `json:"skipped,omitempty"`
	ObservedGeneration int64             `json:"observedGeneration,omitempty"`

	// Result: "done", "requeue" or "error"; RequeueAfter when scheduled.
	Result       string        `json:"result,omitempty"`
	RequeueAfter time.Duration `json:"requeueAfterNs,omitempty"`

	// Pitfall is the pitfall switched on for the object, if any.
	Pitfall string `json:"pitfall,omitempty"`

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

func (t tracer) emit(s Step) {
	if s.Time.IsZero() {
		s.Time = t.clock.Now()
	}
	t.sink.Emit(s)
}

func (t tracer) now() time.Time { return t.clock.Now() }

// reconcileTrace is the tracer of one reconcile: every step it emits carries
// the reconcile's ID and the Database it is about.
type reconcileTrace struct {
	tracer
	id       string
	database ObjectRef
	pitfall  string
}

func (rt *reconcileTrace) step(s Step) {
	s.ReconcileID = rt.id
	if s.Object.Name == "" {
		s.Object = rt.database
	}
	s.Database = rt.database.Name
	if s.Pitfall == "" {
		s.Pitfall = rt.pitfall
	}
	rt.emit(s)
}

// action reports one change attempted on the cluster and its outcome.
func (rt *reconcileTrace) action(verb string, target ObjectRef, outcome Outcome, began time.Time, err error, msg string) {
	s := Step{Type: StepAction, Action: verb, Target: &target, Outcome: outcome, Message: msg, Duration: rt.now().Sub(began)}
	if err != nil {
		s.Error = err.Error()
	}
	rt.step(s)
}

// diff reports what differs between desired and actual for one child.
func (rt *reconcileTrace) diff(target ObjectRef, differences []string) {
	msg := "in sync"
	if len(differences) > 0 {
		msg = fmt.Sprintf("%d difference(s)", len(differences))
	}
	rt.step(Step{Type: StepDiff, Target: &target, Differences: differences, Message: msg})
}

// finalizer reports one phase of deletion.
func (rt *reconcileTrace) finalizer(phase, msg string) {
	rt.step(Step{Type: StepFinalizer, Phase: phase, Message: msg})
}
