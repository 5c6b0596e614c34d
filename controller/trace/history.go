package trace

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/oplab-dev/oplab/controller"
)

// This file is the lab's time travel: every object version the
// controller's watches delivered, per namespace, kept as a JSON merge patch
// (RFC 7386) to the version before it, with a whole copy (a keyframe) every
// keyframeEvery versions of an object, so that rebuilding any version
// applies a few patches. A version is placed among the messages by the seq
// of the last message recorded before it: the objects "at seq N" are the
// versions that arrived before message N, which is what the controller had
// seen when it emitted step N. Run owns it all, like the rings.

// keyframeEvery is how many versions of an object, at most, lie between two
// keyframes: it bounds the patches a reconstruction applies (and so its
// time) at the cost of a whole copy per that many versions.
const keyframeEvery = 16

// DefaultHistoryBytes is the default bound on one namespace's history.
const DefaultHistoryBytes = 1 << 20

// ObjectVersion is one version of an object as a watch delivered it.
type ObjectVersion struct {
	// After is the seq of the last message recorded before this version
	// arrived: the version is current at every seq > After, until the next.
	After uint64 `json:"after"`
	// Event is the watch event that delivered it: create, update, delete.
	Event string `json:"event"`
	// Object is the object, normalised (see normalise); nil once deleted.
	Object json.RawMessage `json:"object,omitempty"`
}

// ObjectAt is one object as it was at a seq, with the version before it.
type ObjectAt struct {
	Ref controller.ObjectRef `json:"ref"`
	// Now is the version current at the seq; Prev the one before it, nil
	// when Now is the first kept.
	Now  ObjectVersion  `json:"now"`
	Prev *ObjectVersion `json:"prev,omitempty"`
}

// HistoryView is a namespace's objects at one seq.
type HistoryView struct {
	Seq uint64 `json:"seq"`
	// Floor: versions that arrived before message Floor were dropped to
	// keep the history in its byte bound, so at a seq ≤ Floor an object
	// may be missing or shown at a later version's predecessor.
	Floor uint64 `json:"floor"`
	// Bytes is what the namespace's history holds now, of its bound.
	Bytes   int        `json:"bytes"`
	Objects []ObjectAt `json:"objects"`
}

// version is one kept version: a keyframe holds the whole normalised
// object, any other a merge patch onto the version before it. A deletion
// holds nothing.
type version struct {
	after    uint64
	event    string
	keyframe bool
	gone     bool
	data     []byte
}

// objectHistory is every kept version of one object, oldest first.
type objectHistory struct {
	ref      controller.ObjectRef
	versions []version
	// last is the newest version whole (nil when deleted), to patch the
	// next one against; lastRV its resourceVersion, so that a resync's
	// repeat of the same version is not kept twice.
	last   []byte
	lastRV string
	// sinceKey counts the versions since the newest keyframe.
	sinceKey int
}

// history is one namespace's object versions, at most maxBytes of them
// (patches, keyframes and each object's newest copy).
type history struct {
	objects  map[controller.ObjectRef]*objectHistory
	arrivals []*objectHistory // one per kept version, oldest first: what to drop next
	head     int              // arrivals[head] is the oldest
	bytes    int
	maxBytes int
	floor    uint64
}

func newHistory(maxBytes int) *history {
	return &history{objects: map[controller.ObjectRef]*objectHistory{}, maxBytes: maxBytes}
}

// add keeps one version of ref, delivered by event after message seq; obj is
// its normalised JSON, nil for a deletion.
func (h *history) add(ref controller.ObjectRef, event string, after uint64, obj []byte, rv string) error {
	o, ok := h.objects[ref]
	if !ok {
		o = &objectHistory{ref: ref}
		h.objects[ref] = o
	}
	v := version{after: after, event: event}
	switch {
	case obj == nil:
		if o.last == nil && len(o.versions) > 0 {
			return nil // already gone
		}
		v.gone = true
		h.bytes -= len(o.last)
		o.last, o.lastRV = nil, ""
	case rv != "" && rv == o.lastRV:
		return nil // a resync: the same version again
	case o.last == nil || o.sinceKey+1 >= keyframeEvery:
		v.keyframe, v.data = true, obj
	default:
		patch, err := jsonpatch.CreateMergePatch(o.last, obj)
		if err != nil {
			return fmt.Errorf("diffing %s %s: %w", ref.Kind, ref.Name, err)
		}
		v.data = patch
	}
	if v.keyframe {
		o.sinceKey = 0
	} else {
		o.sinceKey++
	}
	if obj != nil {
		h.bytes += len(obj) - len(o.last)
		o.last, o.lastRV = obj, rv
	}
	o.versions = append(o.versions, v)
	h.bytes += len(v.data)
	h.arrivals = append(h.arrivals, o)
	h.evict()
	return nil
}

// evict drops the oldest versions, across the namespace's objects, while
// the history is over its bound. The newest version of each object is
// always kept: it is what the next is patched against.
func (h *history) evict() {
	// An object's only version is its present: it is kept, moved to the
	// back of arrivals as if it had just come, and eviction goes on with the
	// next; once every object left has gone round, there is nothing to drop.
	kept := 0
	for h.bytes > h.maxBytes && h.head < len(h.arrivals) && kept <= len(h.objects) {
		o := h.arrivals[h.head]
		h.arrivals[h.head] = nil
		h.head++
		switch {
		case len(o.versions) > 1:
			h.dropOldest(o)
		case o.last != nil:
			h.arrivals = append(h.arrivals, o)
			kept++
		default:
			// Its deletion, and nothing before it: it is gone from every
			// seq still kept.
			delete(h.objects, o.ref)
		}
	}
	// Reclaim the dropped part of arrivals once it is half of it.
	if h.head > 64 && h.head*2 > len(h.arrivals) {
		h.arrivals = append([]*objectHistory(nil), h.arrivals[h.head:]...)
		h.head = 0
	}
}

// dropOldest drops o's oldest version; the next, if a patch, becomes a
// keyframe of itself, so that it can still be rebuilt.
func (h *history) dropOldest(o *objectHistory) {
	old, next := o.versions[0], &o.versions[1]
	h.floor = max(h.floor, next.after)
	if !next.keyframe && !next.gone {
		whole, err := o.rebuild(1)
		if err == nil {
			h.bytes += len(whole) - len(next.data)
			next.data, next.keyframe = whole, true
		}
	}
	h.bytes -= len(old.data)
	o.versions[0] = version{}
	o.versions = o.versions[1:]
}

// rebuild returns version i of o whole, from the keyframe at or before it.
func (o *objectHistory) rebuild(i int) ([]byte, error) {
	if o.versions[i].gone {
		return nil, nil
	}
	k := i
	for k > 0 && !o.versions[k].keyframe {
		k--
	}
	if !o.versions[k].keyframe {
		return nil, fmt.Errorf("%s %s: no keyframe before version %d", o.ref.Kind, o.ref.Name, i)
	}
	doc := o.versions[k].data
	for j := k + 1; j <= i; j++ {
		var err error
		if doc, err = jsonpatch.MergePatch(doc, o.versions[j].data); err != nil {
			return nil, fmt.Errorf("rebuilding %s %s: %w", o.ref.Kind, o.ref.Name, err)
		}
	}
	return doc, nil
}

// chain is what rebuilding one object at a seq takes: its versions from a
// keyframe to the one current at the seq. Run copies it out (the versions'
// bytes are never changed once kept, only dropped), so that the patches are
// applied on the asker's goroutine, not Run's.
type chain struct {
	ref      controller.ObjectRef
	versions []version // from a keyframe (or a deletion) to the version current
	prev     int       // index in versions of the version before the current, -1 when none
}

// chainsAt returns, for each object present or deleted at seq, its chain.
func (h *history) chainsAt(seq uint64) []chain {
	var out []chain
	for _, o := range h.objects {
		i := -1
		for j, v := range o.versions {
			if v.after >= seq {
				break
			}
			i = j
		}
		if i < 0 {
			continue
		}
		// Start from the keyframe before the previous version, so that
		// both can be rebuilt; a deletion needs nothing before it.
		from := i
		if i > 0 {
			from = i - 1
		}
		for from > 0 && !o.versions[from].keyframe && !o.versions[from].gone {
			from--
		}
		c := chain{ref: o.ref, versions: append([]version(nil), o.versions[from:i+1]...), prev: -1}
		if i > 0 {
			c.prev = i - 1 - from
		}
		out = append(out, c)
	}
	return out
}

// objects rebuilds the chain's current version and the one before it.
func (c chain) objects() (ObjectAt, error) {
	o := objectHistory{ref: c.ref, versions: c.versions}
	at := ObjectAt{Ref: c.ref}
	cur := len(c.versions) - 1
	docs := make([][]byte, len(c.versions))
	// Apply each patch once, in order, keeping every step: the current and
	// the previous version come out of one pass.
	for j, v := range c.versions {
		switch {
		case v.gone:
			docs[j] = nil
		case v.keyframe:
			docs[j] = v.data
		case j == 0 || docs[j-1] == nil:
			d, err := o.rebuild(j)
			if err != nil {
				return at, err
			}
			docs[j] = d
		default:
			d, err := jsonpatch.MergePatch(docs[j-1], v.data)
			if err != nil {
				return at, fmt.Errorf("rebuilding %s %s: %w", c.ref.Kind, c.ref.Name, err)
			}
			docs[j] = d
		}
	}
	at.Now = ObjectVersion{After: c.versions[cur].after, Event: c.versions[cur].event, Object: docs[cur]}
	if c.prev >= 0 {
		at.Prev = &ObjectVersion{After: c.versions[c.prev].after, Event: c.versions[c.prev].event, Object: docs[c.prev]}
	}
	return at, nil
}

// normalise makes the JSON an object version is kept as, from the object as
// its watch delivered it (raw, its JSON encoding):
//   - a Secret keeps its metadata and type only: its data never enters the
//     history;
//   - managedFields are summarised as manager, operation, subresource and
//     time (their fieldsV1 is most of an object's bytes and says little);
//   - null values are dropped, as a merge patch cannot keep them, so that a
//     rebuilt version equals the one kept;
//   - kind is set from ref, as typed objects from a cache carry none.
func normalise(ref controller.ObjectRef, raw []byte) ([]byte, string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, "", fmt.Errorf("decoding %s %s: %w", ref.Kind, ref.Name, err)
	}
	if ref.Kind == "Secret" || obj["kind"] == "Secret" {
		for k := range obj {
			if !secretKeyKept(k) {
				delete(obj, k)
			}
		}
	}
	obj["kind"] = ref.Kind
	rv := ""
	if meta, ok := obj["metadata"].(map[string]any); ok {
		rv, _ = meta["resourceVersion"].(string)
		if mf, ok := meta["managedFields"].([]any); ok {
			meta["managedFields"] = summariseManagedFields(mf)
		}
	}
	out, err := json.Marshal(dropNulls(obj))
	if err != nil {
		return nil, "", fmt.Errorf("encoding %s %s: %w", ref.Kind, ref.Name, err)
	}
	return out, rv, nil
}

// summariseManagedFields keeps, of each managedFields entry, who wrote
// (manager), how (operation, subresource) and when (time).
func summariseManagedFields(mf []any) []any {
	out := make([]any, 0, len(mf))
	for _, e := range mf {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		s := map[string]any{}
		for _, k := range []string{"manager", "operation", "subresource", "time"} {
			if v, ok := m[k]; ok {
				s[k] = v
			}
		}
		out = append(out, s)
	}
	return out
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropNulls(e)
		}
	}
	return v
}

// travelReq asks Run for a namespace's chains at a seq.
type travelReq struct {
	namespace string
	seq       uint64
	reply     chan travel
}

type travel struct {
	chains []chain
	floor  uint64
	last   uint64
	bytes  int
}

// Observe keeps obj, as a watch's event delivered it, in its namespace's
// history (controller.Observer). It is called on the event handler's
// goroutine: the encoding happens there, the diff in Run. Like Emit it never
// blocks; a version the full inbox drops is a version missing, and the next
// is diffed against the last one kept.
func (r *Recorder) Observe(event string, ref controller.ObjectRef, obj any) {
	in := &seen{ref: ref, event: event}
	if event != "delete" {
		raw, err := json.Marshal(obj)
		if err == nil {
			in.obj, in.rv, err = normalise(ref, raw)
		}
		if err != nil {
			r.opts.Logger.Error(err, "Dropped an object version", "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
			return
		}
	}
	select {
	case r.inbox <- input{seen: in}:
	default:
		// Not a dropped step (the stream's notice counts those): the
		// history has a gap, which keep marks.
		r.droppedVersions.Add(1)
		r.versionGap.Store(true)
	}
}

// keep adds a version to its namespace's history, placed after the last
// message recorded.
func (r *Recorder) keep(s *seen) {
	if r.versionGap.Swap(false) {
		// A version was lost, of some namespace: every history before
		// now may miss it, so each is partial up to here (the views say
		// so), rather than show a deleted object alive.
		for _, h := range r.histories {
			h.floor = max(h.floor, r.seq)
		}
	}
	h, ok := r.histories[s.ref.Namespace]
	if !ok {
		h = newHistory(r.opts.HistoryBytes)
		h.floor = r.seq
		r.histories[s.ref.Namespace] = h
	}
	if err := h.add(s.ref, s.event, r.seq, s.obj, s.rv); err != nil {
		r.opts.Logger.Error(err, "Dropped an object version")
	}
}

func (r *Recorder) chainsAt(ns string, seq uint64) travel {
	h, ok := r.histories[ns]
	if !ok {
		return travel{floor: r.seq, last: r.seq}
	}
	return travel{chains: h.chainsAt(seq), floor: h.floor, last: r.seq, bytes: h.bytes}
}

// HistoryAt returns namespace's objects as they were when message seq was
// recorded (what the controller had seen when it emitted that step), each
// with the version before it. seq 0 means now. Only the gathering waits for
// Run; the patches are applied on the caller's goroutine.
func (r *Recorder) HistoryAt(namespace string, seq uint64) (HistoryView, error) {
	req := travelReq{namespace: namespace, seq: seq, reply: make(chan travel, 1)}
	if seq == 0 {
		req.seq = ^uint64(0)
	}
	var t travel
	select {
	case r.travels <- req:
		t = <-req.reply
	case <-r.done:
		return HistoryView{Seq: seq, Objects: []ObjectAt{}}, nil
	}
	if seq == 0 {
		seq = t.last
	}
	return viewOf(t, seq)
}

// objectOrder sorts a Database before its children, then by kind and name.
func objectOrder(ref controller.ObjectRef) string {
	rank := "1"
	if ref.Kind == "Database" {
		rank = "0"
	}
	return rank + ref.Kind + "/" + ref.Name
}

// secretKeyKept is whether a Secret's top-level key k is kept in the
// history (its data never is). One rule for the recorder and for reading
// an export, or oplab would refuse its own files.
func secretKeyKept(k string) bool {
	return k == "metadata" || k == "type" || k == "apiVersion" || k == "kind"
}
