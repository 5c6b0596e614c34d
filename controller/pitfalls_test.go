package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

func TestPitfallOf(t *testing.T) {
	tests := []struct {
		annotation string
		want       string
		wantErr    string
	}{
		{"", "", ""},
		{PitfallNonIdempotentCreate, PitfallNonIdempotentCreate, ""},
		{PitfallStatusThrash, PitfallStatusThrash, ""},
		{PitfallNoFinalizer, PitfallNoFinalizer, ""},
		{PitfallDropEvents, PitfallDropEvents, ""},
		{"drop-everything", "", `unknown pitfall "drop-everything"`},
	}
	for _, tt := range tests {
		t.Run(tt.annotation, func(t *testing.T) {
			db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{PitfallAnnotation: tt.annotation}}}
			if got := PitfallOf(db); got != tt.want {
				t.Errorf("PitfallOf = %q, want %q", got, tt.want)
			}
			err := ValidatePitfall(tt.annotation)
			if tt.wantErr == "" && err != nil {
				t.Errorf("ValidatePitfall: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("ValidatePitfall error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestPitfallsAreDocumented(t *testing.T) {
	if len(Pitfalls) != 4 {
		t.Fatalf("len(Pitfalls) = %d, want 4", len(Pitfalls))
	}
	for _, p := range Pitfalls {
		if p.Name == "" || p.Title == "" || len(p.Description) < 80 {
			t.Errorf("pitfall %+v lacks a name, title or a description of what breaks", p)
		}
	}
}

func TestThrashLimiter(t *testing.T) {
	l := newThrashLimiter()
	key := types.NamespacedName{Namespace: "a", Name: "b"}
	steps := []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 0},
		{300 * time.Millisecond, 700 * time.Millisecond},
		{time.Second, 0},
		{1500 * time.Millisecond, 500 * time.Millisecond},
		{2100 * time.Millisecond, 0},
	}
	for _, s := range steps {
		if got := l.wait(key, t0.Add(s.at)); got != s.want {
			t.Errorf("wait at +%s = %s, want %s", s.at, got, s.want)
		}
	}
	l.forget(key)
	if got := l.wait(key, t0); got != 0 {
		t.Errorf("after forget, wait = %s, want 0", got)
	}
}

func TestTriggerBook(t *testing.T) {
	b := newTriggerBook()
	key := types.NamespacedName{Namespace: "a", Name: "b"}
	check := func(wantTrigger string, wantEvents int, wantFirst string) {
		t.Helper()
		trigger, n, first := b.reconcileStarted(key)
		if trigger != wantTrigger || n != wantEvents || first.words() != wantFirst {
			t.Errorf("reconcileStarted = %s/%d/%q, want %s/%d/%q", trigger, n, first.words(), wantTrigger, wantEvents, wantFirst)
		}
	}
	ev := func(verb, kind, watch string) wake {
		return wake{event: verb, watch: watch, object: ObjectRef{Kind: kind, Namespace: "a", Name: "b"}}
	}
	b.eventArrived(key, ev("update", "StatefulSet", WatchOwns))
	b.eventArrived(key, ev("update", "Database", WatchFor))
	b.eventArrived(key, ev("create", "Service", WatchOwns))
	check(TriggerEvent, 3, "update StatefulSet b")
	b.reconcileEnded(key, TriggerRequeue)
	check(TriggerRequeue, 0, "")
	b.reconcileEnded(key, TriggerResync)
	check(TriggerResync, 0, "")
	b.eventArrived(key, ev("delete", "Service", WatchOwns))
	check(TriggerEvent, 1, "delete Service b")
	// That reconcile finds the Database gone; its own delete event arrives
	// before the reconcile ends and forgets it. The delete queued the next
	// reconcile, which says the delete woke it, not a resync.
	b.eventArrived(key, ev("delete", "Database", WatchFor))
	b.reconcileEnded(key, TriggerResync)
	b.statusWritten(key)
	b.forget(key)
	check(TriggerEvent, 1, "delete Database b")
	b.forget(key)
	if len(b.pending) != 0 || len(b.lastEnd) != 0 || len(b.first) != 0 || len(b.statusWrites) != 0 {
		t.Errorf("forget left %v %v %v %v", b.pending, b.lastEnd, b.first, b.statusWrites)
	}
}

func TestExpectedBackoff(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{0, 5 * time.Millisecond},
		{1, 10 * time.Millisecond},
		{4, 80 * time.Millisecond},
		{40, backoffMax},
	}
	for _, tt := range tests {
		if got := expectedBackoff(tt.failures); got != tt.want {
			t.Errorf("expectedBackoff(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

func TestTriggerMessage(t *testing.T) {
	tests := []struct {
		trigger          string
		events, failures int
		want             string
	}{
		{TriggerEvent, 3, 0, "3 watch events coalesced into one reconcile"},
		{TriggerEvent, 1, 0, "1 watch event"},
		{TriggerRequeue, 0, 4, "retry 4 after backoff"},
		{TriggerResync, 0, 0, "periodic resync"},
	}
	for _, tt := range tests {
		if got := triggerMessage(tt.trigger, tt.events, tt.failures); got != tt.want {
			t.Errorf("triggerMessage(%s,%d,%d) = %q, want %q", tt.trigger, tt.events, tt.failures, got, tt.want)
		}
	}
}

func TestOwnerKey(t *testing.T) {
	ctrlTrue := true
	owned := func(apiVersion, kind string, controller bool) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: "ns", Name: "child", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: apiVersion, Kind: kind, Name: "orders", Controller: map[bool]*bool{true: &ctrlTrue, false: nil}[controller],
		}}}
	}
	tests := []struct {
		name string
		meta *metav1.ObjectMeta
		ok   bool
	}{
		{"controlled by a Database", owned("db.oplab.dev/v1alpha1", "Database", true), true},
		{"owner but not controller", owned("db.oplab.dev/v1alpha1", "Database", false), false},
		{"a Database of another group", owned("other.dev/v1", "Database", true), false},
		{"no owner", &metav1.ObjectMeta{Namespace: "ns", Name: "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &dbv1.Database{ObjectMeta: *tt.meta}
			key, ok := ownerKey(obj)
			if ok != tt.ok || (ok && key != (types.NamespacedName{Namespace: "ns", Name: "orders"})) {
				t.Errorf("ownerKey = %v, %v; want ok=%v", key, ok, tt.ok)
			}
		})
	}
}

func TestPitfallNonIdempotentCreateLoopsWithGrowingBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("naive", 1, PitfallNonIdempotentCreate))

	var errs []Step
	polltest.Until(e.t, deadline, "four failed reconciles", func() (bool, error) {
		errs = nil
		for _, s := range e.sink.forDatabase("naive") {
			if s.Type == StepResult && s.Result == "error" {
				errs = append(errs, s)
			}
		}
		return len(errs) >= 4, nil
	})
	for i := 1; i < len(errs); i++ {
		if errs[i].RequeueAfter <= errs[i-1].RequeueAfter {
			t.Errorf("backoff did not grow: %s then %s", errs[i-1].RequeueAfter, errs[i].RequeueAfter)
		}
		if errs[i].Retry != errs[i-1].Retry+1 {
			t.Errorf("retry numbers %d then %d, want them counting up", errs[i-1].Retry, errs[i].Retry)
		}
		if !strings.Contains(errs[i].Error, "already exists") {
			t.Errorf("error %q: want AlreadyExists", errs[i].Error)
		}
	}
	polltest.Until(e.t, deadline, "Degraded=True naming AlreadyExists", func() (bool, error) {
		c := meta.FindStatusCondition(e.getDB("naive").Status.Conditions, ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "already exists"), nil
	})
	// The same spec without the pitfall converges: the bug, not the
	// cluster, made the loop.
	db := e.getDB("naive")
	patch := client.MergeFrom(db.DeepCopy())
	delete(db.Annotations, PitfallAnnotation)
	if err := e.c.Patch(e.ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	polltest.Until(e.t, deadline, "Ready and not Degraded after the pitfall is off", func() (bool, error) {
		db := e.getDB("naive")
		c := meta.FindStatusCondition(db.Status.Conditions, ConditionDegraded)
		return isReady(db) && c != nil && c.Status == metav1.ConditionFalse, nil
	})
}

func TestPitfallStatusThrashStormsButIsBounded(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("thrash", 1, PitfallStatusThrash))
	e.expectReady("thrash")
	mark := e.markAfterReadyStep("thrash")
	var writes []Step
	polltest.Until(e.t, deadline, "five more status writes", func() (bool, error) {
		writes = nil
		for _, s := range e.sink.since(mark, "thrash") {
			if s.Type == StepStatus && !s.Skipped && s.Error == "" {
				writes = append(writes, s)
			}
		}
		return len(writes) >= 5, nil
	})
	// Self-triggered: the reconciles between writes were woken by events
	// (our own status writes), not by the resync.
	starts := countSteps(e.sink.since(mark, "thrash"), func(s Step) bool {
		return s.Type == StepReconcileStart && s.Trigger == TriggerEvent
	})
	if starts < 4 {
		t.Errorf("%d event-triggered reconciles during the storm, want it self-triggered", starts)
	}
	// Bounded: at most one write per ThrashInterval, give or take one.
	span := writes[len(writes)-1].Time.Sub(writes[0].Time)
	if limit := int(span/ThrashInterval) + 2; len(writes) > limit {
		t.Errorf("%d writes in %s: more than one per %s", len(writes), span, ThrashInterval)
	}
}

func TestPitfallNoFinalizerLosesTheSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("careless", 1, PitfallNoFinalizer))
	db := e.expectReady("careless")
	if len(db.Finalizers) != 0 {
		t.Fatalf("finalizers = %v, want none with %s", db.Finalizers, PitfallNoFinalizer)
	}
	if err := e.c.Delete(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	e.expectGone(&dbv1.Database{}, "careless")
	e.expectChildrenCollected("careless")
	var cm corev1.ConfigMap
	if err := e.c.Get(e.ctx, e.key(SnapshotName("careless")), &cm); !apierrors.IsNotFound(err) {
		t.Errorf("snapshot: err %v, want NotFound: the data should be gone", err)
	}
}

func TestPitfallDropEventsOnlyResyncConverges(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("deaf", 1, PitfallDropEvents))
	e.expectReady("deaf")

	e.deleteServiceAndWaitForIt("deaf")

	steps := e.sink.forDatabase("deaf")
	for _, s := range steps {
		if s.Type == StepEvent && !s.Ignored {
			t.Errorf("event %s %s/%s was not ignored", s.Event, s.Object.Kind, s.Object.Name)
		}
		if s.Type == StepReconcileStart && s.Trigger == TriggerEvent {
			t.Errorf("a reconcile was triggered by an event: %s", s.Message)
		}
	}
	if !slices.ContainsFunc(steps, func(s Step) bool {
		return s.Type == StepEvent && s.Ignored && s.Object.Kind == "Service" && s.Event == "delete"
	}) {
		t.Errorf("no ignored delete event for the Service:\n%s", describe(steps))
	}
}
