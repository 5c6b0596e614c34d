package stream

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sort"

	"github.com/oplab-dev/oplab/controller"
)

// A state message is the object's view model with what is rendered from it
// (the lab's card HTML), which the page swaps in. The ring keeps it whole
// only while it is its object's latest. When a newer state of the object
// is recorded, the older one becomes an oldState: the view model alone,
// with nothing rendered, deflated against the newer state's view model as
// a dictionary. Two states of one Database differ in a few fields, so an
// older state costs a few hundred bytes instead of a card's 14 KiB.
//
// Nothing a viewer needs is lost: a catch-up sends each object's latest
// state only (the page shows the card as it is now, and the older ones
// would be swapped in and out again at once), and an export or a replay
// gets every state back as its view model (materialize), which the
// replay renders on demand with the lab's one renderer.

// oldState is what the ring keeps of a superseded state.
type oldState struct {
	step controller.Step
	// view is the view model: deflated against the next state's view model
	// when packed, plain when the next state is a deletion (it has no view
	// model to be a dictionary).
	view   []byte
	packed bool
}

// oldStateOverhead is what an oldState costs beyond its bytes, counted in
// the ring's byte bound: the step's strings are shared, the struct is not.
const oldStateOverhead = 160

// size is what the ring counts for e.
func (e *entry) size() int {
	if e.old != nil {
		return len(e.old.view) + oldStateOverhead
	}
	return len(e.raw) + len(e.view)
}

// retire replaces the latest state of obj in the ring, if the ring still
// holds it, by what the ring keeps of an older state, now that next (nil
// for a deletion) is obj's latest. The entry itself is not changed (the
// hub and cached catch-up frames may share it); the ring gets a new one
// with the same seq.
func (s *space) retire(obj controller.ObjectRef, next []byte) {
	prev := s.states[stateKey{obj.Kind, obj.Name}]
	if prev == nil || prev.view == nil || prev.seq <= s.ring.floor {
		return
	}
	old := &oldState{step: *prev.stepOf, view: prev.view}
	if next != nil {
		if packed, err := deflateWith(prev.view, next); err == nil {
			old.view, old.packed = packed, true
		}
	}
	s.ring.replace(&entry{seq: prev.seq, obj: prev.obj, old: old})
}

// current leaves out the superseded states: what a viewer is sent.
func current(es []*entry) []*entry {
	out := es[:0:0]
	for _, e := range es {
		if e.old == nil {
			out = append(out, e)
		}
	}
	return out
}

// materialize returns the messages of es (in seq order) as an export
// carries them: the older states as their view models, each inflated with
// the dictionary of the state after it, which a walk from the newest entry
// back has just restored.
func materialize(es []*entry) ([][]byte, error) {
	out := make([][]byte, len(es))
	next := map[stateKey][]byte{}
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		key := stateKey{e.obj.Kind, e.obj.Name}
		if e.old == nil {
			out[i] = e.raw
			if e.view != nil {
				next[key] = e.view
			}
			continue
		}
		view := e.old.view
		if e.old.packed {
			var err error
			if view, err = inflateWith(view, next[key]); err != nil {
				return nil, fmt.Errorf("state seq %d of %s %s: %w", e.seq, e.obj.Kind, e.obj.Name, err)
			}
		}
		next[key] = view
		out[i] = encodeMessage(e.old.step, view)
	}
	return out, nil
}

func deflateWith(data, dict []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := flate.NewWriterDict(&b, flate.DefaultCompression, dict)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(b.Bytes()), nil
}

func inflateWith(data, dict []byte) ([]byte, error) {
	if dict == nil {
		return nil, fmt.Errorf("the newer state it was packed against is missing")
	}
	return io.ReadAll(flate.NewReaderDict(bytes.NewReader(data), dict))
}

// replace puts e where the entry of the same seq is, if the ring still
// holds it, and counts the bytes it saves or costs.
func (r *ring) replace(e *entry) {
	i := sort.Search(r.n, func(i int) bool { return r.at(i).seq >= e.seq })
	if i == r.n || r.at(i).seq != e.seq {
		return
	}
	r.bytes += e.size() - r.at(i).size()
	r.buf[(r.start+i)%len(r.buf)] = e
}
