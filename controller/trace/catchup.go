package trace

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/oplab-dev/oplab/controller"
)

// catchupChunk is how many messages one catch-up batch carries at most, so
// a viewer resuming from an old seq gets several batches of bounded size.
const catchupChunk = 512

// A Viewer is someone who follows a namespace's trace as it is recorded
// (the web's websocket viewer). The Recorder asks it where it stands, and
// hands it, through the Feed, to whoever streams to it.
type Viewer interface {
	// Namespace is whose messages it gets, besides the global ones.
	Namespace() string
	// Since is the last seq it has; resume is false for a fresh viewer.
	Since() (seq uint64, resume bool)
	// Refuse tells it, once, that it will never be attached: the stream
	// is stopping.
	Refuse()
}

// A Feed is where a Recorder hands what it records, in seq order (the
// web's hub, which streams it to viewers).
type Feed struct {
	// Updates receives each Update. Run waits while it is not taken: the
	// Recorder's inbox takes up the slack.
	Updates chan<- Update
	// Stopped is closed once nothing takes Updates any more.
	Stopped <-chan struct{}
	// Frame makes what a catch-up Batch's transport shares of its JSON
	// (Batch.Framed); nil leaves Framed nil.
	Frame func(json []byte) any
}

// An Update is what a Recorder hands its Feed, in seq order: Entries just
// recorded, or a viewer to attach (Join) with Catchup, the batches it gets
// first, which cover every entry handed over before this update and none
// after.
type Update struct {
	Entries []*Entry
	Join    Viewer
	Catchup []Batch
}

// refuse lets go of a viewer that will not be attached because the stream
// is stopping.
func (u Update) refuse() {
	if u.Join != nil {
		go u.Join.Refuse()
	}
}

// Attach makes f the receiver of what r records. Call it once, before Run.
func (r *Recorder) Attach(f Feed) {
	if r.running.Load() || r.feed.Updates != nil {
		panic("trace: Attach after the Recorder's Run started, or twice")
	}
	r.feed = f
}

// Join hands v to Run, which works out what v has missed and passes v on
// to the feed with its catch-up (Update.Join), in seq order among the
// entries: no gap and no duplicate. It returns false, and nothing is
// passed, once the Recorder or the feed has stopped.
func (r *Recorder) Join(v Viewer) bool {
	select {
	case r.joins <- v:
		return true
	case <-r.done:
		return false
	case <-r.feed.Stopped:
		return false
	}
}

// space is the recorded history of one namespace ("" holds global
// messages). The Recorder's Run owns it.
type space struct {
	ring   *ring
	states map[stateKey]*Entry
	// catchup caches the batches a fresh viewer gets, as of catchupSeq,
	// so a classroom connecting at once is encoded and compressed once,
	// even while messages keep arriving (see freshBatches).
	catchup    []Batch
	catchupSeq uint64
	// since is catchup followed by the batch of what came after it, as of
	// seq sinceSeq: viewers connecting between two messages share it too.
	since    []Batch
	sinceSeq uint64
}

// stateKey names an object within its namespace.
type stateKey struct{ kind, name string }

// space returns the recorded history of ns, creating it on first use. A new
// space's floor is the current seq: nothing of ns was recorded before (or
// it was forgotten), so an older resume point must start again.
func (r *Recorder) space(ns string) *space {
	s, ok := r.spaces[ns]
	if !ok {
		s = &space{ring: newRing(r.opts.RingSize, r.opts.RingBytes), states: map[stateKey]*Entry{}}
		s.ring.floor = r.seq
		r.spaces[ns] = s
	}
	return s
}

// lookup is space without creating one: exporting a namespace nobody
// recorded must not make the recorder remember it.
func (r *Recorder) lookup(ns string) *space {
	if s, ok := r.spaces[ns]; ok {
		return s
	}
	return &space{ring: newRing(1, 0), states: map[stateKey]*Entry{}}
}

func (s *space) keepState(e *Entry, deleted bool) {
	key := stateKey{e.obj.Kind, e.obj.Name}
	if deleted {
		delete(s.states, key)
		return
	}
	s.states[key] = e
}

// catchup builds the batches a connecting viewer gets first: with a resume
// point still covered by the rings, the messages after it; otherwise (a
// "reset" first if it asked to resume) the snapshots and the rings.
func (r *Recorder) catchup(v Viewer) []Batch {
	ns := v.Namespace()
	since, resume := v.Since()
	s, g := r.space(ns), r.space("")
	if resume && since <= r.seq && since >= s.ring.floor && since >= g.ring.floor {
		return r.chunk(r.withCards(current(MergeBySeq(s.ring.after(since), g.ring.after(since)))))
	}
	if resume {
		return append(r.chunk([]*Entry{r.resetEntry(ns, since)}), r.freshBatches(s, g)...)
	}
	return r.freshBatches(s, g)
}

// freshFrames is the cached timeline of the namespace and, after it, what
// was recorded since the cache was built: no gap and no duplicate, since
// both are in seq order and split at catchupSeq. A message the ring has
// evicted since may still be in the cache; a fresh viewer then gets a
// little more history, never less. Once the messages since would fill a
// batch, or have left the ring, the cache is built again.
func (r *Recorder) freshBatches(s, g *space) []Batch {
	if s.catchup != nil && s.catchupSeq >= s.ring.floor && s.catchupSeq >= g.ring.floor {
		since := current(MergeBySeq(s.ring.after(s.catchupSeq), g.ring.after(s.catchupSeq)))
		if len(since) == 0 {
			return s.catchup
		}
		if len(since) < catchupChunk {
			if s.sinceSeq != r.seq {
				s.since = append(s.catchup[:len(s.catchup):len(s.catchup)], NewBatch(r.withCards(since), r.feed.Frame))
				s.sinceSeq = r.seq
			}
			return s.since
		}
	}
	s.catchup = r.chunk(r.withCards(current(timeline(s, g))))
	s.catchupSeq = r.seq
	return s.catchup
}

// timeline is what a fresh viewer or an export gets for a namespace: the
// states no longer in the rings, then the rings, in seq order.
func timeline(s, g *space) []*Entry {
	return MergeBySeq(
		append(s.snapshot(), s.ring.after(0)...),
		append(g.snapshot(), g.ring.after(0)...),
	)
}

// snapshot returns the latest states older than the ring, in seq order; the
// newer ones are replayed from the ring itself, so the result stays sorted.
func (s *space) snapshot() []*Entry {
	var out []*Entry
	for _, e := range s.states {
		if e.seq <= s.ring.floor {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (r *Recorder) resetEntry(ns string, since uint64) *Entry {
	m := Message{Step: controller.Step{
		Type:    TypeReset,
		Time:    r.opts.Clock.Now(),
		Object:  controller.ObjectRef{Kind: "Namespace", Name: ns},
		Message: fmt.Sprintf("resume point %d is no longer in the recent history; snapshots and recent history follow", since),
	}}
	raw, _ := json.Marshal(m) // plain data: cannot fail
	return &Entry{raw: raw}
}

// chunk splits es into catch-up batches of at most catchupChunk messages.
func (r *Recorder) chunk(es []*Entry) []Batch {
	var out []Batch
	for len(es) > 0 {
		n := min(len(es), catchupChunk)
		out = append(out, NewBatch(es[:n], r.feed.Frame))
		es = es[n:]
	}
	return out
}

func (r *Recorder) export(ns string) Export {
	e := Export{Version: ExportVersion, ExportedAt: r.opts.Clock.Now().UTC(), Namespace: ns, Messages: []json.RawMessage{}}
	var es []*Entry
	if ns == "" {
		g := r.lookup("")
		es = append(g.snapshot(), g.ring.after(0)...)
	} else {
		es = timeline(r.lookup(ns), r.lookup(""))
		if h, ok := r.histories[ns]; ok {
			e.History = h.export()
		}
	}
	msgs, err := r.packer.materialize(es)
	if err != nil {
		// Cannot happen while the ring keeps each older state with the
		// state after it; should it, those states are left out.
		r.opts.Logger.Error(err, "Left older states out of an export", "namespace", ns)
	}
	for _, m := range msgs {
		e.Messages = append(e.Messages, m)
	}
	return e
}

// forget drops a namespace's history. Should it be recorded again, its new
// space starts from a floor that makes any older resume point reset.
func (r *Recorder) forget(ns string) {
	if ns != "" {
		delete(r.spaces, ns)
		delete(r.histories, ns)
	}
}
