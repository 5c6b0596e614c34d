package trace

import (
	"encoding/json"
	"fmt"
	jsonpatch "github.com/evanphx/json-patch/v5"
	"sort"

	"github.com/oplab-dev/oplab/controller"
)

// This file carries a namespace's object history (history.go) in an export
// (version 3 on) and back: the versions as the recorder keeps them, a whole
// object now and then and merge patches between, so the file holds about
// what the recorder's bounded history holds and no more.

// MaxHistoryObjectBytes bounds one object's versions in an export: the
// recorder keeps 1 MiB of a namespace's history by default, and the replay
// upload reads a file a value of at most 1 MiB at a time (web/lab), so
// that is the one bound, here and there.
const MaxHistoryObjectBytes = 1 << 20

// ExportHistory is a namespace's object history in an export.
type ExportHistory struct {
	// Floor: versions that arrived before message Floor were dropped to
	// keep the history in its bound (HistoryView.Floor).
	Floor   uint64          `json:"floor,omitempty"`
	Objects []HistoryObject `json:"objects"`
}

// HistoryObject is every kept version of one object, oldest first.
type HistoryObject struct {
	Kind     string           `json:"kind"`
	Name     string           `json:"name"`
	Versions []HistoryVersion `json:"versions"`
}

// HistoryVersion is one version of an object: the whole object (Object), or
// a JSON merge patch onto the version before it (Patch), or, for a
// deletion, neither.
type HistoryVersion struct {
	// After is the seq of the last message recorded before the version
	// arrived (ObjectVersion.After).
	After  uint64          `json:"after"`
	Event  string          `json:"event"`
	Object json.RawMessage `json:"object,omitempty"`
	Patch  json.RawMessage `json:"patch,omitempty"`
}

// export is h as an export carries it, objects in the page's order.
func (h *history) export() *ExportHistory {
	out := &ExportHistory{Floor: h.floor, Objects: make([]HistoryObject, 0, len(h.objects))}
	for _, o := range h.objects {
		ho := HistoryObject{Kind: o.ref.Kind, Name: o.ref.Name, Versions: make([]HistoryVersion, 0, len(o.versions))}
		for _, v := range o.versions {
			hv := HistoryVersion{After: v.after, Event: v.event}
			switch {
			case v.gone:
			case v.keyframe:
				hv.Object = v.data
			default:
				hv.Patch = v.data
			}
			ho.Versions = append(ho.Versions, hv)
		}
		out.Objects = append(out.Objects, ho)
	}
	sort.Slice(out.Objects, func(i, j int) bool {
		a, b := out.Objects[i], out.Objects[j]
		return objectOrder(controller.ObjectRef{Kind: a.Kind, Name: a.Name}) < objectOrder(controller.ObjectRef{Kind: b.Kind, Name: b.Name})
	})
	return out
}

// CheckHistory checks an export's history (CheckHistoryObject for each
// object, and no object twice). Errors name the field, "history.objects[2].
// versions[0].event".
func CheckHistory(h ExportHistory) error {
	seen := map[string]int{}
	for i, o := range h.Objects {
		if err := CheckHistoryObject(o); err != nil {
			return fmt.Errorf("history.objects[%d].%w", i, err)
		}
		key := o.Kind + "/" + o.Name
		if j, ok := seen[key]; ok {
			return fmt.Errorf("history.objects[%d]: %s %s again (it is objects[%d])", i, o.Kind, o.Name, j)
		}
		seen[key] = i
	}
	return nil
}

// CheckHistoryObject checks one object's versions as the recorder writes
// them: a kind and a name; versions in order of after; each a create,
// update or delete; a deletion with no object, any other version with
// exactly one of object or patch, each a JSON object; a patch only onto a
// version that is there (not first, not after a deletion), and a whole
// object at least every keyframeEvery versions; a Secret with no data. Errors start with the field, relative to the object: "versions[1].
// patch: …".
func CheckHistoryObject(o HistoryObject) error {
	switch {
	case o.Kind == "":
		return fmt.Errorf("kind: missing")
	case o.Name == "":
		return fmt.Errorf("name: missing")
	case len(o.Versions) == 0:
		return fmt.Errorf("versions: none (an object in the history has at least one)")
	}
	size := 0
	var prev uint64
	present := false
	patches := 0 // since the last whole object
	for j, v := range o.Versions {
		at := fmt.Sprintf("versions[%d]", j)
		size += len(v.Object) + len(v.Patch)
		if size > MaxHistoryObjectBytes {
			return fmt.Errorf("%s: the object's versions are over %d MiB, more than a history keeps", at, MaxHistoryObjectBytes>>20)
		}
		if v.After < prev {
			return fmt.Errorf("%s.after: %d is before the previous version's %d", at, v.After, prev)
		}
		prev = v.After
		hasObj, hasPatch := len(v.Object) > 0, len(v.Patch) > 0
		switch v.Event {
		case "delete":
			if hasObj || hasPatch {
				return fmt.Errorf("%s: a deletion has no object or patch", at)
			}
			present = false
			continue
		case "create", "update":
		case "":
			return fmt.Errorf("%s.event: missing", at)
		default:
			// At most 32 characters of it: the message goes back to
			// whoever sent the file.
			return fmt.Errorf("%s.event: %.32q is not create, update or delete", at, v.Event)
		}
		switch {
		case hasObj && hasPatch:
			return fmt.Errorf("%s: both object and patch (a version is one or the other)", at)
		case hasObj:
			if err := checkJSONObject(v.Object, o.Kind); err != nil {
				return fmt.Errorf("%s.object: %w", at, err)
			}
			patches = 0
		case hasPatch:
			if !present {
				return fmt.Errorf("%s.patch: no version before it to patch (the first version, and the first after a deletion, is a whole object)", at)
			}
			// The recorder writes a whole object every keyframeEvery
			// versions; a longer run of patches would make each version
			// cost as many merges to rebuild as the file likes.
			if patches++; patches >= keyframeEvery {
				return fmt.Errorf("%s.patch: %d patches in a row (a whole object comes at least every %d versions)", at, patches, keyframeEvery)
			}
			if err := checkJSONObject(v.Patch, o.Kind); err != nil {
				return fmt.Errorf("%s.patch: %w", at, err)
			}
		default:
			return fmt.Errorf("%s: neither object nor patch", at)
		}
		present = true
	}
	return nil
}

// checkJSONObject checks that raw is a JSON object without duplicate keys
// (the page and this server would read it differently) and, for a Secret,
// without its data: the history never keeps it (normalise), so a file that
// has some was not written by oplab, and it is not shown.
func checkJSONObject(raw json.RawMessage, kind string) error {
	var m map[string]json.RawMessage
	if err := DecodeStrict(raw, &m); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("want a JSON object")
	}
	if kind == "Secret" {
		for k := range m {
			if !secretKeyKept(k) {
				return fmt.Errorf("%s: a Secret's history never holds its data", k)
			}
		}
	}
	return nil
}

// ReplayHistory is the history of an export, checked, to travel in as in the
// recorder's (Recorder.HistoryAt): read-only, one per replay.
type ReplayHistory struct {
	h *history
}

// NewReplayHistory makes the history of a checked export (CheckHistory)
// travellable. It rebuilds each version once, so that a patch that cannot
// be applied is found now, not when a learner clicks.
// Its objects are in namespace, the export's.
func NewReplayHistory(namespace string, e ExportHistory) (*ReplayHistory, error) {
	h := newHistory(0)
	h.floor = e.Floor
	for i, o := range e.Objects {
		oh := &objectHistory{ref: controller.ObjectRef{Kind: o.Kind, Namespace: namespace, Name: o.Name}}
		for _, v := range o.Versions {
			ver := version{after: v.After, event: v.Event}
			switch {
			case v.Event == "delete":
				ver.gone = true
			case len(v.Object) > 0:
				ver.keyframe, ver.data = true, v.Object
			default:
				ver.data = v.Patch
			}
			oh.versions = append(oh.versions, ver)
			h.bytes += len(ver.data)
		}
		// One pass, each patch applied once onto the version before it
		// (rebuilding each version from its keyframe would apply up to
		// 16 patches for each, 120 for every 16 versions).
		var doc []byte
		for j, v := range oh.versions {
			var err error
			switch {
			case v.gone:
				doc = nil
			case v.keyframe:
				doc = v.data
			case doc == nil:
				doc, err = oh.rebuild(j) // no version before it: rebuild says so
			default:
				doc, err = jsonpatch.MergePatch(doc, v.data)
			}
			if err != nil {
				return nil, fmt.Errorf("history.objects[%d].versions[%d]: %w", i, j, err)
			}
		}
		h.objects[oh.ref] = oh
	}
	return &ReplayHistory{h: h}, nil
}

// HistoryAt returns the objects as they were at seq, as Recorder.HistoryAt
// does; the namespace is the export's, whatever is asked.
func (r *ReplayHistory) HistoryAt(_ string, seq uint64) (HistoryView, error) {
	if seq == 0 {
		seq = ^uint64(0)
	}
	return viewOf(travel{chains: r.h.chainsAt(seq), floor: r.h.floor, bytes: r.h.bytes}, seq)
}

// Bytes is what the history holds: its patches and whole objects.
func (r *ReplayHistory) Bytes() int { return r.h.bytes }

// viewOf rebuilds the objects of t, the chains at seq.
func viewOf(t travel, seq uint64) (HistoryView, error) {
	v := HistoryView{Seq: seq, Floor: t.floor, Bytes: t.bytes, Objects: make([]ObjectAt, 0, len(t.chains))}
	for _, c := range t.chains {
		at, err := c.objects()
		if err != nil {
			return v, err
		}
		if at.Now.Object == nil {
			continue // deleted by then: not among the objects at seq
		}
		v.Objects = append(v.Objects, at)
	}
	sort.Slice(v.Objects, func(i, j int) bool { return objectOrder(v.Objects[i].Ref) < objectOrder(v.Objects[j].Ref) })
	return v, nil
}
