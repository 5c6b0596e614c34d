package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/controller"
)

// Defaults for the zero RecorderOptions.
const (
	DefaultRingSize  = 4096
	DefaultRingBytes = 4 << 20
	DefaultInboxSize = 8192
)

// RecorderOptions configure a Recorder. The zero value is usable.
type RecorderOptions struct {
	// RingSize is how many recent messages are kept per namespace (default
	// 4096). Older ones survive only as the latest state per object.
	RingSize int
	// RingBytes is how many bytes of messages' JSON are kept per namespace
	// at most (default 4 MiB): the count bound alone let one learner's
	// large messages take tens of MiB.
	RingBytes int
	// HistoryBytes bounds one namespace's object history (time travel,
	// history.go): its patches, keyframes and the newest copy of each
	// object; the oldest versions are dropped beyond it (default 1 MiB).
	HistoryBytes int
	// InboxSize is how many steps may wait for Run (default 8192); Emit
	// drops and counts steps beyond it.
	InboxSize int
	// Clock stamps steps emitted without a time (default the wall clock).
	Clock controller.Clock
	// Logger receives the recorder's few log lines (default discard).
	Logger logr.Logger
	// Card draws a state's card again from its view model (the lab's one
	// renderer; kind is the object's). With it the ring keeps no rendered
	// HTML at all: a state published with its card (PublishRendered) goes
	// to the viewers connected then as it is, and the ring keeps its view
	// model alone; a viewer who connects later gets each object's latest
	// state with its card drawn anew. Without it, an object's latest
	// state keeps its card.
	Card func(kind string, view json.RawMessage) (json.RawMessage, error)
}

func (o RecorderOptions) withDefaults() RecorderOptions {
	o.RingSize = orDefault(o.RingSize, DefaultRingSize)
	o.RingBytes = orDefault(o.RingBytes, DefaultRingBytes)
	o.InboxSize = orDefault(o.InboxSize, DefaultInboxSize)
	o.HistoryBytes = orDefault(o.HistoryBytes, DefaultHistoryBytes)
	if o.Clock == nil {
		o.Clock = controller.RealClock{}
	}
	return o
}

func orDefault[T int | int64 | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// RecorderStats are the recorder's counters.
type RecorderStats struct {
	// DroppedSteps counts steps and states Emit or PublishState dropped
	// because the inbox was full.
	DroppedSteps uint64 `json:"droppedSteps"`
	// Messages counts messages recorded (each got a seq).
	Messages uint64 `json:"messages"`
	// Seq is the last seq assigned.
	Seq uint64 `json:"seq"`
	// DroppedVersions counts object versions for the history dropped
	// because the inbox was full.
	DroppedVersions uint64 `json:"droppedVersions"`
}

// dropNoticeEvery is how often, at most, the stream says that steps were
// dropped.
const dropNoticeEvery = time.Second

// drainMax bounds how many inbox items Run takes in one go before it looks
// at its other channels again.
const drainMax = 1024

// input is one item of the inbox: a step, or a state (isState) whose JSON
// is state (nil when the object was deleted), or an object version a watch
// delivered (seen).
type input struct {
	step    controller.Step
	isState bool
	state   json.RawMessage
	// view is state's view model alone (PublishRendered); nil keeps state
	// whole when a newer one supersedes it.
	view json.RawMessage
	seen *seen
}

// seen is an object version as a watch event delivered it, normalised.
// Its place among the messages is its place in the inbox.
type seen struct {
	ref   controller.ObjectRef
	event string
	obj   []byte // nil: deleted
	rv    string
}

// Recorder stamps trace steps with a sequence number, keeps the recent
// history of each namespace and the latest state of each object, and hands
// what it records, in seq order, to its Feed. One goroutine, Run, owns all
// of it; everything else talks to it through channels.
type Recorder struct {
	opts RecorderOptions

	inbox   chan input
	joins   chan Viewer
	exports chan exportReq
	travels chan travelReq
	sizes   chan sizeReq
	forgets chan string
	done    chan struct{} // closed when Run has stopped accepting work
	// feed receives what is recorded; set by Attach before Run starts.
	feed    Feed
	running atomic.Bool

	droppedSteps atomic.Uint64
	messages     atomic.Uint64
	lastSeq      atomic.Uint64
	// droppedVersions counts object versions Observe dropped (the inbox
	// full); versionGap says one was dropped since Run last kept one.
	droppedVersions atomic.Uint64
	versionGap      atomic.Bool

	// Owned by Run.
	seq          uint64
	reportedDrop uint64
	reportedAt   time.Time
	spaces       map[string]*space
	histories    map[string]*history
	packer       packer
}

type exportReq struct {
	namespace string
	reply     chan Export
}

var _ controller.Sink = (*Recorder)(nil)

// NewRecorder returns a Recorder; nothing is recorded until Run runs.
func NewRecorder(opts RecorderOptions) *Recorder {
	opts = opts.withDefaults()
	r := &Recorder{
		opts:      opts,
		inbox:     make(chan input, opts.InboxSize),
		joins:     make(chan Viewer),
		exports:   make(chan exportReq),
		travels:   make(chan travelReq),
		sizes:     make(chan sizeReq),
		forgets:   make(chan string),
		done:      make(chan struct{}),
		spaces:    map[string]*space{},
		histories: map[string]*history{},
	}
	r.space("") // global messages: a resume point is good from seq 0 on
	return r
}

// Emit records s: it stamps Time when zero, and Run stamps the next Seq in
// arrival order. It never blocks: when the inbox is full the step is dropped,
// counted, and the stream says so with a "dropped" message.
func (r *Recorder) Emit(s controller.Step) {
	if s.Time.IsZero() {
		s.Time = r.opts.Clock.Now()
	}
	r.send(input{step: s})
}

// PublishState records the latest view model of obj, already encoded as
// JSON: it is stored and sent as it is, never decoded. Viewers receive it as
// a "state" message, and fresh viewers get the latest state of every object
// as a snapshot. A nil state says the object was deleted and removes it from
// snapshots. It never blocks.
func (r *Recorder) PublishState(obj controller.ObjectRef, state json.RawMessage) {
	r.PublishRendered(obj, state, nil)
}

// PublishRendered is PublishState for a state that carries what can be
// rendered again from the rest of it (the lab's card HTML beside its view
// model): view is the view model alone. Viewers get state; once obj has a
// newer state, the ring keeps only view, packed against the newer one
// (older.go), so it pays for one rendered card per object, not one per
// change. A nil view keeps state whole.
func (r *Recorder) PublishRendered(obj controller.ObjectRef, state, view json.RawMessage) {
	for _, raw := range []json.RawMessage{state, view} {
		if raw != nil && !json.Valid(raw) {
			r.opts.Logger.Error(errors.New("not valid JSON"), "Dropped a state", "kind", obj.Kind, "namespace", obj.Namespace, "name", obj.Name)
			return
		}
	}
	if state == nil {
		view = nil
	}
	r.send(input{isState: true, step: controller.Step{Type: TypeState, Object: obj, Time: r.opts.Clock.Now()}, state: state, view: view})
}

func (r *Recorder) send(in input) {
	select {
	case r.inbox <- in:
	default:
		r.droppedSteps.Add(1)
	}
}

// Stats returns the current counters; safe from any goroutine.
func (r *Recorder) Stats() RecorderStats {
	return RecorderStats{
		DroppedSteps:    r.droppedSteps.Load(),
		DroppedVersions: r.droppedVersions.Load(),
		Messages:        r.messages.Load(),
		Seq:             r.lastSeq.Load(),
	}
}

// Size is what the recorder holds of one namespace.
type Size struct {
	// Messages and Bytes are the ring's: its messages and what it counts
	// of them against RecorderOptions.RingBytes.
	Messages int `json:"messages"`
	Bytes    int `json:"bytes"`
	// States are the ring's state messages, OlderStates those of them a
	// newer state superseded, and StateBytes what they count of Bytes.
	States      int `json:"states"`
	OlderStates int `json:"olderStates"`
	StateBytes  int `json:"stateBytes"`
	// HistoryBytes is the object history's (history.go).
	HistoryBytes int `json:"historyBytes"`
}

type sizeReq struct {
	namespace string
	reply     chan Size
}

// Size measures what the recorder holds of namespace, for benchmarks and
// the figures in docs/BENCHMARKS.md. It waits for Run (a zero Size after Run).
func (r *Recorder) Size(namespace string) Size {
	req := sizeReq{namespace: namespace, reply: make(chan Size, 1)}
	select {
	case r.sizes <- req:
		return <-req.reply
	case <-r.done:
		return Size{}
	}
}

func (r *Recorder) size(ns string) Size {
	var out Size
	s := r.lookup(ns)
	for _, e := range s.ring.after(0) {
		out.Messages++
		out.Bytes += e.size()
		if e.old != nil || e.stepOf != nil || s.states[stateKey{e.obj.Kind, e.obj.Name}] == e {
			out.States++
			out.StateBytes += e.size()
			if e.old != nil {
				out.OlderStates++
			}
		}
	}
	if h, ok := r.histories[ns]; ok {
		out.HistoryBytes = h.bytes
	}
	return out
}

// Export returns the recorded timeline of namespace: the states of objects
// whose history fell out of the ring, then the ring, merged in seq order with
// the global messages, each as the bytes recorded, every step Emitted
// before the call included (unless the full inbox dropped it). It waits for
// Run; after Run has returned it returns an export without messages.
func (r *Recorder) Export(namespace string) Export {
	req := exportReq{namespace: namespace, reply: make(chan Export, 1)}
	select {
	case r.exports <- req:
		return <-req.reply
	case <-r.done:
		return Export{Version: ExportVersion, ExportedAt: time.Now().UTC(), Namespace: namespace, Messages: []json.RawMessage{}}
	}
}

// Forget drops the recorded history and states of namespace, as when a
// learner's namespace is cleaned up. Its viewers, if any, stay connected; a
// resume point from before it gets a "reset".
func (r *Recorder) Forget(namespace string) {
	select {
	case r.forgets <- namespace:
	case <-r.done:
	}
}

// Run is the goroutine that owns the sequence, the history and the latest
// states. It returns when ctx is done. Call it once.
func (r *Recorder) Run(ctx context.Context) {
	r.running.Store(true)
	defer close(r.done)
	// Drops held back by noteDrops' once-a-second limit are announced by
	// this tick even when no further step arrives.
	dropTick := time.NewTicker(dropNoticeEvery)
	defer dropTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-dropTick.C:
			r.pass(ctx, Update{Entries: r.noteDrops(nil)})
		case in := <-r.inbox:
			r.pass(ctx, Update{Entries: r.drain(r.record(nil, in))})
		case v := <-r.joins:
			r.pass(ctx, Update{Join: v, Catchup: r.catchup(v)})
		case req := <-r.exports:
			r.catchUp(ctx)
			req.reply <- r.export(req.namespace)
		case req := <-r.travels:
			r.catchUp(ctx)
			req.reply <- r.chainsAt(req.namespace, req.seq)
		case req := <-r.sizes:
			req.reply <- r.size(req.namespace)
		case ns := <-r.forgets:
			r.forget(ns)
		}
	}
}

// pass hands u to the feed, in order. It waits while the feed is busy (the
// hub writing a frame out): Emit's inbox takes up the slack, so the
// controller does not.
func (r *Recorder) pass(ctx context.Context, u Update) {
	if len(u.Entries) == 0 && u.Join == nil {
		return
	}
	if r.feed.Updates == nil {
		u.refuse()
		return
	}
	select {
	case r.feed.Updates <- u:
	case <-r.feed.Stopped:
		u.refuse()
	case <-ctx.Done():
		u.refuse()
	}
}

// catchUp records the steps already waiting before a read is answered:
// select picks among ready cases at random, so without it an Export could
// miss a step Emitted before it was asked for, by the same goroutine.
// Only what waits now is taken, so a busy controller cannot hold the read
// off; it goes to the feed in updates of at most drainMax, as drain's do,
// so a read may wait while the feed is busy, as a step does.
func (r *Recorder) catchUp(ctx context.Context) {
	for n := len(r.inbox); n > 0; n -= drainMax {
		var out []*Entry
		for range min(n, drainMax) {
			out = r.record(out, <-r.inbox)
		}
		r.pass(ctx, Update{Entries: r.noteDrops(out)})
	}
}

// drain records whatever else is already waiting, so a burst becomes one
// update, then says so in the stream if Emit had to drop steps.
func (r *Recorder) drain(out []*Entry) []*Entry {
	for range drainMax {
		select {
		case in := <-r.inbox:
			out = r.record(out, in)
		default:
			return r.noteDrops(out)
		}
	}
	return r.noteDrops(out)
}

func (r *Recorder) noteDrops(out []*Entry) []*Entry {
	dropped := r.droppedSteps.Load()
	if dropped == r.reportedDrop {
		return out
	}
	// While the inbox overflows, say so once a second, not after every
	// drain: the notice goes to every viewer.
	now := r.opts.Clock.Now()
	if now.Sub(r.reportedAt) < dropNoticeEvery {
		return out
	}
	n := dropped - r.reportedDrop
	r.reportedDrop, r.reportedAt = dropped, now
	return r.record(out, input{step: controller.Step{
		Type:    TypeDropped,
		Time:    now,
		Object:  controller.ObjectRef{Kind: "Recorder", Name: "trace"},
		Message: fmt.Sprintf("the trace recorder was full and dropped %d steps rather than slow the controller", n),
	}})
}

// record stamps the next seq on in, encodes it (the only time it is), keeps
// it, and appends it to out for the feed.
func (r *Recorder) record(out []*Entry, in input) []*Entry {
	if in.seen != nil {
		r.keep(in.seen)
		return out
	}
	s := r.space(in.step.Object.Namespace)
	r.seq++
	in.step.Seq = r.seq
	e := &Entry{seq: r.seq, obj: in.step.Object, raw: encodeMessage(in.step, in.state)}
	live := e
	if in.isState {
		s.retire(&r.packer, e.obj, in.view)
		if in.view != nil {
			step := in.step
			e.view, e.stepOf = in.view, &step
			if r.opts.Card != nil {
				// The viewers connected now get the card; the ring keeps
				// the view model alone (entries are never changed once
				// handed to the feed, so this is another one).
				live = &Entry{seq: e.seq, obj: e.obj, raw: e.raw}
				e.raw, e.bare = encodeMessage(in.step, in.view), true
			}
		}
	}
	s.ring.push(e)
	if in.isState {
		s.keepState(e, in.state == nil)
	}
	r.messages.Add(1)
	r.lastSeq.Store(r.seq)
	return append(out, live)
}

// withCards draws each bare state's card again (Card), in es, which is the
// caller's own slice (current's), as a viewer who connects now is sent
// them. A card that cannot be drawn is sent as its view model alone (the
// page then keeps the card it has), and logged.
func (r *Recorder) withCards(es []*Entry) []*Entry {
	for i, e := range es {
		if !e.bare {
			continue
		}
		card, err := r.opts.Card(e.obj.Kind, e.view)
		if err != nil {
			r.opts.Logger.Error(err, "Failed to draw a card for a catch-up", "kind", e.obj.Kind, "namespace", e.obj.Namespace, "name", e.obj.Name)
			continue
		}
		es[i] = &Entry{seq: e.seq, obj: e.obj, raw: encodeMessage(*e.stepOf, card)}
	}
	return es
}

// encodeMessage is the JSON of a message: the step, flattened, and after it
// the state's JSON as it was published.
func encodeMessage(s controller.Step, state json.RawMessage) []byte {
	raw, err := json.Marshal(s)
	if err != nil {
		// Only a time outside years 0-9999 fails to encode. Keep the seq
		// (viewers must see no gap) and say what went wrong.
		raw, _ = json.Marshal(controller.Step{
			Seq: s.Seq, Time: time.Unix(0, 0).UTC(), Type: s.Type, Object: s.Object,
			Error: fmt.Sprintf("the recorder could not encode this step: %v", err),
		})
	}
	if state == nil {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(`,"state":`)+len(state))
	out = append(out, raw[:len(raw)-1]...) // without the closing brace
	out = append(out, `,"state":`...)
	out = append(out, state...)
	return append(out, '}')
}
