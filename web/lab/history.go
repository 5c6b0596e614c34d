package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/httpx"
)

// History is the recorder's time travel: a namespace's objects as the
// controller's watches had delivered them when a given message was
// recorded (trace.Recorder).
type History interface {
	HistoryAt(namespace string, seq uint64) (trace.HistoryView, error)
}

// Change is one field that differs between two versions of an object, as
// the time-travel panel lists it: "spec.replicas 1 → 2".
type Change struct {
	Field string `json:"field"`
	// From and To are the values as text; "" with Absent set when the
	// field was not there.
	From       string `json:"from,omitempty"`
	To         string `json:"to,omitempty"`
	FromAbsent bool   `json:"fromAbsent,omitempty"`
	ToAbsent   bool   `json:"toAbsent,omitempty"`
}

// TravelObject is one object at a step: as it was, and how it differed
// from the version before it (or, in a comparison, from the other step).
type TravelObject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Event is the watch event that delivered the version shown, After the
	// seq of the message it followed.
	Event string `json:"event,omitempty"`
	After uint64 `json:"after,omitempty"`
	// Object is the version, without what the diff ignores unless all.
	Object json.RawMessage `json:"object,omitempty"`
	// State: "new" (no version before it kept), "changed", "same",
	// and in a comparison also "created" and "deleted".
	State   string   `json:"state"`
	Changes []Change `json:"changes"`
}

// Travel is the answer to /lab/history and /lab/history/diff.
type Travel struct {
	Seq  uint64 `json:"seq,omitempty"`
	From uint64 `json:"from,omitempty"`
	To   uint64 `json:"to,omitempty"`
	// All: resourceVersion, managedFields (summarised) and timestamps are
	// shown and compared; otherwise they are left out.
	All bool `json:"all"`
	// Partial: the history's byte bound dropped versions from before this
	// step, so an object may be missing from it.
	Partial bool           `json:"partial,omitempty"`
	Objects []TravelObject `json:"objects"`
}

// travelAt serves GET /lab/history?at=SEQ[&all=1]: the learner's objects as
// they were right after step SEQ (every version the controller's watches
// had delivered when it emitted the step, that step's own event included),
// each with its changes from the version before it.
func (h *Handler) travelAt(w http.ResponseWriter, r *http.Request) {
	if ns, ok := h.travelNamespace(w, r); ok {
		h.serveTravelAt(w, r, h.opts.History, ns)
	}
}

// serveTravelAt answers /lab/history from hist, the live lab's or a
// replay's.
func (h *Handler) serveTravelAt(w http.ResponseWriter, r *http.Request, hist History, ns string) {
	q := r.URL.Query()
	at, err := seqParam(q.Get("at"), "at")
	all, err2 := boolParam(q.Get("all"), "all")
	if err = firstErr(err, err2); err != nil {
		httpx.JSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	view, err := hist.HistoryAt(ns, at)
	if err != nil {
		h.opts.Logger.Error(err, "Rebuilt no history", "namespace", ns, "seq", at)
		httpx.JSON(w, http.StatusInternalServerError, map[string]string{"error": "the history could not be rebuilt"})
		return
	}
	out := Travel{Seq: at, All: all, Partial: view.Floor >= at, Objects: []TravelObject{}}
	for _, o := range view.Objects {
		t := TravelObject{Kind: o.Ref.Kind, Name: o.Ref.Name, Event: o.Now.Event, After: o.Now.After, State: "new"}
		now := decodeObject(o.Now.Object, all)
		t.Object, _ = json.Marshal(now)
		if o.Prev != nil && o.Prev.Object != nil {
			t.Changes = diffObjects(decodeObject(o.Prev.Object, all), now)
			t.State = stateOf(t.Changes)
		}
		if t.Changes == nil {
			t.Changes = []Change{}
		}
		out.Objects = append(out.Objects, t)
	}
	httpx.JSON(w, http.StatusOK, out)
}

// travelDiff serves GET /lab/history/diff?from=N&to=M[&all=1]: how each
// object changed from right after step N to right after step M.
func (h *Handler) travelDiff(w http.ResponseWriter, r *http.Request) {
	if ns, ok := h.travelNamespace(w, r); ok {
		h.serveTravelDiff(w, r, h.opts.History, ns)
	}
}

// serveTravelDiff answers /lab/history/diff from hist.
func (h *Handler) serveTravelDiff(w http.ResponseWriter, r *http.Request, hist History, ns string) {
	q := r.URL.Query()
	from, err := seqParam(q.Get("from"), "from")
	to, err2 := seqParam(q.Get("to"), "to")
	all, err3 := boolParam(q.Get("all"), "all")
	if err = firstErr(err, err2, err3); err == nil && from > to {
		// Reversed, every deletion would read as a creation.
		err = fmt.Errorf("from: step %d is after to, step %d: want the earlier step first", from, to)
	}
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	a, err := hist.HistoryAt(ns, from)
	var b trace.HistoryView
	if err == nil {
		b, err = hist.HistoryAt(ns, to)
	}
	if err != nil {
		h.opts.Logger.Error(err, "Rebuilt no history", "namespace", ns, "from", from, "to", to)
		httpx.JSON(w, http.StatusInternalServerError, map[string]string{"error": "the history could not be rebuilt"})
		return
	}
	out := Travel{From: from, To: to, All: all, Partial: a.Floor >= min(from, to), Objects: []TravelObject{}}
	before := map[string]trace.ObjectAt{}
	for _, o := range a.Objects {
		before[o.Ref.Kind+"/"+o.Ref.Name] = o
	}
	for _, o := range b.Objects {
		key := o.Ref.Kind + "/" + o.Ref.Name
		now := decodeObject(o.Now.Object, all)
		t := TravelObject{Kind: o.Ref.Kind, Name: o.Ref.Name, Event: o.Now.Event, After: o.Now.After, State: "created"}
		t.Object, _ = json.Marshal(now)
		if old, ok := before[key]; ok {
			t.Changes = diffObjects(decodeObject(old.Now.Object, all), now)
			t.State = stateOf(t.Changes)
			delete(before, key)
		} else {
			t.Changes = diffObjects(map[string]any{}, now)
		}
		out.Objects = append(out.Objects, t)
	}
	for _, o := range a.Objects {
		if _, gone := before[o.Ref.Kind+"/"+o.Ref.Name]; gone {
			out.Objects = append(out.Objects, TravelObject{Kind: o.Ref.Kind, Name: o.Ref.Name, State: "deleted",
				Changes: diffObjects(decodeObject(o.Now.Object, all), map[string]any{})})
		}
	}
	httpx.JSON(w, http.StatusOK, out)
}

// travelNamespace is the caller's own namespace. A namespace named in the
// query must be it: a learner reads their own history and no one else's.
func (h *Handler) travelNamespace(w http.ResponseWriter, r *http.Request) (string, bool) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		httpx.JSON(w, http.StatusForbidden, map[string]string{"error": err.Error()})
		return "", false
	}
	if asked := r.URL.Query().Get("namespace"); asked != "" && asked != ns {
		httpx.JSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("namespace %q is not yours: you can read only your own history (%s)", asked, ns)})
		return "", false
	}
	if h.opts.History == nil {
		httpx.JSON(w, http.StatusNotFound, map[string]string{"error": "this server keeps no history"})
		return "", false
	}
	return ns, true
}

func seqParam(s, name string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("%s is missing: want the seq of a timeline step", name)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n == ^uint64(0) {
		return 0, fmt.Errorf("%s=%s is not a step's seq: want a whole number from 1", name, shorten(s))
	}
	return n, nil
}

func boolParam(s, name string) (bool, error) {
	switch s {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, fmt.Errorf("%s=%s: want 1 or 0", name, shorten(s))
}

// shorten keeps an echoed parameter short: the error names it, it need not
// repeat a page of it.
func shorten(s string) string {
	if r := []rune(s); len(r) > 32 {
		return string(r[:32]) + "…"
	}
	return s
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func stateOf(changes []Change) string {
	if len(changes) == 0 {
		return "same"
	}
	return "changed"
}

// decodeObject decodes a kept version. Unless all, it leaves out what the
// diff ignores by default: resourceVersion, managedFields and timestamps,
// which change on every write and hide what the write changed.
func decodeObject(raw json.RawMessage, all bool) map[string]any {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return map[string]any{}
	}
	meta, _ := obj["metadata"].(map[string]any)
	if all {
		if mf, ok := meta["managedFields"].([]any); ok {
			meta["managedFields"] = managedFieldsLines(mf)
		}
		return obj
	}
	if meta != nil {
		delete(meta, "resourceVersion")
		delete(meta, "managedFields")
	}
	return withoutTimestamps(obj).(map[string]any)
}

// managedFieldsLines says who wrote each managedFields entry (already
// summarised by the recorder) as its name, "oplab Update status", beside
// its time: the diff then pairs the entries by writer, not by position, and
// reads "metadata.managedFields[oplab Update status].time 07:01 → 07:02".
func managedFieldsLines(mf []any) []any {
	out := make([]any, 0, len(mf))
	for _, e := range mf {
		m, _ := e.(map[string]any)
		var words []string
		for _, k := range []string{"manager", "operation", "subresource"} {
			if s, ok := m[k].(string); ok && s != "" {
				words = append(words, s)
			}
		}
		line := map[string]any{"name": strings.Join(words, " ")}
		if t, ok := m["time"]; ok {
			line["time"] = t
		}
		out = append(out, line)
	}
	return out
}

// isTimestamp: creationTimestamp, lastTransitionTime and the like. A
// deletionTimestamp is kept: it says the object is being deleted.
func isTimestamp(key string) bool {
	return key != "deletionTimestamp" && (strings.HasSuffix(key, "Timestamp") || strings.HasSuffix(key, "Time"))
}

func withoutTimestamps(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if isTimestamp(k) {
				delete(t, k)
				continue
			}
			t[k] = withoutTimestamps(e)
		}
	case []any:
		for i, e := range t {
			t[i] = withoutTimestamps(e)
		}
	}
	return v
}

// diffObjects lists the leaf fields that differ between a and b, by path.
func diffObjects(a, b map[string]any) []Change {
	fa, fb := map[string]string{}, map[string]string{}
	flatten("", a, fa)
	flatten("", b, fb)
	// The paths that have fields inside them, each found once: asking each
	// empty {} of one version whether the other has fields under it, by a
	// scan, would cost the square of an object's size (an uploaded
	// history's object may have tens of thousands of fields).
	ua, ub := parents(fa), parents(fb)
	var out []Change
	for path, va := range fa {
		vb, ok := fb[path]
		switch {
		case !ok && isEmpty(va) && ub[path]:
			// status: {} filled in: its fields are the change, not "{}" gone.
		case !ok:
			out = append(out, Change{Field: path, From: va, ToAbsent: true})
		case va != vb:
			out = append(out, Change{Field: path, From: va, To: vb})
		}
	}
	for path, vb := range fb {
		if _, ok := fa[path]; !ok && !(isEmpty(vb) && ua[path]) {
			out = append(out, Change{Field: path, To: vb, FromAbsent: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return fieldOrder(out[i].Field) < fieldOrder(out[j].Field) })
	return out
}

func isEmpty(v string) bool { return v == "{}" || v == "[]" }

// parents is every path that has a field of flat inside it: the part of
// each field's path before each "." or "[".
func parents(flat map[string]string) map[string]bool {
	out := map[string]bool{}
	for p := range flat {
		for i := 1; i < len(p); i++ {
			if p[i] == '.' || p[i] == '[' {
				out[p[:i]] = true
			}
		}
	}
	return out
}

// fieldOrder puts spec before status before metadata, the order a learner
// reads a change in; then by path.
func fieldOrder(path string) string {
	for i, top := range []string{"spec", "status", "metadata"} {
		if path == top || strings.HasPrefix(path, top+".") || strings.HasPrefix(path, top+"[") {
			return strconv.Itoa(i) + path
		}
	}
	return "3" + path
}

// flatten writes each leaf of v under its path: "spec.replicas",
// "status.conditions[Ready].status". A list whose items all have a
// distinct type or name is keyed by it, so that an item moving does not
// read as every item changing.
func flatten(path string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 && path != "" {
			out[path] = "{}"
		}
		for k, e := range t {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		if len(t) == 0 {
			out[path] = "[]"
		}
		keys, by := listKeys(t)
		for i, e := range t {
			if keys == nil {
				flatten(path+"["+strconv.Itoa(i)+"]", e, out)
				continue
			}
			// The key is in the path already: conditions[Ready].status,
			// not also conditions[Ready].type Ready. An item that is its
			// key alone keeps it, or it would not show at all.
			item := e.(map[string]any)
			if len(item) > 1 {
				item = maps.Clone(item)
				delete(item, by)
			}
			flatten(path+"["+keys[i]+"]", item, out)
		}
	case string:
		out[path] = t
	case nil:
		out[path] = "null"
	default:
		out[path] = fmt.Sprint(t)
	}
}

// listKeys returns the items' type or name when every item has a
// distinct one, and which of the two; nil otherwise.
func listKeys(items []any) ([]string, string) {
	for _, field := range []string{"type", "name"} {
		keys := make([]string, 0, len(items))
		seen := make(map[string]bool, len(items))
		for _, e := range items {
			m, ok := e.(map[string]any)
			if !ok {
				break
			}
			k, ok := m[field].(string)
			if !ok || k == "" || seen[k] {
				break
			}
			seen[k] = true
			keys = append(keys, k)
		}
		if len(keys) == len(items) {
			return keys, field
		}
	}
	return nil, ""
}
