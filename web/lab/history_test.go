package lab

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decodeForTest(t *testing.T, s string, all bool) map[string]any {
	t.Helper()
	if !json.Valid([]byte(s)) {
		t.Fatalf("not JSON: %s", s)
	}
	return decodeObject(json.RawMessage(s), all)
}

// The default diff names what a write changed, by a path a learner reads,
// and leaves out what changes on every write; all=1 keeps it, with
// managedFields one line each.
func TestDiffObjects(t *testing.T) {
	before := `{"kind":"Database","metadata":{"resourceVersion":"10","creationTimestamp":"2026-12-02T07:00:00Z",
		"managedFields":[{"manager":"oplab","operation":"Update","time":"2026-12-02T07:00:00Z"}],"finalizers":["db.oplab.dev/snapshot"]},
		"spec":{"replicas":1},
		"status":{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-12-02T07:00:00Z"},{"type":"Progressing","status":"True"}]}}`
	after := `{"kind":"Database","metadata":{"resourceVersion":"11","creationTimestamp":"2026-12-02T07:00:00Z","deletionTimestamp":"2026-12-02T07:05:00Z",
		"managedFields":[{"manager":"oplab","operation":"Update","subresource":"status","time":"2026-12-02T07:01:00Z"}],"finalizers":["db.oplab.dev/snapshot"]},
		"spec":{"replicas":2},
		"status":{"conditions":[{"type":"Progressing","status":"True"},{"type":"Ready","status":"True","lastTransitionTime":"2026-12-02T07:01:00Z"}],"readyReplicas":2}}`
	got := diffObjects(decodeForTest(t, before, false), decodeForTest(t, after, false))
	want := []Change{
		{Field: "spec.replicas", From: "1", To: "2"},
		{Field: "status.conditions[Ready].status", From: "False", To: "True"},
		{Field: "status.readyReplicas", To: "2", FromAbsent: true},
		{Field: "metadata.deletionTimestamp", To: "2026-12-02T07:05:00Z", FromAbsent: true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("default diff (-want +got):\n%s", d)
	}

	all := diffObjects(decodeForTest(t, before, true), decodeForTest(t, after, true))
	fields := make([]string, 0, len(all))
	for _, c := range all {
		fields = append(fields, c.Field)
	}
	for _, f := range []string{"metadata.resourceVersion", "status.conditions[Ready].lastTransitionTime"} {
		if !slices.Contains(fields, f) {
			t.Errorf("all=1 diff lacks %s: %v", f, fields)
		}
	}
	for _, c := range all {
		if strings.HasSuffix(c.Field, "].name") || strings.HasSuffix(c.Field, "].type") {
			t.Errorf("a list item's key is repeated as a field: %+v", c)
		}
	}
	// The managedFields entries are paired by writer: oplab's Update went,
	// its status Update came.
	for _, want := range []Change{
		{Field: "metadata.managedFields[oplab Update].time", From: "2026-12-02T07:00:00Z", ToAbsent: true},
		{Field: "metadata.managedFields[oplab Update status].time", To: "2026-12-02T07:01:00Z", FromAbsent: true},
	} {
		if !slices.Contains(all, want) {
			t.Errorf("all=1 diff lacks %+v: %+v", want, all)
		}
	}
}

// An empty object or list filled in reads as its new fields, not as "{}"
// removed.
func TestDiffFillsInEmpty(t *testing.T) {
	a := decodeForTest(t, `{"status":{},"spec":{"ports":[]}}`, false)
	b := decodeForTest(t, `{"status":{"phase":"Ready"},"spec":{"ports":[{"port":1}]}}`, false)
	want := []Change{{Field: "spec.ports[0].port", To: "1", FromAbsent: true}, {Field: "status.phase", To: "Ready", FromAbsent: true}}
	if d := cmp.Diff(want, diffObjects(a, b)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Change{{Field: "status.phase", From: "Ready", ToAbsent: true}}, diffObjects(b, decodeForTest(t, `{"status":{},"spec":{"ports":[{"port":1}]}}`, false))); d != "" {
		t.Errorf("emptied (-want +got):\n%s", d)
	}
}

// wideObjects is an object of n empty fields and the same with each
// filled in: the shape an uploaded history can give a diff.
func wideObjects(n int) (map[string]any, map[string]any) {
	a, b := map[string]any{}, map[string]any{}
	for i := range n {
		k := "k" + strconv.Itoa(i)
		a[k], b[k] = map[string]any{}, map[string]any{"x": 1.0}
	}
	return map[string]any{"spec": a}, map[string]any{"spec": b}
}

// Thousands of empty fields filled in read as their new fields, each once,
// and no "{}" removed; a list of thousands of distinct names is keyed.
func TestDiffOfAWideObject(t *testing.T) {
	const n = 20000
	a, b := wideObjects(n)
	d := diffObjects(a, b)
	if len(d) != n {
		t.Fatalf("%d changes, want %d", len(d), n)
	}
	for _, c := range d {
		if !c.FromAbsent || c.To != "1" || !strings.HasSuffix(c.Field, ".x") {
			t.Fatalf("change %+v, want a field filled in", c)
		}
	}
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"name": "n" + strconv.Itoa(i), "v": 1.0}
	}
	if keys, by := listKeys(items); by != "name" || len(keys) != n {
		t.Errorf("a list of %d distinct names keyed by %q with %d keys", n, by, len(keys))
	}
}

// BenchmarkDiffWide is one diff of an object of 20,000 empty fields filled
// in; each field found under a parent by a scan would make it quadratic.
func BenchmarkDiffWide(b *testing.B) {
	x, y := wideObjects(20000)
	for b.Loop() {
		diffObjects(x, y)
	}
}

// A list is keyed by index when its items have no distinct type or name.
func TestDiffKeysListsByIndexOtherwise(t *testing.T) {
	a := decodeForTest(t, `{"spec":{"args":["a","b"],"ports":[{"port":1},{"port":2}]}}`, false)
	b := decodeForTest(t, `{"spec":{"args":["a","c"],"ports":[{"port":1},{"port":3}]}}`, false)
	want := []Change{{Field: "spec.args[1]", From: "b", To: "c"}, {Field: "spec.ports[1].port", From: "2", To: "3"}}
	if d := cmp.Diff(want, diffObjects(a, b)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestHistoryParams(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		err  string
	}{
		{"", 0, "at is missing: want the seq of a timeline step"},
		{"7", 7, ""},
		{"0", 0, "at=0 is not a step's seq: want a whole number from 1"},
		{"x", 0, "at=x is not a step's seq: want a whole number from 1"},
		{"18446744073709551615", 0, "at=18446744073709551615 is not a step's seq: want a whole number from 1"},
	} {
		got, err := seqParam(c.in, "at")
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("seqParam(%q) = %d, %v; want %d, %q", c.in, got, err, c.want, c.err)
		}
	}
}
