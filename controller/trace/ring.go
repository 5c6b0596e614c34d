package trace

import (
	"sort"

	"github.com/oplab-dev/oplab/controller"
)

// An Entry is one recorded message, encoded once when recorded and never
// changed after: the Recorder's rings, the batches sent to viewers and
// exports share its bytes.
type Entry struct {
	seq uint64
	// obj is the object the message concerns: its namespace routes it, and
	// for a state it keys the latest states.
	obj controller.ObjectRef
	raw []byte
	// view is a state's view model alone, without what is rendered from
	// it, and stepOf the state's step: kept on the object's latest state
	// (Recorder.PublishRendered), for the older state before it to be
	// packed against, and to pack this one when it is superseded.
	view   []byte
	stepOf *controller.Step
	// old replaces raw once a newer state superseded this one (older.go).
	old *oldState
	// bare: raw holds the state's view model alone, its card to be drawn
	// again for a viewer (RecorderOptions.Card, Recorder.withCards).
	bare bool
}

// ring holds the most recent entries of one namespace in seq order, at most
// len(buf) of them and at most maxBytes of their JSON (a learner whose
// objects make large messages, such as a Database card listing hundreds of
// Pods, gets a shorter history, not more memory). floor is the seq of the
// newest entry it has evicted (at first, the seq when the ring was made): a
// viewer whose resume point is below floor may have missed something and
// must start again from a snapshot.
type ring struct {
	buf      []*Entry
	start    int // index of the oldest entry
	n        int
	floor    uint64
	bytes    int
	maxBytes int
}

// newRing returns a ring of size entries and maxBytes of JSON (no byte
// bound when maxBytes <= 0).
func newRing(size, maxBytes int) *ring {
	return &ring{buf: make([]*Entry, size), maxBytes: maxBytes}
}

// push appends e, evicting the oldest entries while it is full, by count
// or by bytes. The newest entry is always kept, whatever its size.
func (r *ring) push(e *Entry) {
	for r.n > 0 && (r.n == len(r.buf) || (r.maxBytes > 0 && r.bytes+e.size() > r.maxBytes)) {
		old := r.buf[r.start]
		r.floor = old.seq
		r.bytes -= old.size()
		r.buf[r.start] = nil
		r.start = (r.start + 1) % len(r.buf)
		r.n--
	}
	r.buf[(r.start+r.n)%len(r.buf)] = e
	r.n++
	r.bytes += e.size()
}

func (r *ring) at(i int) *Entry { return r.buf[(r.start+i)%len(r.buf)] }

// after returns the entries with seq > since, oldest first.
func (r *ring) after(since uint64) []*Entry {
	i := sort.Search(r.n, func(i int) bool { return r.at(i).seq > since })
	out := make([]*Entry, 0, r.n-i)
	for ; i < r.n; i++ {
		out = append(out, r.at(i))
	}
	return out
}

// MergeBySeq merges two slices that are each in seq order.
func MergeBySeq(a, b []*Entry) []*Entry {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]*Entry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].seq < b[0].seq {
			out, a = append(out, a[0]), a[1:]
			continue
		}
		out, b = append(out, b[0]), b[1:]
	}
	out = append(out, a...)
	return append(out, b...)
}

// encodeBatch renders entries as the JSON array a Batch carries.
func encodeBatch(es []*Entry) []byte {
	size := 2 + len(es)
	for _, e := range es {
		size += len(e.raw)
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, e := range es {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e.raw...)
	}
	return append(out, ']')
}

// Seq is the entry's place in the stream (0 for a "reset").
func (e *Entry) Seq() uint64 { return e.seq }

// Namespace is the namespace of the object the message concerns, which
// decides who sees it; "" for a global message, which everyone sees.
func (e *Entry) Namespace() string { return e.obj.Namespace }

// A Batch is messages in seq order as one JSON array, what a viewer
// receives in one go: encoded once, and shared by every viewer it goes to.
type Batch struct {
	// JSON is the array.
	JSON []byte
	// Framed is what the transport made of JSON once for all the viewers
	// (the web's hub: a prepared websocket message, framed and compressed
	// once per kind of connection); nil when it made nothing.
	Framed any
}

// NewBatch encodes es as one Batch, framed by frame (Feed.Frame) when
// frame is not nil.
func NewBatch(es []*Entry, frame func(json []byte) any) Batch {
	b := Batch{JSON: encodeBatch(es)}
	if frame != nil {
		b.Framed = frame(b.JSON)
	}
	return b
}
