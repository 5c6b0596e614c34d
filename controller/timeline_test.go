package controller

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// The timeline's teaching fields, taken on the real control plane: which
// watch woke each reconcile and what it saw, the resourceVersion each fetch
// read, and the status fields each write changed, old and new.
func TestTimelineNamesWakerResourceVersionAndFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("teach", 1, ""))
	e.expectReady("teach")
	e.expectSettled("teach")
	steps := e.sink.forDatabase("teach")

	// The first reconcile was woken by the Database's own create, through
	// the For watch; a later one by the StatefulSet, through Owns.
	starts := filterSteps(steps, func(s Step) bool { return s.Type == StepReconcileStart })
	if len(starts) == 0 {
		t.Fatalf("no reconcile:\n%s", describe(steps))
	}
	first := starts[0]
	if first.Trigger != TriggerEvent || first.Watch != WatchFor || first.Event != "create" ||
		first.WokenBy == nil || *first.WokenBy != (ObjectRef{Kind: "Database", Namespace: e.ns, Name: "teach"}) {
		t.Errorf("first reconcile.start = trigger %q watch %q event %q wokenBy %+v; want the Database's create through For",
			first.Trigger, first.Watch, first.Event, first.WokenBy)
	}
	if !slices.ContainsFunc(starts, func(s Step) bool {
		return s.Watch == WatchOwns && s.WokenBy != nil && s.WokenBy.Kind == "StatefulSet" && s.WokenBy.Name == "teach"
	}) {
		t.Errorf("no reconcile woken by StatefulSet teach through Owns:\n%s", describe(starts))
	}
	// Every event-woken start names the first event the handlers saw for
	// it: the same object and kind as an event step before it.
	for _, s := range starts {
		if s.Trigger != TriggerEvent {
			if s.WokenBy != nil || s.Watch != "" {
				t.Errorf("a %s reconcile names a waker: %+v via %q", s.Trigger, s.WokenBy, s.Watch)
			}
			continue
		}
		if s.WokenBy == nil {
			t.Errorf("reconcile %s was woken by an event and names none", s.ReconcileID)
			continue
		}
		seen := slices.ContainsFunc(steps, func(ev Step) bool {
			return ev.Type == StepEvent && ev.Object == *s.WokenBy && ev.Event == s.Event && ev.Watch == s.Watch
		})
		if !seen {
			t.Errorf("reconcile %s woken by %s %+v via %s: no such event step", s.ReconcileID, s.Event, s.WokenBy, s.Watch)
		}
	}

	// Every watch event names its object's resourceVersion, and each one
	// that is the controller's own write coming back says which write:
	// the create of the StatefulSet, the finalizer patch, the status
	// patches. The Database's own create, the learner's, is no echo.
	events := filterSteps(steps, func(s Step) bool { return s.Type == StepEvent })
	for _, ev := range events {
		if ev.ResourceVersion == "" {
			t.Errorf("event %s %s/%s names no resourceVersion", ev.Event, ev.Object.Kind, ev.Object.Name)
		}
	}
	echoes := map[string]bool{}
	for _, ev := range events {
		if ev.OwnWrite != "" {
			echoes[ev.Object.Kind+" "+ev.OwnWrite] = true
		}
		if ev.Object.Kind == "Database" && ev.Event == "create" && ev.OwnWrite != "" {
			t.Errorf("the learner's create of the Database is called the controller's own %q", ev.OwnWrite)
		}
	}
	for _, want := range []string{"StatefulSet create", "Database finalizer patch", "Database status patch"} {
		if !echoes[want] {
			t.Errorf("no event says it is the controller's own %s coming back; echoes seen: %v\n%s", want, echoes, describe(events))
		}
	}
	if !slices.ContainsFunc(starts, func(s Step) bool { return s.OwnWrite == "status patch" && s.Watch == WatchFor }) {
		t.Errorf("no reconcile.start says the controller's own status patch woke it:\n%s", describe(starts))
	}

	// Status writes name their fields: Ready went False→True and
	// readyReplicas 0→1, and what the last write set is what the API
	// server holds.
	writes := filterSteps(steps, func(s Step) bool { return s.Type == StepStatus && !s.Skipped })
	var all []FieldChange
	for _, w := range writes {
		if len(w.Fields) == 0 {
			t.Errorf("status write %s names no field: %s", w.ReconcileID, w.Message)
		}
		all = append(all, w.Fields...)
	}
	for _, want := range []FieldChange{
		{Field: "conditions[Ready]", From: "False", To: "True"},
		{Field: "readyReplicas", From: "0", To: "1"},
		{Field: "observedGeneration", From: "0", To: "1"},
	} {
		if !slices.Contains(all, want) {
			t.Errorf("no status write changed %s %s→%s; fields written: %+v", want.Field, want.From, want.To, all)
		}
	}
	if len(writes) > 0 {
		last := writes[len(writes)-1]
		if !strings.Contains(last.Message, "conditions[Ready] False→True") {
			t.Errorf("last status write says %q; want it to name conditions[Ready] False→True", last.Message)
		}
	}

	// A resync reads the Database as the API server has it now: its fetch
	// names that resourceVersion, and its status step says nothing changed.
	version := e.getDB("teach").ResourceVersion
	mark := e.sink.len()
	polltest.Until(e.t, deadline, "a resync reconcile finished", func() (bool, error) {
		return slices.ContainsFunc(e.sink.since(mark, "teach"), func(s Step) bool { return s.Type == StepResult }), nil
	})
	resync := e.sink.since(mark, "teach")
	if resync[0].Type != StepReconcileStart || resync[0].Trigger != TriggerResync {
		t.Fatalf("the reconcile after settling is not a resync:\n%s", describe(resync))
	}
	id := resync[0].ReconcileID
	fetch := filterSteps(resync, func(s Step) bool { return s.Type == StepFetch && s.ReconcileID == id })
	if len(fetch) != 1 || fetch[0].ResourceVersion != version || !strings.Contains(fetch[0].Message, "resourceVersion "+version) {
		t.Errorf("resync fetch = %+v; want resourceVersion %s, the API server's", fetch, version)
	}
	status := filterSteps(resync, func(s Step) bool { return s.Type == StepStatus && s.ReconcileID == id })
	if len(status) != 1 || !status[0].Skipped || len(status[0].Fields) != 0 {
		t.Errorf("resync status step = %+v; want one, skipped, naming no field", status)
	}
}

// conflictingReconciler is learner code that reads its Database, and on its
// first run lets another writer change it before writing status with an
// Update, which carries the resourceVersion it read: the API server's
// optimistic locking refuses it with 409 Conflict. Later runs write status
// from what they read.
type conflictingReconciler struct {
	other client.Client
	runs  atomic.Int32
	// read is the resourceVersion the conflicting run read.
	read atomic.Value
}

func (r *conflictingReconciler) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	var db dbv1.Database
	if err := c.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if db.Status.ObservedGeneration == db.Generation {
		return ctrl.Result{}, nil
	}
	if r.runs.Add(1) == 1 {
		r.read.Store(db.ResourceVersion)
		// The second writer: an annotation, through another client.
		var theirs dbv1.Database
		if err := r.other.Get(ctx, req.NamespacedName, &theirs); err != nil {
			return ctrl.Result{}, err
		}
		theirs.Annotations = map[string]string{"touched-by": "another writer"}
		if err := r.other.Update(ctx, &theirs); err != nil {
			return ctrl.Result{}, err
		}
	}
	db.Status.ObservedGeneration = db.Generation
	if err := c.Status().Update(ctx, &db); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// A 409 Conflict from the real API server is a step of its own: marked,
// explained, naming the resourceVersion the write was based on; the
// reconcile ends in an error, and a later one reads a newer version and
// writes.
func TestConflictIsAnExplainedStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	learner := &conflictingReconciler{other: e.c}
	r.HandOver(e.ns, learner)
	e.mustCreate(newDB("clash", 1, ""))
	polltest.Until(e.t, deadline, "a status write after the conflict", func() (bool, error) {
		steps := e.sink.forDatabase("clash")
		i := slices.IndexFunc(steps, func(s Step) bool { return s.Conflict })
		return i >= 0 && slices.ContainsFunc(steps[i+1:], func(s Step) bool { return s.Type == StepStatus && s.Error == "" && !s.Skipped }), nil
	})
	steps := e.sink.forDatabase("clash")
	i := slices.IndexFunc(steps, func(s Step) bool { return s.Conflict })
	c := steps[i]
	read, _ := learner.read.Load().(string)
	if c.Type != StepStatus || c.ResourceVersion == "" || c.ResourceVersion != read {
		t.Errorf("conflict step = %s at resourceVersion %q; want the status write, based on %q", c.Type, c.ResourceVersion, read)
	}
	for _, words := range []string{"409 Conflict", "changed since this reconcile read it", "optimistic locking", "reads the object again"} {
		if !strings.Contains(c.Message, words) {
			t.Errorf("conflict message %q does not say %q", c.Message, words)
		}
	}
	if !strings.Contains(strings.ToLower(c.Error), "conflict") && !strings.Contains(c.Error, "modified") {
		t.Errorf("conflict step error = %q; want the API server's words", c.Error)
	}
	// The reconcile it belongs to ended in an error, and a later fetch read
	// a newer resourceVersion than the one refused.
	end := slices.IndexFunc(steps[i:], func(s Step) bool { return s.Type == StepResult && s.ReconcileID == c.ReconcileID })
	if end < 0 || steps[i+end].Result != "error" {
		t.Errorf("the conflicted reconcile did not end in an error:\n%s", describe(steps))
	}
	if !slices.ContainsFunc(steps[i:], func(s Step) bool {
		return s.Type == StepFetch && s.ReconcileID != c.ReconcileID && s.ResourceVersion != "" && s.ResourceVersion != c.ResourceVersion
	}) {
		t.Errorf("no later fetch read a newer resourceVersion than %s:\n%s", c.ResourceVersion, describe(steps))
	}
	if got := e.getDB("clash"); got.Status.ObservedGeneration != got.Generation || got.Annotations["touched-by"] == "" {
		t.Errorf("in the end: observedGeneration %d of %d, annotations %v; want both writers' changes kept",
			got.Status.ObservedGeneration, got.Generation, got.Annotations)
	}
}

func filterSteps(steps []Step, f func(Step) bool) []Step {
	var out []Step
	for _, s := range steps {
		if f(s) {
			out = append(out, s)
		}
	}
	return out
}

// statusFields is pure: each kind of change, and none for equal statuses.
func TestStatusFields(t *testing.T) {
	t0, t1 := metav1.Unix(1000, 0), metav1.Unix(2000, 0)
	prev := dbv1.DatabaseStatus{ObservedGeneration: 1, ReadyReplicas: 1, Conditions: []metav1.Condition{
		{Type: "Ready", Status: "False", Reason: "WaitingForReplicas", Message: "1/2", ObservedGeneration: 1, LastTransitionTime: t0},
		{Type: "Gone", Status: "True", Reason: "X"},
	}}
	next := dbv1.DatabaseStatus{ObservedGeneration: 1, ReadyReplicas: 2, Endpoint: "a:5432", Conditions: []metav1.Condition{
		{Type: "Ready", Status: "True", Reason: "Available", Message: "1/2", ObservedGeneration: 1, LastTransitionTime: t1},
		{Type: "Degraded", Status: "False", Reason: "NoErrors"},
	}}
	got := statusFields(prev, next)
	want := []FieldChange{
		{Field: "readyReplicas", From: "1", To: "2"},
		{Field: "endpoint", To: "a:5432"},
		{Field: "conditions[Ready]", From: "False", To: "True"},
		{Field: "conditions[Ready].reason", From: "WaitingForReplicas", To: "Available"},
		{Field: "conditions[Ready].lastTransitionTime", From: "1970-01-01T00:16:40Z", To: "1970-01-01T00:33:20Z"},
		{Field: "conditions[Degraded]", To: "False"},
		{Field: "conditions[Gone]", From: "True"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("statusFields =\n%+v\nwant\n%+v", got, want)
	}
	if got := statusFields(next, *next.DeepCopy()); len(got) != 0 {
		t.Errorf("equal statuses: %+v, want none", got)
	}
	if msg := statusMessage(want[:2]); msg != "status written: readyReplicas 1→2, endpoint ∅→a:5432" {
		t.Errorf("statusMessage = %q", msg)
	}
}
