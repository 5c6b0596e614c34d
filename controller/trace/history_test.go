package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/oplab-dev/oplab/controller"
)

var _ controller.Observer = (*Recorder)(nil)

// statefulSet is a StatefulSet as a watch delivers one: managed fields,
// a pod template, a status; version v sets its replicas and resourceVersion.
func statefulSet(ns, name string, v int) *appsv1.StatefulSet {
	t := metav1.NewTime(time.Date(2026, 12, 2, 7, 0, v%60, 0, time.UTC))
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: strconv.Itoa(1000 + v), Generation: int64(v),
			Labels: map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "oplab"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "oplab.dev/v1alpha1", Kind: "Database", Name: name, UID: "5f0c6b9e-8a41-4c1e-9d2a-3b7e1f0a9c44",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "oplab", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"postgres\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)}},
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &t, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:replicas":{},"f:readyReplicas":{},"f:availableReplicas":{}}}`)}},
			},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(int32(1 + v%3)),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "postgres", Image: "postgres:16",
					Ports: []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432}},
					Env:   []corev1.EnvVar{{Name: "POSTGRES_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-credentials"}, Key: "password"}}}},
				}}},
			},
		},
		Status: appsv1.StatefulSetStatus{Replicas: int32(1 + v%3), ReadyReplicas: int32(v % 3), ObservedGeneration: int64(v)},
	}
}

// runRecorder runs a recorder until the test ends.
func runRecorder(t testing.TB, ro RecorderOptions) *Recorder {
	rec := NewRecorder(ro)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return rec
}

// emitWait emits a step and waits until it is recorded (everything sent
// before it is then recorded too: the inbox keeps their order); it returns
// its seq. Every step emitted before must have been waited for.
func emitWait(t testing.TB, rec *Recorder, s controller.Step) uint64 {
	want := rec.Stats().Messages + 1
	rec.Emit(s)
	deadline := time.Now().Add(5 * time.Second)
	for rec.Stats().Messages < want {
		if time.Now().After(deadline) {
			t.Fatalf("step %v was not recorded", s.Type)
		}
		time.Sleep(time.Millisecond)
	}
	return rec.Stats().Seq
}

// normalised is what the history should give back for obj.
func normalised(t testing.TB, ref controller.ObjectRef, obj any) map[string]any {
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := normalise(ref, raw)
	if err != nil {
		t.Fatal(err)
	}
	return decodeMap(t, n)
}

func decodeMap(t testing.TB, raw []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return m
}

func objectOf(t *testing.T, v HistoryView, kind, name string) *ObjectAt {
	t.Helper()
	for i, o := range v.Objects {
		if o.Ref.Kind == kind && o.Ref.Name == name {
			return &v.Objects[i]
		}
	}
	return nil
}

// Every step's objects are rebuilt as the watch delivered them, across
// keyframes, with the version before each.
func TestHistoryRebuildsEveryStep(t *testing.T) {
	rec := runRecorder(t, RecorderOptions{})
	ref := controller.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: "shop"}
	const versions = 3*keyframeEvery + 5
	before := emitWait(t, rec, step("a", "shop", controller.StepEvent))
	seqs := make([]uint64, versions)
	for v := range versions {
		rec.Observe("update", ref, statefulSet("a", "shop", v))
		seqs[v] = emitWait(t, rec, step("a", "shop", controller.StepEvent))
	}
	for v, seq := range seqs {
		view, err := rec.HistoryAt("a", seq)
		if err != nil {
			t.Fatal(err)
		}
		got := objectOf(t, view, "StatefulSet", "shop")
		if got == nil {
			t.Fatalf("seq %d: no StatefulSet among %v", seq, view.Objects)
		}
		if want := normalised(t, ref, statefulSet("a", "shop", v)); !equalJSON(decodeMap(t, got.Now.Object), want) {
			t.Fatalf("seq %d: rebuilt version %d\n%s\nwant\n%v", seq, v, got.Now.Object, want)
		}
		if v == 0 {
			if got.Prev != nil {
				t.Errorf("seq %d: the first version has a previous one: %s", seq, got.Prev.Object)
			}
			continue
		}
		if got.Prev == nil || !equalJSON(decodeMap(t, got.Prev.Object), normalised(t, ref, statefulSet("a", "shop", v-1))) {
			t.Fatalf("seq %d: previous version wrong: %+v", seq, got.Prev)
		}
	}
	// Before the first version the object was not there.
	if view, _ := rec.HistoryAt("a", before); objectOf(t, view, "StatefulSet", "shop") != nil {
		t.Errorf("the StatefulSet is there before it was seen: %+v", view)
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// A step emitted before the watch delivered a version shows the version
// before it; a deleted object is not among the objects after its deletion;
// another namespace's objects never appear.
func TestHistoryPlacesVersionsAmongSteps(t *testing.T) {
	rec := runRecorder(t, RecorderOptions{})
	ref := controller.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: "shop"}
	rec.Observe("create", ref, statefulSet("a", "shop", 1))
	rec.Observe("create", controller.ObjectRef{Kind: "StatefulSet", Namespace: "b", Name: "other"}, statefulSet("b", "other", 1))
	created := emitWait(t, rec, step("a", "shop", controller.StepEvent))
	action := emitWait(t, rec, step("a", "shop", controller.StepAction)) // the scale, before its event
	rec.Observe("update", ref, statefulSet("a", "shop", 2))
	updated := emitWait(t, rec, step("a", "shop", controller.StepEvent))
	rec.Observe("delete", ref, statefulSet("a", "shop", 2))
	deleted := emitWait(t, rec, step("a", "shop", controller.StepEvent))

	replicas := func(seq uint64) any {
		view, err := rec.HistoryAt("a", seq)
		if err != nil {
			t.Fatal(err)
		}
		if objectOf(t, view, "StatefulSet", "other") != nil {
			t.Fatalf("namespace b's object is in a's history")
		}
		o := objectOf(t, view, "StatefulSet", "shop")
		if o == nil {
			return nil
		}
		return decodeMap(t, o.Now.Object)["spec"].(map[string]any)["replicas"]
	}
	for _, c := range []struct {
		seq  uint64
		want any
	}{{created, 2.0}, {action, 2.0}, {updated, 3.0}, {deleted, nil}} {
		if got := replicas(c.seq); got != c.want {
			t.Errorf("replicas at seq %d = %v, want %v", c.seq, got, c.want)
		}
	}
	// seq 0 is now.
	if view, _ := rec.HistoryAt("a", 0); len(view.Objects) != 0 || view.Seq != deleted {
		t.Errorf("now: %+v, want no objects at seq %d", view, deleted)
	}
	// Forget drops the namespace's history with its ring.
	rec.Observe("create", ref, statefulSet("a", "shop", 3))
	last := emitWait(t, rec, step("a", "shop", controller.StepEvent))
	if view, _ := rec.HistoryAt("a", last); objectOf(t, view, "StatefulSet", "shop") == nil {
		t.Fatalf("the StatefulSet created again is not in the history")
	}
	rec.Forget("a")
	if view, _ := rec.HistoryAt("a", last); len(view.Objects) != 0 {
		t.Errorf("after Forget the history still holds %+v", view.Objects)
	}
}

// A Secret's data never enters the history, even when the caller forgets
// to leave it out; managedFields keep who, how and when only.
func TestHistoryKeepsNoSecretData(t *testing.T) {
	rec := runRecorder(t, RecorderOptions{})
	ref := controller.ObjectRef{Kind: "Secret", Namespace: "a", Name: "shop-credentials"}
	now := metav1.Now()
	rec.Observe("create", ref, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "shop-credentials", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "oplab", Operation: "Update", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:password":{}}}`)}}}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"password": []byte("hunter2-very-secret")},
		StringData: map[string]string{"user": "also-secret"},
	})
	seq := emitWait(t, rec, step("a", "shop-credentials", controller.StepEvent))
	view, err := rec.HistoryAt("a", seq+1)
	if err != nil {
		t.Fatal(err)
	}
	o := objectOf(t, view, "Secret", "shop-credentials")
	if o == nil {
		t.Fatalf("no Secret in %+v", view)
	}
	for _, secret := range []string{"hunter2", "aHVudGVyM", "also-secret", `"data"`, "f:password"} {
		if bytes.Contains(o.Now.Object, []byte(secret)) {
			t.Errorf("the history keeps %q: %s", secret, o.Now.Object)
		}
	}
	m := decodeMap(t, o.Now.Object)
	mf := m["metadata"].(map[string]any)["managedFields"].([]any)
	if len(mf) != 1 || mf[0].(map[string]any)["manager"] != "oplab" || mf[0].(map[string]any)["time"] == nil {
		t.Errorf("managedFields = %v, want oplab's, with its time and no fields", mf)
	}
	if m["type"] != "Opaque" || m["kind"] != "Secret" {
		t.Errorf("kind and type = %v, %v", m["kind"], m["type"])
	}
}

// The same version again (a resync) is kept once.
func TestHistoryKeepsAResyncOnce(t *testing.T) {
	h := newHistory(1 << 20)
	ref := controller.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: "shop"}
	for range 3 {
		raw, _ := json.Marshal(statefulSet("a", "shop", 1))
		obj, rv, err := normalise(ref, raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.add(ref, "update", 1, obj, rv); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.objects[ref].versions); n != 1 {
		t.Errorf("%d versions kept of one resynced three times, want 1", n)
	}
}

// Over its byte bound the history drops the oldest versions, across
// objects, keeps every object's newest, and still rebuilds what it keeps.
func TestHistoryStaysInItsBound(t *testing.T) {
	const bound = 32 << 10
	h := newHistory(bound)
	refs := []controller.ObjectRef{
		{Kind: "StatefulSet", Namespace: "a", Name: "shop"},
		{Kind: "StatefulSet", Namespace: "a", Name: "blog"},
		{Kind: "StatefulSet", Namespace: "a", Name: "idle"}, // one version only
	}
	add := func(ref controller.ObjectRef, v int, after uint64) {
		raw, _ := json.Marshal(statefulSet("a", ref.Name, v))
		obj, rv, err := normalise(ref, raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.add(ref, "update", after, obj, rv); err != nil {
			t.Fatal(err)
		}
	}
	add(refs[2], 0, 0)
	for v := 1; v <= 500; v++ {
		add(refs[v%2], v, uint64(v))
		if h.bytes > bound {
			t.Fatalf("after version %d the history holds %d bytes, over its bound %d", v, h.bytes, bound)
		}
	}
	if h.floor == 0 {
		t.Errorf("floor still 0 after dropping versions")
	}
	for _, ref := range refs {
		o := h.objects[ref]
		if o == nil || len(o.versions) == 0 {
			t.Fatalf("%s lost every version", ref.Name)
		}
	}
	for _, c := range h.chainsAt(1000) {
		at, err := c.objects()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"shop": 500, "blog": 499, "idle": 0}[c.ref.Name]
		if !equalJSON(decodeMap(t, at.Now.Object), normalised(t, c.ref, statefulSet("a", c.ref.Name, want))) {
			t.Errorf("%s: newest version rebuilt wrong: %s", c.ref.Name, at.Now.Object)
		}
	}
	// The oldest kept version of a dropped-into object rebuilds too: the
	// version after each dropped one was made a keyframe.
	o := h.objects[refs[0]]
	if !o.versions[0].keyframe {
		t.Errorf("the oldest kept version is not a keyframe")
	}
}

// BenchmarkHistory4096 records 4,096 steps of one namespace in which every
// step brings a new object version (the history's worst case: most steps
// bring none), then rebuilds the objects at random steps. It logs the
// history's bytes and the p50/p99 of a rebuild.
func BenchmarkHistory4096(b *testing.B) {
	for b.Loop() {
		rec := runRecorder(b, RecorderOptions{HistoryBytes: 64 << 20, InboxSize: 1 << 16})
		names := []string{"shop", "blog", "shop-credentials"}
		var seqs []uint64
		for i := range 4096 {
			name := names[i%2]
			ref := controller.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: name}
			if i%16 == 0 {
				ref = controller.ObjectRef{Kind: "Secret", Namespace: "a", Name: names[2]}
				s := &corev1.Secret{ObjectMeta: statefulSet("a", names[2], i).ObjectMeta, Type: corev1.SecretTypeOpaque}
				rec.Observe("update", ref, s)
			} else {
				rec.Observe("update", ref, statefulSet("a", name, i))
			}
			rec.Emit(step("a", name, controller.StepEvent))
		}
		rec.Emit(step("a", "end", controller.StepEvent))
		for rec.Stats().Messages < 4097 && rec.Stats().DroppedSteps == 0 {
			time.Sleep(time.Millisecond)
		}
		last := rec.Stats().Seq
		if d := rec.Stats().DroppedSteps; d > 0 || last < 4096 {
			b.Fatalf("%d steps dropped, last seq %d", d, last)
		}
		for s := last - 4096; s <= last; s++ {
			seqs = append(seqs, s)
		}
		now, err := rec.HistoryAt("a", 0)
		if err != nil {
			b.Fatal(err)
		}
		bytesKept := now.Bytes
		rng := rand.New(rand.NewPCG(1, 2))
		var took []time.Duration
		for range 2000 {
			seq := seqs[rng.IntN(len(seqs))]
			start := time.Now()
			if _, err := rec.HistoryAt("a", seq); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		b.ReportMetric(float64(bytesKept), "history-bytes")
		b.ReportMetric(float64(took[len(took)/2].Microseconds()), "rebuild-p50-µs")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "rebuild-p99-µs")
		b.Log(fmt.Sprintf("4,096 steps, one version each: %d bytes of history (%.2f MiB); rebuild p50 %v, p99 %v",
			bytesKept, float64(bytesKept)/(1<<20), took[len(took)/2], took[len(took)*99/100]))
	}
}

// BenchmarkHistoryKeep is the cost of keeping one StatefulSet version:
// encoding and normalising it (on the event handler's goroutine) and
// diffing it with the last (on Run's).
func BenchmarkHistoryKeep(b *testing.B) {
	h := newHistory(DefaultHistoryBytes)
	ref := controller.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: "shop"}
	objs := make([]*appsv1.StatefulSet, 64)
	for i := range objs {
		objs[i] = statefulSet("a", "shop", i)
	}
	i := 0
	for b.Loop() {
		raw, err := json.Marshal(objs[i%len(objs)])
		if err != nil {
			b.Fatal(err)
		}
		obj, _, err := normalise(ref, raw)
		if err != nil {
			b.Fatal(err)
		}
		// A distinct resourceVersion each time, so that none is a resync.
		if err := h.add(ref, "update", uint64(i), obj, strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// A version the full inbox dropped is counted as a version, not a step, and
// the histories before the next kept version say they may miss it.
func TestADroppedVersionMarksTheHistoriesPartial(t *testing.T) {
	idle := NewRecorder(RecorderOptions{InboxSize: 1})
	ref := controller.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: "shop"}
	idle.Observe("create", ref, statefulSet("a", "shop", 1))
	idle.Observe("update", ref, statefulSet("a", "shop", 2)) // the inbox is full
	if st := idle.Stats(); st.DroppedVersions != 1 || st.DroppedSteps != 0 {
		t.Errorf("stats %+v, want 1 dropped version and no dropped step", st)
	}

	rec := runRecorder(t, RecorderOptions{})
	rec.Observe("create", ref, statefulSet("a", "shop", 1))
	first := emitWait(t, rec, step("a", "shop", controller.StepEvent))
	rec.versionGap.Store(true) // as Observe does when the inbox is full
	rec.Observe("update", ref, statefulSet("a", "shop", 3))
	later := emitWait(t, rec, step("a", "shop", controller.StepEvent))
	view, err := rec.HistoryAt("a", later)
	if err != nil {
		t.Fatal(err)
	}
	if view.Floor < first {
		t.Errorf("after a dropped version the history's floor is %d, want at least %d (partial before it)", view.Floor, first)
	}
}
