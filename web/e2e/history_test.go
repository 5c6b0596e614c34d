package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/lab"
)

// eventSeq is the seq of the first event step in ns's export about a kind
// and name whose generation is gen.
func (e *testEnv) eventSeq(ns, kind, name string, gen int64) uint64 {
	for _, raw := range e.recorder.Export(ns).Messages {
		var m trace.Message
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if m.Type == controller.StepEvent && m.Object.Kind == kind && m.Object.Name == name && m.Generation == gen {
			return m.Seq
		}
	}
	return 0
}

// resultAfter is whether a reconcile of ns finished (its result step) after
// seq.
func (e *testEnv) resultAfter(ns string, seq uint64) bool {
	for _, raw := range e.recorder.Export(ns).Messages {
		var m trace.Message
		if json.Unmarshal(raw, &m) == nil && m.Type == controller.StepResult && m.Seq > seq {
			return true
		}
	}
	return false
}

// travel GETs a history route and decodes its answer.
func travel(t *testing.T, c *http.Client, u string) (int, lab.Travel, string) {
	t.Helper()
	resp, body := get(t, c, u)
	var out lab.Travel
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("GET %s: %v: %s", u, err, body)
		}
	}
	return resp.StatusCode, out, body
}

func travelObject(tr lab.Travel, kind, name string) *lab.TravelObject {
	for i, o := range tr.Objects {
		if o.Kind == kind && o.Name == name {
			return &tr.Objects[i]
		}
	}
	return nil
}

func changeOf(o *lab.TravelObject, field string) *lab.Change {
	if o == nil {
		return nil
	}
	for i, c := range o.Changes {
		if c.Field == field {
			return &o.Changes[i]
		}
	}
	return nil
}

func specReplicas(t *testing.T, o *lab.TravelObject) any {
	t.Helper()
	if o == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(o.Object, &m); err != nil {
		t.Fatal(err)
	}
	spec, _ := m["spec"].(map[string]any)
	return spec["replicas"]
}

// The lab rebuilds a learner's objects at any step from what the
// controller's watches delivered, with each object's changes, and compares
// two steps; only the learner's own namespace; bad parameters are named.
func TestHistoryRebuildsTheObjectsAtAStep(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	if code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {"travel"}, "replicas": {"1"}}); code != 200 {
		t.Fatalf("create: %d %+v", code, res)
	}
	var one, two uint64
	polltest.Until(t, deadline, "the StatefulSet's first event on the trace", func() (bool, error) {
		one = e.eventSeq(ns, "StatefulSet", "travel", 1)
		return one > 0, nil
	})
	if code, res := postForm(t, c, e.http.URL, "/lab/databases/travel/edit", url.Values{
		"replicas": {"2"}, "version": {"16"}, "origReplicas": {"1"}, "origVersion": {"16"},
	}); code != 200 {
		t.Fatalf("scale: %d %+v", code, res)
	}
	polltest.Until(t, deadline, "the StatefulSet's event at generation 2", func() (bool, error) {
		two = e.eventSeq(ns, "StatefulSet", "travel", 2)
		return two > 0, nil
	})

	base := e.http.URL + "/lab/history"
	code, before, body := travel(t, c, base+"?at="+useq(one))
	if code != 200 {
		t.Fatalf("at %d: %d %s", one, code, body)
	}
	if got := specReplicas(t, travelObject(before, "StatefulSet", "travel")); got != 1.0 {
		t.Errorf("at step %d the StatefulSet has replicas %v, want 1: %s", one, got, body)
	}
	if got := specReplicas(t, travelObject(before, "Database", "travel")); got != 1.0 {
		t.Errorf("at step %d the Database has replicas %v, want 1: %s", one, got, body)
	}
	code, after, body := travel(t, c, base+"?at="+useq(two))
	if code != 200 {
		t.Fatalf("at %d: %d %s", two, code, body)
	}
	sts := travelObject(after, "StatefulSet", "travel")
	if got := specReplicas(t, sts); got != 2.0 {
		t.Errorf("at step %d the StatefulSet has replicas %v, want 2: %s", two, got, body)
	}
	// The event's own version, diffed with the one before it: the scale,
	// and nothing the diff ignores by default.
	if ch := changeOf(sts, "spec.replicas"); ch == nil || ch.From != "1" || ch.To != "2" {
		t.Errorf("the StatefulSet's changes at step %d = %+v, want spec.replicas 1 → 2", two, sts.Changes)
	}
	for _, ch := range sts.Changes {
		if strings.Contains(ch.Field, "resourceVersion") || strings.Contains(ch.Field, "managedFields") || strings.HasSuffix(ch.Field, "Timestamp") {
			t.Errorf("the default diff shows %s", ch.Field)
		}
	}
	// A Secret is there, without its data.
	if s := travelObject(after, "Secret", "travel-credentials"); s == nil {
		t.Errorf("no Secret at step %d: %s", two, body)
	} else if strings.Contains(string(s.Object), `"data"`) {
		t.Errorf("the Secret's data is in the history: %s", s.Object)
	}

	// all=1 shows resourceVersion and the managedFields, summarised.
	_, full, body := travel(t, c, base+"?all=1&at="+useq(two))
	fullSts := travelObject(full, "StatefulSet", "travel")
	if !full.All || fullSts == nil || changeOf(fullSts, "metadata.resourceVersion") == nil ||
		!strings.Contains(string(fullSts.Object), `"managedFields":[{"name":"`) || strings.Contains(string(fullSts.Object), "fieldsV1") {
		t.Errorf("all=1 at step %d: want resourceVersion's change and managedFields as lines: %s", two, body)
	}

	// Comparing the two steps: both objects' replicas.
	code, diff, body := travel(t, c, base+"/diff?from="+useq(one)+"&to="+useq(two))
	if code != 200 {
		t.Fatalf("diff: %d %s", code, body)
	}
	for _, kind := range []string{"Database", "StatefulSet"} {
		if ch := changeOf(travelObject(diff, kind, "travel"), "spec.replicas"); ch == nil || ch.From != "1" || ch.To != "2" {
			t.Errorf("diff %d..%d: %s spec.replicas = %+v, want 1 → 2: %s", one, two, kind, ch, body)
		}
	}

	// Bad parameters are named.
	for _, bad := range []struct{ query, want string }{
		{"", "at is missing"},
		{"?at=abc", "at=abc"},
		{"?at=0", "at=0"},
		{"?at=" + useq(two) + "&all=maybe", "all=maybe"},
		{"/diff?from=" + useq(one), "to is missing"},
		{"/diff?from=-1&to=" + useq(two), "from=-1"},
	} {
		code, _, body := travel(t, c, base+bad.query)
		if code != http.StatusBadRequest || !strings.Contains(body, bad.want) {
			t.Errorf("GET /lab/history%s = %d %s; want 400 naming %s", bad.query, code, body, bad.want)
		}
	}

	// Another learner sees none of it, and may not ask for this namespace.
	other, otherNS := e.learner(t)
	if code, theirs, body := travel(t, other, base+"?at="+useq(two)); code != 200 || travelObject(theirs, "StatefulSet", "travel") != nil {
		t.Errorf("learner %s at step %d: %d %s; want none of %s's objects", otherNS, two, code, body, ns)
	}
	if code, _, body := travel(t, other, base+"?namespace="+ns+"&at="+useq(two)); code != http.StatusForbidden || !strings.Contains(body, ns) {
		t.Errorf("learner %s asking for %s: %d %s; want 403", otherNS, ns, code, body)
	}
	if code, _, _ := travel(t, http.DefaultClient, base+"?at="+useq(two)); code != http.StatusForbidden {
		t.Errorf("without a session: %d, want 403", code)
	}
}

func useq(n uint64) string { return strconv.FormatUint(n, 10) }
