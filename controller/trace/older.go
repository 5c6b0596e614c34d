package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/klauspost/compress/flate"

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
func (e *Entry) size() int {
	if e.old != nil {
		return len(e.old.view) + oldStateOverhead
	}
	return len(e.raw) + len(e.view)
}

// retire replaces the latest state of obj in the ring, if the ring still
// holds it, by what the ring keeps of an older state, now that next (nil
// for a deletion) is obj's latest. The entry itself is not changed (the
// feed and cached catch-up batches may share it); the ring gets a new one
// with the same seq.
func (s *space) retire(p *packer, obj controller.ObjectRef, next []byte) {
	prev := s.states[stateKey{obj.Kind, obj.Name}]
	if prev == nil || prev.view == nil || prev.seq <= s.ring.floor {
		return
	}
	old := &oldState{step: *prev.stepOf, view: prev.view}
	if next != nil {
		if packed, err := p.deflate(prev.view, next); err == nil {
			old.view, old.packed = packed, true
		}
	}
	s.ring.replace(&Entry{seq: prev.seq, obj: prev.obj, old: old})
}

// current leaves out the superseded states: what a viewer is sent.
func current(es []*Entry) []*Entry {
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
//
// An older state that cannot be restored is left out, and its error
// returned with the others: the rest of the export stands.
func (p *packer) materialize(es []*Entry) ([][]byte, error) {
	out := make([][]byte, 0, len(es))
	// Keyed by namespace too: an export merges a namespace's entries with
	// the global ones.
	type objKey struct{ ns, kind, name string }
	next := map[objKey][]byte{}
	var errs []error
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		key := objKey{e.obj.Namespace, e.obj.Kind, e.obj.Name}
		if e.old == nil {
			out = append(out, e.raw)
			if e.view != nil {
				next[key] = e.view
			}
			continue
		}
		view := e.old.view
		if e.old.packed {
			var err error
			if view, err = p.inflate(view, next[key]); err != nil {
				errs = append(errs, fmt.Errorf("state seq %d of %s %s: %w", e.seq, e.obj.Kind, e.obj.Name, err))
				delete(next, key) // the ones before it were packed against it
				continue
			}
		}
		next[key] = view
		out = append(out, encodeMessage(e.old.step, view))
	}
	slices.Reverse(out)
	return out, errors.Join(errs...)
}

// packer deflates and inflates older states, each against the view model
// of the state after it. Recorder.Run owns one. klauspost's flate, not the
// standard library's: its writer takes a new dictionary on Reset, where the
// standard one must be made again for each, about a megabyte of tables, so
// a state cost 1.3 ms to pack instead of 11 µs.
type packer struct {
	w   *flate.Writer
	buf bytes.Buffer
	r   io.ReadCloser
}

// packLevel is fast, and small enough: two states of a Database share all
// but a few fields, which any level finds in the dictionary.
const packLevel = 2

func (p *packer) deflate(data, dict []byte) ([]byte, error) {
	p.buf.Reset()
	if p.w == nil {
		w, err := flate.NewWriterDict(&p.buf, packLevel, dict)
		if err != nil {
			return nil, err
		}
		p.w = w
	} else {
		p.w.ResetDict(&p.buf, dict)
	}
	if _, err := p.w.Write(data); err != nil {
		return nil, err
	}
	if err := p.w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(p.buf.Bytes()), nil
}

func (p *packer) inflate(data, dict []byte) ([]byte, error) {
	if dict == nil {
		return nil, fmt.Errorf("the newer state it was packed against is missing")
	}
	if p.r == nil {
		p.r = flate.NewReaderDict(bytes.NewReader(data), dict)
	} else if err := p.r.(flate.Resetter).Reset(bytes.NewReader(data), dict); err != nil {
		return nil, err
	}
	out, err := io.ReadAll(p.r)
	if err != nil {
		return nil, err
	}
	// Raw deflate has no checksum: a wrong dictionary inflates to garbage
	// rather than failing. A view model is JSON; garbage is not.
	if !json.Valid(out) {
		return nil, errors.New("it does not inflate to JSON against the newer state")
	}
	return out, nil
}

// replace puts e where the entry of the same seq is, if the ring still
// holds it, and counts the bytes it saves or costs.
func (r *ring) replace(e *Entry) {
	i := sort.Search(r.n, func(i int) bool { return r.at(i).seq >= e.seq })
	if i == r.n || r.at(i).seq != e.seq {
		return
	}
	r.bytes += e.size() - r.at(i).size()
	r.buf[(r.start+i)%len(r.buf)] = e
}
