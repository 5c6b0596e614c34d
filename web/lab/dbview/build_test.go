package dbview

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func cond(typ, status, reason string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, ObservedGeneration: gen}
}

func TestHistoryKeepsEveryDistinctValue(t *testing.T) {
	type event struct {
		uid   string
		conds []metav1.Condition
	}
	tests := []struct {
		name   string
		events []event
		want   []Change // of Ready
	}{
		{
			name: "repeats are one entry",
			events: []event{
				{"u1", []metav1.Condition{cond("Ready", "False", "Creating", 1)}},
				{"u1", []metav1.Condition{cond("Ready", "False", "Creating", 1)}},
			},
			want: []Change{{Seen: t0, Status: "False", Reason: "Creating", ObservedGeneration: 1}},
		},
		{
			name: "reason change is not a transition, status flip is",
			events: []event{
				{"u1", []metav1.Condition{cond("Ready", "False", "Creating", 1)}},
				{"u1", []metav1.Condition{cond("Ready", "False", "WaitingForPods", 1)}},
				{"u1", []metav1.Condition{cond("Ready", "True", "Ready", 1)}},
				{"u1", []metav1.Condition{cond("Ready", "True", "Ready", 2)}},
			},
			want: []Change{
				{Seen: t0, Status: "False", Reason: "Creating", ObservedGeneration: 1},
				{Seen: t0.Add(time.Second), Status: "False", Reason: "WaitingForPods", ObservedGeneration: 1},
				{Seen: t0.Add(2 * time.Second), Status: "True", Reason: "Ready", ObservedGeneration: 1, Transition: true},
				{Seen: t0.Add(3 * time.Second), Status: "True", Reason: "Ready", ObservedGeneration: 2},
			},
		},
		{
			name: "a rewrite that only moves lastTransitionTime is seen (status thrash)",
			events: []event{
				{"u1", []metav1.Condition{withLTT(cond("Ready", "True", "Ready", 1), t0)}},
				{"u1", []metav1.Condition{withLTT(cond("Ready", "True", "Ready", 1), t0.Add(time.Second))}},
				{"u1", []metav1.Condition{withLTT(cond("Ready", "True", "Ready", 1), t0.Add(time.Second))}},
			},
			want: []Change{
				{Seen: t0, Status: "True", Reason: "Ready", ObservedGeneration: 1, LastTransitionTime: t0},
				{Seen: t0.Add(time.Second), Status: "True", Reason: "Ready", ObservedGeneration: 1, LastTransitionTime: t0.Add(time.Second)},
			},
		},
		{
			name: "a new UID starts over",
			events: []event{
				{"u1", []metav1.Condition{cond("Ready", "True", "Ready", 1)}},
				{"u2", []metav1.Condition{cond("Ready", "False", "Creating", 1)}},
			},
			want: []Change{{Seen: t0.Add(time.Second), Status: "False", Reason: "Creating", ObservedGeneration: 1}},
		},
		{
			name:   "no conditions yet",
			events: []event{{"u1", nil}},
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history{}
			for i, e := range tt.events {
				h.observe(e.uid, e.conds, t0.Add(time.Duration(i)*time.Second))
			}
			if diff := cmp.Diff(tt.want, h.of("Ready")); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

func withLTT(c metav1.Condition, t time.Time) metav1.Condition {
	c.LastTransitionTime = metav1.NewTime(t)
	return c
}

func TestHistoryIsBounded(t *testing.T) {
	h := &history{}
	for i := range 3 * maxHistory {
		h.observe("u", []metav1.Condition{cond("Ready", "False", "Thrash", int64(i))}, t0)
	}
	if got := len(h.of("Ready")); got != maxHistory {
		t.Errorf("history length = %d, want the cap %d", got, maxHistory)
	}
	if got := h.of("Ready")[maxHistory-1].ObservedGeneration; got != 3*maxHistory-1 {
		t.Errorf("last entry generation = %d, want the newest", got)
	}
}

func owned(uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{UID: uid, Controller: ptr.To(true)}}
}

func TestBuild(t *testing.T) {
	base := func() *v1alpha1.Database {
		return &v1alpha1.Database{
			ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "lab-x", UID: "db-uid", Generation: 3},
			Spec:       v1alpha1.DatabaseSpec{Engine: "postgres", Version: "17", Replicas: 2, Storage: resource.MustParse("1Gi")},
			Status:     v1alpha1.DatabaseStatus{ObservedGeneration: 3},
		}
	}
	rel := Related{
		StatefulSets: []appsv1.StatefulSet{{
			ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "sts-uid", OwnerReferences: owned("db-uid")},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
			Status:     appsv1.StatefulSetStatus{ReadyReplicas: 1},
		}},
		Pods: []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "orders-1", UID: "pod-1", OwnerReferences: owned("sts-uid")}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
			{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", OwnerReferences: owned("sts-uid")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "stranger"}},
		},
		Services: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "orders", OwnerReferences: owned("db-uid")}, Spec: corev1.ServiceSpec{ClusterIP: "None"}}},
		Secrets:  []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "orders-credentials", OwnerReferences: owned("db-uid")}}},
		ConfigMaps: []corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Name: "orders-final-snapshot"}, Data: map[string]string{"a": "1"}},
		},
		Events: []corev1.Event{
			{InvolvedObject: corev1.ObjectReference{UID: "db-uid"}, Type: "Normal", Reason: "Created", Message: "second", LastTimestamp: metav1.NewTime(t0.Add(time.Minute)), Count: 2},
			{InvolvedObject: corev1.ObjectReference{UID: "db-uid"}, Type: "Normal", Reason: "Created", Message: "first", EventTime: metav1.NewMicroTime(t0)},
			{InvolvedObject: corev1.ObjectReference{UID: "other"}, Reason: "NotOurs"},
			{InvolvedObject: corev1.ObjectReference{UID: "sts-uid", Kind: "StatefulSet"}, Type: "Warning", Reason: "FailedCreate", Message: "exceeded quota", LastTimestamp: metav1.NewTime(t0.Add(2 * time.Minute))},
			{InvolvedObject: corev1.ObjectReference{UID: "sts-uid", Kind: "StatefulSet"}, Type: "Normal", Reason: "SuccessfulCreate", Message: "a child's Normal Event is not shown"},
			{InvolvedObject: corev1.ObjectReference{UID: "pod-1", Kind: "Pod"}, Type: "Warning", Reason: "BackOff", Message: "back-off", LastTimestamp: metav1.NewTime(t0.Add(3 * time.Minute))},
		},
	}
	wantTree := []Node{
		{Kind: "StatefulSet", Name: "orders", Summary: "1/2 ready", Children: []Node{
			{Kind: "Pod", Name: "orders-0", Summary: "Running, ready", Children: []Node{}},
			{Kind: "Pod", Name: "orders-1", Summary: "Pending, not ready", Children: []Node{}},
		}},
		{Kind: "Service", Name: "orders", Summary: "headless", Children: []Node{}},
		{Kind: "Secret", Name: "orders-credentials", Summary: "data hidden", Children: []Node{}},
	}
	tests := []struct {
		name  string
		tweak func(*v1alpha1.Database)
		check func(t *testing.T, v Database)
	}{
		{"tree follows ownerReferences", nil, func(t *testing.T, v Database) {
			if diff := cmp.Diff(wantTree, v.Owned); diff != "" {
				t.Errorf("owned tree (-want +got):\n%s", diff)
			}
			if len(v.Unowned) != 1 || v.Unowned[0].Name != "orders-final-snapshot" {
				t.Errorf("unowned = %+v, want the snapshot ConfigMap", v.Unowned)
			}
		}},
		{"events are ours and our children's warnings, oldest first", nil, func(t *testing.T, v Database) {
			want := []Event{
				{Type: "Normal", Reason: "Created", Message: "first", Count: 1, Last: t0},
				{Type: "Normal", Reason: "Created", Message: "second", Count: 2, Last: t0.Add(time.Minute)},
				{Object: "StatefulSet orders", Type: "Warning", Reason: "FailedCreate", Message: "exceeded quota", Count: 1, Last: t0.Add(2 * time.Minute)},
				{Object: "Pod orders-1", Type: "Warning", Reason: "BackOff", Message: "back-off", Count: 1, Last: t0.Add(3 * time.Minute)},
			}
			if diff := cmp.Diff(want, v.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		}},
		{"caught up is not stale", nil, func(t *testing.T, v Database) {
			if v.Stale || v.Terminating {
				t.Errorf("stale=%v terminating=%v, want both false", v.Stale, v.Terminating)
			}
		}},
		{"generation ahead is stale", func(d *v1alpha1.Database) { d.Generation = 4 }, func(t *testing.T, v Database) {
			if !v.Stale || v.Generation != 4 || v.ObservedGeneration != 3 {
				t.Errorf("got stale=%v gen=%d observed=%d, want stale 4 vs 3", v.Stale, v.Generation, v.ObservedGeneration)
			}
		}},
		{"terminating names the finalizer that holds it", func(d *v1alpha1.Database) {
			d.Finalizers = []string{"db.oplab.dev/final-snapshot"}
			d.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
		}, func(t *testing.T, v Database) {
			if !v.Terminating || cmp.Diff([]string{"db.oplab.dev/final-snapshot"}, v.HeldBy) != "" {
				t.Errorf("terminating=%v heldBy=%v", v.Terminating, v.HeldBy)
			}
		}},
		{"pitfall annotation and spec yaml", func(d *v1alpha1.Database) {
			d.Annotations = map[string]string{"db.oplab.dev/pitfall": "status-thrash"}
		}, func(t *testing.T, v Database) {
			if v.Pitfall != "status-thrash" {
				t.Errorf("pitfall = %q", v.Pitfall)
			}
			want := "spec:\n  engine: postgres\n  replicas: 2\n  storage: 1Gi\n  version: \"17\"\n"
			if v.SpecYAML != want {
				t.Errorf("spec yaml = %q, want %q", v.SpecYAML, want)
			}
		}},
		{"pods mode", func(d *v1alpha1.Database) {
			d.Annotations = map[string]string{"db.oplab.dev/pods": "crash-loop"}
		}, func(t *testing.T, v Database) {
			if v.Pods != "crash-loop" {
				t.Errorf("pods = %q, want crash-loop", v.Pods)
			}
		}},
		{"unknown pods mode is none", func(d *v1alpha1.Database) {
			d.Annotations = map[string]string{"db.oplab.dev/pods": "slow"}
		}, func(t *testing.T, v Database) {
			if v.Pods != "" {
				t.Errorf("pods = %q, want none", v.Pods)
			}
		}},
		{"owned snapshot is in the tree, not unowned", nil, func(t *testing.T, v Database) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := base()
			if tt.tweak != nil {
				tt.tweak(db)
			}
			tt.check(t, build(db, rel, &history{}, specYAML(db.Spec)))
		})
	}

	rel.ConfigMaps[0].OwnerReferences = owned("db-uid")
	db := base()
	v := build(db, rel, &history{}, specYAML(db.Spec))
	if len(v.Unowned) != 0 || v.Owned[len(v.Owned)-1].Kind != "ConfigMap" {
		t.Errorf("owned snapshot: unowned=%+v owned=%+v; want it in the owned tree", v.Unowned, v.Owned)
	}
}

func TestKeptSnapshotsAreThoseWhoseDatabaseIsGone(t *testing.T) {
	cm := func(name, db string, data map[string]string) corev1.ConfigMap {
		c := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-x", Name: name}, Data: data}
		if db != "" {
			c.Labels = map[string]string{controller.LabelDatabase: db}
		}
		return c
	}
	data := map[string]string{"generation": "3", "time": "2026-11-30T10:00:00Z"}
	tests := []struct {
		name    string
		cms     []corev1.ConfigMap
		present map[string]bool
		want    []Snapshot
	}{
		{
			name: "Database gone: kept, with generation and time from the data",
			cms:  []corev1.ConfigMap{cm("shop-final-snapshot", "shop", data)},
			want: []Snapshot{{Namespace: "lab-x", Name: "shop-final-snapshot", Database: "shop", Generation: 3, Time: t0, Note: keptNote}},
		},
		{
			name:    "Database still there: shown in its owner tree instead",
			cms:     []corev1.ConfigMap{cm("shop-final-snapshot", "shop", data)},
			present: map[string]bool{"shop": true},
			want:    []Snapshot{},
		},
		{
			name: "not a snapshot: labelled for another Database, or not named as a snapshot",
			cms: []corev1.ConfigMap{
				cm("shop-final-snapshot", "cart", data), cm("settings", "shop", data), cm("settings", "", data), cm("-final-snapshot", "", data),
			},
			want: []Snapshot{},
		},
		{
			name: "no label, as a learner's own code may write it: kept by its name",
			cms:  []corev1.ConfigMap{cm("shop-final-snapshot", "", data)},
			want: []Snapshot{{Namespace: "lab-x", Name: "shop-final-snapshot", Database: "shop", Generation: 3, Time: t0, Note: keptNote}},
		},
		{
			name: "unreadable data: zero generation and time, still kept",
			cms:  []corev1.ConfigMap{cm("b-final-snapshot", "b", map[string]string{"generation": "x"}), cm("a-final-snapshot", "a", nil)},
			want: []Snapshot{
				{Namespace: "lab-x", Name: "a-final-snapshot", Database: "a", Note: keptNote},
				{Namespace: "lab-x", Name: "b-final-snapshot", Database: "b", Note: keptNote},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := keptSnapshots(tt.cms, tt.present)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("keptSnapshots (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpecTextIsKeptPerGeneration(t *testing.T) {
	o := &owner{specs: map[types.NamespacedName]specCache{}}
	key := types.NamespacedName{Namespace: "lab", Name: "orders"}
	db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "a", Generation: 1}, Spec: v1alpha1.DatabaseSpec{Replicas: 2}}
	if got := o.specText(key, db); !strings.Contains(got, "replicas: 2") {
		t.Fatalf("spec text %q, want replicas: 2", got)
	}
	// The API server moves generation whenever the spec changes; without
	// a new generation the text kept is the one shown.
	db.Spec.Replicas = 3
	if got := o.specText(key, db); !strings.Contains(got, "replicas: 2") {
		t.Errorf("same generation: spec text %q, want the kept one (replicas: 2)", got)
	}
	db.Generation = 2
	if got := o.specText(key, db); !strings.Contains(got, "replicas: 3") {
		t.Errorf("new generation: spec text %q, want replicas: 3", got)
	}
	// Deleted and created again under the same name: another object.
	other := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "b", Generation: 2}, Spec: v1alpha1.DatabaseSpec{Replicas: 5}}
	if got := o.specText(key, other); !strings.Contains(got, "replicas: 5") {
		t.Errorf("new object, same name and generation: spec text %q, want replicas: 5", got)
	}
}

func TestPodSummary(t *testing.T) {
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	waiting := func(reason string, restarts int32) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "postgres", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	}
	tests := []struct {
		name string
		pod  corev1.PodStatus
		want string
	}{
		{"new", corev1.PodStatus{}, "Pending"},
		{"ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}, "Running, ready"},
		{"image pull", corev1.PodStatus{Phase: corev1.PodPending, Conditions: notReady, ContainerStatuses: waiting("ImagePullBackOff", 0)}, "Pending, not ready: ImagePullBackOff"},
		{"crash loop", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: waiting("CrashLoopBackOff", 3)}, "Running, not ready: CrashLoopBackOff, 3 restarts"},
		{"running again", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady, ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 1}}}, "Running, not ready, 1 restart"},
	}
	for _, tt := range tests {
		if got := podSummary(corev1.Pod{Status: tt.pod}); got != tt.want {
			t.Errorf("%s: podSummary = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestLostDatabasesAreListedUntilASnapshotAnswersThem(t *testing.T) {
	snap := func(db, uid, at string) corev1.ConfigMap {
		return corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "lab-x", Name: controller.SnapshotName(db), Labels: map[string]string{controller.LabelDatabase: db}},
			Data:       map[string]string{"uid": uid, "generation": "1", "time": at},
		}
	}
	gone := func(name, uid string, annotations map[string]string) *v1alpha1.Database {
		return &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-x", Name: name, UID: types.UID(uid), Generation: 2, Annotations: annotations}}
	}

	// What the lab says of a Database gone without a snapshot, and why.
	pitfall := lostSnapshot(gone("shop", "u1", map[string]string{controller.PitfallAnnotation: controller.PitfallNoFinalizer}), t0, false)
	if !pitfall.Lost || pitfall.Name != "shop-final-snapshot" || pitfall.DatabaseUID != "u1" || pitfall.Generation != 2 ||
		!strings.Contains(pitfall.Note, "no-finalizer pitfall") || !strings.Contains(pitfall.Note, "data is lost") {
		t.Errorf("lost under the pitfall = %+v", pitfall)
	}
	byHand := lostSnapshot(gone("shop", "u1", nil), t0, false)
	if strings.Contains(byHand.Note, "pitfall") || !strings.Contains(byHand.Note, "its finalizer came off before a final snapshot was written") {
		t.Errorf("lost by hand, note = %q; want the finalizer named, no pitfall", byHand.Note)
	}
	hidden := lostSnapshot(gone("shop", "u1", map[string]string{controller.PitfallAnnotation: controller.PitfallNoFinalizer, controller.PitfallHiddenAnnotation: "true"}), t0, false)
	if strings.Contains(hidden.Note, "pitfall") {
		t.Errorf("a hidden pitfall is named: %q", hidden.Note)
	}
	// Under the learner's own code, what it did is what happened: neither
	// a hand nor the escape hatch is blamed.
	mine := lostSnapshot(gone("shop", "u1", nil), t0, true)
	if !strings.Contains(mine.Note, "your code") || strings.Contains(mine.Note, "escape hatch") {
		t.Errorf("lost under the learner's code, note = %q; want their code named, not the escape hatch", mine.Note)
	}

	// Whether it went with a snapshot: its status says so, or a snapshot
	// records its uid; another Database's snapshot of that name does not count.
	taken := gone("shop", "u1", nil)
	taken.Status.LastSnapshot = &v1alpha1.SnapshotReference{Name: "shop-final-snapshot"}
	if !snapshotTaken(taken, nil) || !snapshotTaken(gone("shop", "u1", nil), []corev1.ConfigMap{snap("shop", "u1", "2026-11-30T10:00:00Z")}) {
		t.Error("a Database with its snapshot is counted as lost")
	}
	if snapshotTaken(gone("shop", "u2", nil), []corev1.ConfigMap{snap("shop", "u1", "2026-11-30T09:00:00Z")}) {
		t.Error("an earlier Database's snapshot counts for a later one of the same name")
	}
	// A learner's own code may write neither oplab's label nor the uid:
	// then a snapshot made in the Database's lifetime is its own.
	born := gone("shop", "u3", nil)
	born.CreationTimestamp = metav1.NewTime(t0)
	unmarked := func(made time.Time) []corev1.ConfigMap {
		return []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-x", Name: "shop-final-snapshot", CreationTimestamp: metav1.NewTime(made)}}}
	}
	if !snapshotTaken(born, unmarked(t0.Add(time.Minute))) {
		t.Error("a snapshot the learner's code wrote without label or uid, during the Database's life, is counted as lost")
	}
	if snapshotTaken(born, unmarked(t0.Add(-time.Minute))) {
		t.Error("an unlabelled snapshot older than the Database counts as its own")
	}

	// Listed with the kept ones, in place of an earlier Database's snapshot
	// of the same name, until a snapshot answers it.
	kept := Snapshot{Namespace: "lab-x", Name: "cart-final-snapshot", Database: "cart", Note: keptNote}
	older := Snapshot{Namespace: "lab-x", Name: "shop-final-snapshot", Database: "shop", DatabaseUID: "u0", Note: keptNote}
	lost := lostSnapshot(gone("shop", "u1", nil), t0, false)
	shown, answered := withLost([]Snapshot{older, kept}, []Snapshot{lost}, []corev1.ConfigMap{snap("shop", "u0", "2026-11-30T09:00:00Z")})
	if diff := cmp.Diff([]Snapshot{kept, lost}, shown); diff != "" || len(answered) != 0 {
		t.Errorf("withLost, an older snapshot of the name (-want +got):\n%s\nanswered %v", diff, answered)
	}
	for name, cm := range map[string]corev1.ConfigMap{
		"its own snapshot, seen late":         snap("shop", "u1", "2026-11-30T09:59:00Z"),
		"a later Database's of the same name": snap("shop", "u2", "2026-11-30T10:05:00Z"),
	} {
		shown, answered := withLost(nil, []Snapshot{lost}, []corev1.ConfigMap{cm})
		if len(shown) != 0 || len(answered) != 1 {
			t.Errorf("%s: shown %v, answered %v; want the lost one answered", name, shown, answered)
		}
	}
}

func TestLostDatabasesAreBoundedAndForgotten(t *testing.T) {
	now := t0
	o := &owner{w: &Watcher{opts: Options{Now: func() time.Time { return now }}},
		lost: map[types.NamespacedName]Snapshot{}, kept: map[types.NamespacedName]Snapshot{},
		keptJSON: map[types.NamespacedName][]byte{}, gone: map[string][]*v1alpha1.Database{}, ended: map[string]time.Time{}}
	for i := range maxLost + 5 {
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: fmt.Sprintf("db%02d", i), UID: types.UID(fmt.Sprint(i))}}
		o.addLost(lostSnapshot(db, t0.Add(time.Duration(i)*time.Second), false))
	}
	o.addLost(lostSnapshot(&v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-b", Name: "b"}}, t0, false))
	l := o.lostIn("lab-a")
	if len(l) != maxLost {
		t.Fatalf("lab-a keeps %d lost Databases; want %d", len(l), maxLost)
	}
	if _, ok := o.lost[types.NamespacedName{Namespace: "lab-a", Name: controller.SnapshotName("db00")}]; ok {
		t.Error("the oldest lost Database is kept over the bound; want it dropped first")
	}
	o.kept[types.NamespacedName{Namespace: "lab-a", Name: "db20-final-snapshot"}] = l[0]
	o.take(signal{forget: "lab-a"})
	if len(o.lostIn("lab-a")) != 0 || len(o.kept) != 0 || len(o.lostIn("lab-b")) != 1 {
		t.Errorf("after Forget(lab-a): lab-a %d lost, %d kept, lab-b %d lost; want 0, 0, 1", len(o.lostIn("lab-a")), len(o.kept), len(o.lostIn("lab-b")))
	}
	// The Databases that go with the ended namespace are not listed…
	final := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: "late"}}
	o.dirtyDB, o.dirtyKept = map[types.NamespacedName]bool{}, map[string]bool{}
	o.take(signal{gone: client.ObjectKeyFromObject(final), final: final})
	if len(o.gone["lab-a"]) != 0 {
		t.Error("a Database going with its ended namespace is to be listed as lost")
	}
	// …and the namespace is forgotten once endedFor has passed.
	now = now.Add(endedFor + time.Minute)
	o.take(signal{forget: "lab-other"})
	if _, ok := o.ended["lab-a"]; ok {
		t.Error("an ended namespace is remembered past endedFor")
	}
}
