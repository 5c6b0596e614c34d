package stream

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/oplab-dev/oplab/controller"
)

// catchupChunk is how many messages one catch-up frame carries at most, so
// a viewer resuming from an old seq gets several frames of bounded size.
const catchupChunk = 512

// space is the recorded history of one namespace ("" holds global
// messages). The Recorder's Run owns it.
type space struct {
	ring   *ring
	states map[stateKey]*entry
	// catchup caches the frames a fresh viewer gets, as of catchupSeq, so
	// a classroom connecting at once is encoded and compressed once, even
	// while messages keep arriving (see freshFrames).
	catchup    []frame
	catchupSeq uint64
	// since is catchup followed by the frame of what came after it, as of
	// seq sinceSeq: viewers connecting between two messages share it too.
	since    []frame
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
		s = &space{ring: newRing(r.opts.RingSize, r.opts.RingBytes), states: map[stateKey]*entry{}}
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
	return &space{ring: newRing(1, 0), states: map[stateKey]*entry{}}
}

func (s *space) keepState(e *entry, deleted bool) {
	key := stateKey{e.obj.Kind, e.obj.Name}
	if deleted {
		delete(s.states, key)
		return
	}
	s.states[key] = e
}

// catchup builds the frames a connecting viewer gets first: with a resume
// point still covered by the rings, the messages after it; otherwise (a
// "reset" first if it asked to resume) the snapshots and the rings.
func (r *Recorder) catchup(c *client) []frame {
	s, g := r.space(c.namespace), r.space("")
	if c.resume && c.since <= r.seq && c.since >= s.ring.floor && c.since >= g.ring.floor {
		return chunkFrames(r.withCards(current(mergeBySeq(s.ring.after(c.since), g.ring.after(c.since)))))
	}
	if c.resume {
		return append(chunkFrames([]*entry{r.resetEntry(c)}), r.freshFrames(s, g)...)
	}
	return r.freshFrames(s, g)
}

// freshFrames is the cached timeline of the namespace and, after it, what
// was recorded since the cache was built: no gap and no duplicate, since
// both are in seq order and split at catchupSeq. A message the ring has
// evicted since may still be in the cache; a fresh viewer then gets a
// little more history, never less. Once the messages since would fill a
// frame, or have left the ring, the cache is built again.
func (r *Recorder) freshFrames(s, g *space) []frame {
	if s.catchup != nil && s.catchupSeq >= s.ring.floor && s.catchupSeq >= g.ring.floor {
		since := current(mergeBySeq(s.ring.after(s.catchupSeq), g.ring.after(s.catchupSeq)))
		if len(since) == 0 {
			return s.catchup
		}
		if len(since) < catchupChunk {
			if s.sinceSeq != r.seq {
				s.since = append(s.catchup[:len(s.catchup):len(s.catchup)], newFrame(r.withCards(since)))
				s.sinceSeq = r.seq
			}
			return s.since
		}
	}
	s.catchup = chunkFrames(r.withCards(current(timeline(s, g))))
	s.catchupSeq = r.seq
	return s.catchup
}

// timeline is what a fresh viewer or an export gets for a namespace: the
// states no longer in the rings, then the rings, in seq order.
func timeline(s, g *space) []*entry {
	return mergeBySeq(
		append(s.snapshot(), s.ring.after(0)...),
		append(g.snapshot(), g.ring.after(0)...),
	)
}

// snapshot returns the latest states older than the ring, in seq order; the
// newer ones are replayed from the ring itself, so the result stays sorted.
func (s *space) snapshot() []*entry {
	var out []*entry
	for _, e := range s.states {
		if e.seq <= s.ring.floor {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func (r *Recorder) resetEntry(c *client) *entry {
	m := Message{Step: controller.Step{
		Type:    TypeReset,
		Time:    r.opts.Clock.Now(),
		Object:  controller.ObjectRef{Kind: "Namespace", Name: c.namespace},
		Message: fmt.Sprintf("resume point %d is no longer in the recent history; snapshots and recent history follow", c.since),
	}}
	raw, _ := json.Marshal(m) // plain data: cannot fail
	return &entry{raw: raw}
}

// chunkFrames splits es into catch-up frames of at most catchupChunk messages.
func chunkFrames(es []*entry) []frame {
	var out []frame
	for len(es) > 0 {
		n := min(len(es), catchupChunk)
		out = append(out, newFrame(es[:n]))
		es = es[n:]
	}
	return out
}

func (r *Recorder) export(ns string) Export {
	e := Export{Version: ExportVersion, ExportedAt: r.opts.Clock.Now().UTC(), Namespace: ns, Messages: []json.RawMessage{}}
	var es []*entry
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
