package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

var (
	t0 = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(90 * time.Second)
)

func sts(gen, observed int64, want, ready int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Generation: gen},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(want)},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: observed, Replicas: want, ReadyReplicas: ready, UpdatedReplicas: want,
		},
	}
}

func testDB(gen int64, replicas int32, conds ...metav1.Condition) *dbv1.Database {
	return &dbv1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "learner", Generation: gen},
		Spec:       dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: replicas},
		Status:     dbv1.DatabaseStatus{ObservedGeneration: gen - 1, Conditions: conds},
	}
}

func cond(typ string, s metav1.ConditionStatus, reason string, at time.Time, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(at), ObservedGeneration: gen}
}

func TestComputeStatus(t *testing.T) {
	type want struct {
		ready, progressing, degraded metav1.ConditionStatus
		readyReason                  string
		readyTransition              time.Time
		endpoint                     string
	}
	tests := []struct {
		name string
		db   *dbv1.Database
		obs  observation
		want want
	}{
		{
			name: "new database waiting for replicas",
			db:   testDB(1, 1),
			obs:  observation{sts: sts(1, 0, 1, 0)},
			want: want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, ReasonWaitingForReplicas, t1, ""},
		},
		{
			name: "all replicas ready publishes the endpoint",
			db:   testDB(1, 1, cond(ConditionReady, metav1.ConditionFalse, ReasonWaitingForReplicas, t0, 1)),
			obs:  observation{sts: sts(1, 1, 1, 1)},
			want: want{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, ReasonAvailable, t1, "orders.learner.svc:5432"},
		},
		{
			name: "still ready keeps lastTransitionTime",
			db:   testDB(2, 1, cond(ConditionReady, metav1.ConditionTrue, ReasonAvailable, t0, 1)),
			obs:  observation{sts: sts(1, 1, 1, 1)},
			want: want{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, ReasonAvailable, t0, "orders.learner.svc:5432"},
		},
		{
			name: "statefulset not caught up with its spec is not ready",
			db:   testDB(2, 3, cond(ConditionReady, metav1.ConditionTrue, ReasonAvailable, t0, 1)),
			obs:  observation{sts: sts(2, 1, 3, 1)},
			want: want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, ReasonWaitingForReplicas, t1, ""},
		},
		{
			name: "error before the statefulset was seen",
			db:   testDB(1, 1),
			obs:  observation{err: errors.New("boom")},
			want: want{metav1.ConditionUnknown, "", metav1.ConditionTrue, ReasonNotObservedYet, t1, ""},
		},
		{
			name: "error keeps an earlier Ready as it was",
			db:   testDB(1, 1, cond(ConditionReady, metav1.ConditionTrue, ReasonAvailable, t0, 1)),
			obs:  observation{err: errors.New("boom")},
			want: want{metav1.ConditionTrue, "", metav1.ConditionTrue, ReasonAvailable, t0, ""},
		},
		{
			name: "deleting",
			db:   testDB(1, 1, cond(ConditionReady, metav1.ConditionTrue, ReasonAvailable, t0, 1)),
			obs:  observation{deleting: ReasonDrainingConnections, message: "waiting"},
			want: want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, ReasonDeleting, t1, ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := computeStatus(tt.db, tt.obs, t1)
			if st.ObservedGeneration != tt.db.Generation {
				t.Errorf("observedGeneration = %d, want %d", st.ObservedGeneration, tt.db.Generation)
			}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != tt.db.Generation && c.Type != ConditionReady {
					t.Errorf("condition %s observedGeneration = %d, want %d", c.Type, c.ObservedGeneration, tt.db.Generation)
				}
			}
			got := want{
				ready:       statusOf(st.Conditions, ConditionReady),
				progressing: statusOf(st.Conditions, ConditionProgressing),
				degraded:    statusOf(st.Conditions, ConditionDegraded),
				endpoint:    st.Endpoint,
			}
			if r := meta.FindStatusCondition(st.Conditions, ConditionReady); r != nil {
				got.readyReason = r.Reason
				got.readyTransition = r.LastTransitionTime.Time
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
}

func statusOf(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Status
	}
	return ""
}

func TestComputeStatusIsStableWhenNothingChanged(t *testing.T) {
	db := testDB(1, 1)
	first := computeStatus(db, observation{sts: sts(1, 1, 1, 1)}, t0)
	db.Status = first
	second := computeStatus(db, observation{sts: sts(1, 1, 1, 1)}, t1)
	if d := cmp.Diff(first, second); d != "" {
		t.Errorf("a second reconcile of a converged Database changed the status (-first +second):\n%s", d)
	}
}

func TestConditionChanges(t *testing.T) {
	prev := []metav1.Condition{
		cond(ConditionReady, metav1.ConditionFalse, ReasonWaitingForReplicas, t0, 1),
		cond(ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, t0, 1),
	}
	next := []metav1.Condition{
		cond(ConditionReady, metav1.ConditionTrue, ReasonAvailable, t1, 1),
		cond(ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, t0, 1),
		cond(ConditionProgressing, metav1.ConditionFalse, ReasonReconciled, t1, 1),
	}
	want := []ConditionChange{
		{Type: ConditionReady, From: "False", To: "True", Reason: ReasonAvailable, Transition: true,
			LastTransitionTime: "2026-09-01T10:01:30Z", FromLastTransitionTime: "2026-09-01T10:00:00Z"},
		{Type: ConditionProgressing, To: "False", Reason: ReasonReconciled, Transition: true, LastTransitionTime: "2026-09-01T10:01:30Z"},
	}
	if d := cmp.Diff(want, conditionChanges(prev, next)); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}

	// A rewrite that moves only the timestamp (the status-thrash pitfall)
	// is a change too: no transition, two different times.
	rewritten := []metav1.Condition{cond(ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, t1, 1)}
	want = []ConditionChange{{Type: ConditionDegraded, From: "False", To: "False", Reason: ReasonNoErrors,
		LastTransitionTime: "2026-09-01T10:01:30Z", FromLastTransitionTime: "2026-09-01T10:00:00Z"}}
	if d := cmp.Diff(want, conditionChanges(prev, rewritten)); d != "" {
		t.Errorf("timestamp-only changes (-want +got):\n%s", d)
	}
}

// TestThrashStampsEveryCondition checks what the status-thrash pitfall
// rests on: a status computed with the conditions hidden (thrashClient)
// gives every condition a fresh lastTransitionTime, and so differs from the
// stored one, where the same status computed from the stored conditions
// keeps their times.
func TestThrashStampsEveryCondition(t *testing.T) {
	db := testDB(1, 1)
	db.Status = computeStatus(db, observation{sts: sts(1, 1, 1, 1)}, t0)
	kept := computeStatus(db, observation{sts: sts(1, 1, 1, 1)}, t1)
	if !equality.Semantic.DeepEqual(db.Status, kept) {
		t.Errorf("recomputed status differs from the stored one:\n%s", cmp.Diff(db.Status, kept))
	}
	hidden := db.DeepCopy()
	hidden.Status.Conditions = nil
	st := computeStatus(hidden, observation{sts: sts(1, 1, 1, 1)}, t1)
	if len(st.Conditions) != 3 {
		t.Fatalf("%d conditions, want 3", len(st.Conditions))
	}
	for _, c := range st.Conditions {
		if !c.LastTransitionTime.Time.Equal(t1) {
			t.Errorf("condition %s lastTransitionTime = %s, want %s", c.Type, c.LastTransitionTime, t1)
		}
	}
}
