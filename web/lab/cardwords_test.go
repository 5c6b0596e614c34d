package lab

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// The card's header says Degraded when reconciles fail, even while Ready
// (the Pods) stays True; and a delete's stale generation says why it moved.
func TestCardSaysDegradedAndWhyADeleteIsStale(t *testing.T) {
	now := time.Now()
	looping := dbview.Database{Namespace: "lab-x", Name: "loop", Engine: "postgres", Replicas: 1, Generation: 1, ObservedGeneration: 1,
		Conditions: []dbview.Condition{{Type: "Ready", Status: "True", Reason: "Available"}, {Type: "Degraded", Status: "True", Reason: "ReconcileError"}}}
	deleting := dbview.Database{Namespace: "lab-x", Name: "gone", Engine: "postgres", Replicas: 1, Generation: 2, ObservedGeneration: 1, Stale: true,
		Terminating: true, DeletionTimestamp: &now, Conditions: []dbview.Condition{{Type: "Ready", Status: "True"}, {Type: "Degraded", Status: "False"}}}
	scaled := dbview.Database{Namespace: "lab-x", Name: "scaled", Engine: "postgres", Replicas: 2, Generation: 2, ObservedGeneration: 1, Stale: true}
	page := newHarness(t, looping, deleting, scaled).get("/lab").Body.String()
	card := func(name string) string { return cardIn(t, page, name) }
	head := func(name string) string { h, _, _ := strings.Cut(card(name), "</header>"); return h }
	if h := head("loop"); !strings.Contains(h, "Degraded: ReconcileError") || !strings.Contains(h, "Ready True") {
		t.Errorf("an error loop's header:\n%s\nwant Ready True and Degraded: ReconcileError beside it", h)
	}
	if h := head("gone"); strings.Contains(h, "Degraded") {
		t.Errorf("Degraded False shown in the header:\n%s", h)
	}
	if c := card("gone"); !strings.Contains(c, "the delete set deletionTimestamp") {
		t.Errorf("a deleting Database's stale generation is not explained:\n%s", c)
	}
	if c := card("scaled"); !strings.Contains(c, "stale: the status describes generation 1") || strings.Contains(c, "deletionTimestamp") {
		t.Errorf("a spec change's stale pill:\n%s", c)
	}
}

// The delete's message comes from the object's own finalizers: the
// no-finalizer pitfall's Database is not said to be held by one.
func TestDeleteMessageNamesTheFinalizersThere(t *testing.T) {
	held := dbview.Database{Namespace: "lab-x", Name: "held", Engine: "postgres", Replicas: 1, Finalizers: []string{"db.oplab.dev/final-snapshot"}}
	bare := dbview.Database{Namespace: "lab-x", Name: "bare", Engine: "postgres", Replicas: 1}
	h := newHarness(t, held, bare)
	for name, want := range map[string]string{
		"held": "Its finalizer db.oplab.dev/final-snapshot holds it",
		"bare": "It has no finalizer, so nothing holds it",
	} {
		w := h.post("/lab/databases/"+name+"/delete", nil, true)
		if w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("delete %s = %d %s, want %q", name, w.Code, w.Body, want)
		}
	}
}

// A Terminating Database's Delete button is disabled, and the card says why
// from the finalizers that hold it; a live one's is not.
func TestDeleteDisabledWhileTerminating(t *testing.T) {
	now := time.Now()
	terminating := func(name string, heldBy ...string) dbview.Database {
		return dbview.Database{Namespace: "lab-x", Name: name, Engine: "postgres", Replicas: 1, Finalizers: heldBy,
			Terminating: true, DeletionTimestamp: &now, HeldBy: heldBy}
	}
	live := dbview.Database{Namespace: "lab-x", Name: "live", Engine: "postgres", Replicas: 1, Finalizers: []string{"db.oplab.dev/final-snapshot"}}
	page := newHarness(t, live, terminating("ours", "db.oplab.dev/final-snapshot"), terminating("theirs", "example.com/backup"),
		terminating("both", "db.oplab.dev/final-snapshot", "example.com/backup")).get("/lab").Body.String()
	deletePart := func(name string) string {
		_, c, ok := strings.Cut(page, `action="/lab/databases/`+name+`/delete"`)
		if !ok {
			t.Fatalf("no Delete form on %s's card", name)
		}
		c, _, _ = strings.Cut(c, "</form>")
		return c
	}
	if p := deletePart("live"); strings.Contains(p, "disabled") || strings.Contains(p, "Already being deleted") {
		t.Errorf("a live Database's Delete is disabled:\n%s", p)
	}
	for name, want := range map[string]string{
		"ours":   "Already being deleted: its finalizer db.oplab.dev/final-snapshot holds it until the controller has written the final snapshot.",
		"theirs": "Already being deleted: the finalizer example.com/backup holds it until whoever added it removes it.",
		"both":   "Already being deleted: its finalizers db.oplab.dev/final-snapshot, example.com/backup hold it until each is removed.",
	} {
		p := deletePart(name)
		why := `id="db-` + name + `-delete-why"`
		if !strings.Contains(p, `disabled aria-describedby="db-`+name+`-delete-why"`) || !strings.Contains(p, why) || !strings.Contains(p, want) {
			t.Errorf("%s's Delete while Terminating:\n%s\nwant it disabled, described by %s: %q", name, p, why, want)
		}
	}
}

// A Database no reconcile has written (the drop-events pitfall's until a
// resync) says so: its stale pill names no "generation 0", and its empty
// Conditions table says why it is empty, apart from a written status that
// set none (learner code may).
func TestCardSaysWhenNoStatusWasWritten(t *testing.T) {
	deaf := dbview.Database{Namespace: "lab-x", Name: "deaf", Engine: "postgres", Replicas: 1, Generation: 1, Stale: true}
	bare := dbview.Database{Namespace: "lab-x", Name: "bare", Engine: "postgres", Replicas: 1, Generation: 1, ObservedGeneration: 1}
	page := newHarness(t, deaf, bare).get("/lab").Body.String()
	card := func(name string) string { return cardIn(t, page, name) }
	d := card("deaf")
	if !strings.Contains(d, "stale: no reconcile has written the status yet") || strings.Contains(d, "generation 0") {
		t.Errorf("a never-written Database's stale pill:\n%s", d)
	}
	if !strings.Contains(d, "None yet: no reconcile has written this Database's status.") {
		t.Errorf("a never-written Database's Conditions table says nothing of why it is empty:\n%s", d)
	}
	if b := card("bare"); !strings.Contains(b, "None: the last status write set no conditions.") || strings.Contains(b, "None yet") {
		t.Errorf("a written status with no conditions:\n%s", b)
	}
}

// cardIn is the HTML of name's card on page.
func cardIn(t *testing.T, page, name string) string {
	t.Helper()
	_, c, ok := strings.Cut(page, `id="db-`+name+`"`)
	if !ok {
		t.Fatalf("no card of %s", name)
	}
	c, _, _ = strings.Cut(c, "</article>")
	return c
}

// A condition's values seen read apart: a space between the time and the
// status, and each value's message, where two values of the same status
// and reason ("1/2 replicas ready", then "2/2") looked the same.
func TestConditionHistoryShowsEachValuesMessage(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	scaling := dbview.Database{Namespace: "lab-x", Name: "grow", Engine: "postgres", Replicas: 2, Generation: 2, ObservedGeneration: 2,
		Conditions: []dbview.Condition{{Type: "Ready", Status: "False", Reason: "Progressing", Message: "2/2 replicas ready",
			History: []dbview.Change{
				{Seen: t0, Status: "False", Reason: "Progressing", Message: "1/2 replicas ready", ObservedGeneration: 2},
				{Seen: t0.Add(time.Second), Status: "False", Reason: "Progressing", Message: "2/2 replicas ready", ObservedGeneration: 2},
			}}}}
	c := cardIn(t, newHarness(t, scaling).get("/lab").Body.String(), "grow")
	_, hist, ok := strings.Cut(c, "values seen")
	if !ok {
		t.Fatalf("no values seen in the card:\n%s", c)
	}
	for _, want := range []string{"1/2 replicas ready", "2/2 replicas ready"} {
		if !strings.Contains(hist, want) {
			t.Errorf("the values seen lack %q:\n%s", want, hist)
		}
	}
	if !regexp.MustCompile(`</time>\s+<b>False</b>`).MatchString(hist) {
		t.Errorf("no space between a value's time and its status:\n%s", hist)
	}
}
