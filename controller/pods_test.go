package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

func TestValidatePodsMode(t *testing.T) {
	for _, mode := range []string{"", PodsSlowStart, PodsImagePullError, PodsCrashLoop} {
		if err := ValidatePodsMode(mode); err != nil {
			t.Errorf("ValidatePodsMode(%q) = %v, want nil", mode, err)
		}
	}
	err := ValidatePodsMode("slow")
	if err == nil || !strings.Contains(err.Error(), `"slow"`) || !strings.Contains(err.Error(), PodsAnnotation) {
		t.Errorf("ValidatePodsMode(\"slow\") = %v, want an error naming the value and the annotation", err)
	}
	db := newDB("x", 1, "")
	db.Annotations = map[string]string{PodsAnnotation: "slow"}
	if got := PodsModeOf(db); got != "" {
		t.Errorf("PodsModeOf an unknown mode = %q, want \"\"", got)
	}
	if got := desiredStatefulSet(db, "").Spec.Template.Annotations; got != nil {
		t.Errorf("an unknown mode reached the Pod template: %v", got)
	}
}

func TestReportPods(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	pod := func(name string, phase corev1.PodPhase, conds []corev1.PodCondition, cs ...corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.PodStatus{Phase: phase, Conditions: conds, ContainerStatuses: cs}}
	}
	waiting := func(reason, msg string, restarts int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "postgres", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	tests := []struct {
		name                     string
		pods                     []corev1.Pod
		reason, message, progess string
	}{
		{name: "no pods"},
		{name: "all ready", pods: []corev1.Pod{pod("db-0", corev1.PodRunning, ready)}},
		{
			name:    "running, not ready yet",
			pods:    []corev1.Pod{pod("db-0", corev1.PodRunning, ready), pod("db-1", corev1.PodRunning, notReady)},
			progess: "Pod db-1 is Running, not ready yet.",
		},
		{
			name: "creating is on the way, and no word",
			pods: []corev1.Pod{pod("db-0", corev1.PodPending, notReady, waiting("ContainerCreating", "", 0))},
		},
		{
			name:    "image pull back-off, first pod by name",
			pods:    []corev1.Pod{pod("db-1", corev1.PodPending, notReady, waiting("ErrImagePull", "x", 0)), pod("db-0", corev1.PodPending, notReady, waiting("ImagePullBackOff", `Back-off pulling image "postgres:17".`, 0))},
			reason:  "ImagePullBackOff",
			message: `Pod db-0: container postgres is waiting: ImagePullBackOff: Back-off pulling image "postgres:17".`,
			progess: "Pod db-0 is Pending, not ready yet.",
		},
		{
			name:    "crash loop counts restarts",
			pods:    []corev1.Pod{pod("db-0", corev1.PodRunning, notReady, waiting("CrashLoopBackOff", "back-off 10s", 3))},
			reason:  "CrashLoopBackOff",
			message: "Pod db-0: container postgres is waiting: CrashLoopBackOff: back-off 10s (restarted 3 times).",
			progess: "Pod db-0 is Running, not ready yet.",
		},
		{
			name: "running again after an exit",
			pods: []corev1.Pod{pod("db-0", corev1.PodRunning, notReady, corev1.ContainerStatus{
				Name: "postgres", RestartCount: 1,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
			})},
			reason:  ReasonContainerExited,
			message: "Pod db-0: container postgres exited with code 1 (Error) (restarted once); it runs again, not ready.",
			progess: "Pod db-0 is Running, not ready yet.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reportPods(tt.pods)
			if got.reason != tt.reason || got.message != tt.message || got.progress != tt.progess {
				t.Errorf("reportPods = %+v, want reason %q message %q progress %q", got, tt.reason, tt.message, tt.progess)
			}
		})
	}
}

var errTest = errors.New("test error")

// listedClient answers List from fixed Pods and Events, as the cache the
// controller's Pod and Event watches fill would, and counts each kind.
type listedClient struct {
	client.Client
	pods   []corev1.Pod
	events []corev1.Event
	lists  map[string]int
}

func (c *listedClient) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	if c.lists == nil {
		c.lists = map[string]int{}
	}
	switch l := list.(type) {
	case *corev1.PodList:
		c.lists["pods"]++
		l.Items = c.pods
	case *corev1.EventList:
		c.lists["events"]++
		l.Items = c.events
	}
	return nil
}

// TestLookAtPods: the Pods are read (from the cache) whenever the replicas
// are not all ready, so a crash or a pull error reaches Degraded at once;
// the first Pod merely not ready yet is named only once the Database is
// late; the StatefulSet's warnings are read only when a replica has no Pod.
func TestLookAtPods(t *testing.T) {
	progressing := func(since time.Time) *dbv1.Database {
		return testDB(1, 1, cond(ConditionProgressing, metav1.ConditionTrue, ReasonWaitingForReplicas, since, 1))
	}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	running := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady}}
	crashing := *running.DeepCopy()
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgres", RestartCount: 2,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}}}}
	missing := sts(1, 1, 1, 0)
	missing.Name, missing.Status.Replicas = "orders", 0
	refused := corev1.Event{
		Type: corev1.EventTypeWarning, Reason: "FailedCreate", LastTimestamp: metav1.NewTime(t1.Add(-time.Second)),
		InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "orders"},
		Message:        `create Pod orders-0 in StatefulSet orders failed error: pods "orders-0" is forbidden: exceeded quota: pod-budget`,
	}
	older := *refused.DeepCopy()
	older.LastTimestamp, older.Message = metav1.NewTime(t0.Add(-time.Minute)), "from before this Database progressed"
	tests := []struct {
		name             string
		db               *dbv1.Database
		sts              *appsv1.StatefulSet
		pods             []corev1.Pod
		events           []corev1.Event
		podLists, evList int
		want             podReport
	}{
		{name: "no StatefulSet yet", db: progressing(t0)},
		{name: "replicas ready", db: progressing(t0), sts: sts(1, 1, 1, 1)},
		{name: "not ready yet, not late: read, not said", db: progressing(t1.Add(-progressPoll / 2)), sts: sts(1, 1, 1, 0),
			pods: []corev1.Pod{running}, podLists: 1},
		{name: "not ready yet and late", db: progressing(t1.Add(-progressPoll)), sts: sts(1, 1, 1, 0),
			pods: []corev1.Pod{running}, podLists: 1, want: podReport{progress: "Pod orders-0 is Running, not ready yet."}},
		{name: "a crash is said at once, with the restarts it has now", db: progressing(t1), sts: sts(1, 1, 1, 0),
			pods: []corev1.Pod{crashing}, podLists: 1, want: podReport{reason: "CrashLoopBackOff",
				message: "Pod orders-0: container postgres is waiting: CrashLoopBackOff: back-off 10s (restarted 2 times)."}},
		{name: "a replica without a Pod: the StatefulSet's latest warning", db: progressing(t0), sts: missing,
			events: []corev1.Event{older, refused}, podLists: 1, evList: 1, want: podReport{reason: "FailedCreate",
				message: `StatefulSet orders: FailedCreate: create Pod orders-0 in StatefulSet orders failed error: pods "orders-0" is forbidden: exceeded quota: pod-budget.`}},
		{name: "a warning from before the Database progressed is not said", db: progressing(t0), sts: missing,
			events: []corev1.Event{older}, podLists: 1, evList: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &listedClient{pods: tt.pods, events: tt.events}
			r := &DatabaseReconciler{Client: c, Clock: fixedClock(t1)}
			got, err := r.lookAtPods(context.Background(), tt.db, tt.sts)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("lookAtPods = %+v, want %+v", got, tt.want)
			}
			if c.lists["pods"] != tt.podLists || c.lists["events"] != tt.evList {
				t.Errorf("listed %v, want %d Pod lists and %d Event lists", c.lists, tt.podLists, tt.evList)
			}
		})
	}
}

// TestComputeStatusFromPods: the Pods' report reaches Degraded and
// Progressing, and a reconcile error still comes first.
func TestComputeStatusFromPods(t *testing.T) {
	report := podReport{reason: "CrashLoopBackOff", message: "Pod orders-0: …", progress: "Pod orders-0 is Running, not ready yet."}
	st := computeStatus(testDB(1, 1), observation{sts: sts(1, 1, 1, 0), pods: report}, t1)
	degraded := meta.FindStatusCondition(st.Conditions, ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != "CrashLoopBackOff" || degraded.Message != report.message {
		t.Errorf("Degraded = %+v, want True CrashLoopBackOff with the report's message", degraded)
	}
	progressing := meta.FindStatusCondition(st.Conditions, ConditionProgressing)
	if progressing == nil || progressing.Reason != ReasonWaitingForReplicas || !strings.HasSuffix(progressing.Message, report.progress) {
		t.Errorf("Progressing = %+v, want WaitingForReplicas ending with %q", progressing, report.progress)
	}
	st = computeStatus(testDB(1, 1), observation{sts: sts(1, 1, 1, 0), pods: report, err: errTest}, t1)
	if degraded := meta.FindStatusCondition(st.Conditions, ConditionDegraded); degraded.Reason != ReasonReconcileError {
		t.Errorf("Degraded reason with an error = %s, want %s", degraded.Reason, ReasonReconcileError)
	}
}

// TestPodsModes runs one Database per mode of PodsAnnotation, and one
// without, on the embedded cluster with the real controller, and checks
// the Pods kwok makes and the conditions the controller writes from them.
func TestPodsModes(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on Pods
	e := newEnv(t)
	// The shipped resync: nothing here may wait for one.
	opts := e.testOptions()
	opts.ResyncPeriod = DefaultOptions().ResyncPeriod
	e.startController(opts)
	for _, mode := range []string{"", PodsSlowStart, PodsImagePullError, PodsCrashLoop} {
		db := newDB(podName(mode), 1, "")
		if mode != "" {
			db.Annotations = map[string]string{PodsAnnotation: mode}
		}
		e.mustCreate(db)
	}

	t.Run("default", func(t *testing.T) {
		db := e.expectReady("plain")
		expectCondition(t, db, ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, "")
		var s appsv1.StatefulSet
		if err := e.c.Get(e.ctx, e.key("plain"), &s); err != nil {
			t.Fatal(err)
		}
		if a := s.Spec.Template.Annotations; len(a) != 0 {
			t.Errorf("default Pod template annotations %v, want none", a)
		}
	})

	t.Run("slow-start", func(t *testing.T) {
		name := podName(PodsSlowStart)
		db := e.waitCondition(name, ConditionProgressing, func(c *metav1.Condition) bool {
			return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "is Running, not ready yet")
		})
		expectCondition(t, db, ConditionReady, metav1.ConditionFalse, ReasonWaitingForReplicas, "is Running, not ready yet")
		expectCondition(t, db, ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, "")
		e.expectPodTemplateMode(name, PodsSlowStart)
		db = e.expectReady(name)
		expectCondition(t, db, ConditionProgressing, metav1.ConditionFalse, ReasonReconciled, "")
		expectCondition(t, db, ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, "")
	})

	t.Run("image-pull-error", func(t *testing.T) {
		name := podName(PodsImagePullError)
		db := e.waitCondition(name, ConditionDegraded, func(c *metav1.Condition) bool {
			return c.Status == metav1.ConditionTrue && (c.Reason == "ErrImagePull" || c.Reason == "ImagePullBackOff")
		})
		if msg := meta.FindStatusCondition(db.Status.Conditions, ConditionDegraded).Message; !strings.Contains(msg, `"postgres:`) {
			t.Errorf("Degraded message %q does not name the image", msg)
		}
		expectCondition(t, db, ConditionReady, metav1.ConditionFalse, ReasonWaitingForReplicas, "is Pending, not ready yet")
		expectCondition(t, db, ConditionProgressing, metav1.ConditionTrue, ReasonWaitingForReplicas, "")

		// Taking the mode away rolls the broken Pod over to a template
		// without it, which the fake node makes Ready.
		patch := client.MergeFrom(db.DeepCopy())
		delete(db.Annotations, PodsAnnotation)
		if err := e.c.Patch(e.ctx, db, patch); err != nil {
			t.Fatalf("removing the pods annotation: %v", err)
		}
		db = e.expectReady(name)
		expectCondition(t, db, ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, "")
		e.expectPodTemplateMode(name, "")
	})

	t.Run("crash-loop", func(t *testing.T) {
		name := podName(PodsCrashLoop)
		db := e.waitCondition(name, ConditionDegraded, func(c *metav1.Condition) bool {
			return c.Status == metav1.ConditionTrue && c.Reason == "CrashLoopBackOff"
		})
		if msg := meta.FindStatusCondition(db.Status.Conditions, ConditionDegraded).Message; !strings.Contains(msg, "restarted") {
			t.Errorf("Degraded message %q does not count restarts", msg)
		}
		expectCondition(t, db, ConditionReady, metav1.ConditionFalse, ReasonWaitingForReplicas, "is Running, not ready yet")
		// Degraded follows the Pod, not a poll: each restart count the Pod
		// reaches is in the Database's status before the Pod restarts
		// again. With the resync at its shipped 30 s, a controller that
		// only polled the Pods (looks 2, 4, 8, 16, 32, 62 s after it began
		// progressing) said 3 restarts while the Pod had 4 and 5: the
		// fourth restart comes 38 s in, the fifth 50 s.
		e.followRestarts(t, name, 4)
		// A Pod that keeps failing is no reconcile error: the controller
		// polls it, it does not back off with errors.
		for _, st := range e.sink.forDatabase(name) {
			if st.Type == StepResult && st.Result == "error" {
				t.Errorf("a crash-looping Pod made a reconcile fail: %+v", st)
			}
		}
	})
}

// followRestarts watches the crash-looping Pod of name until it has
// restarted upTo times, and fails if the Pod restarts again before the
// Database's Degraded condition has said its count: the status must follow
// what the Pod does, as kubectl shows it, not trail it. It logs how long
// after the Pod each count reached the status.
func (e *env) followRestarts(t *testing.T, name string, upTo int32) {
	t.Helper()
	said := map[int32]bool{}
	seen := map[int32]time.Time{}
	from := int32(-1)
	polltest.Until(e.t, deadline, fmt.Sprintf("Degraded to say each restart of %s-0 up to %d", name, upTo), func() (bool, error) {
		var pod corev1.Pod
		if err := e.c.Get(e.ctx, e.key(name+"-0"), &pod); err != nil || len(pod.Status.ContainerStatuses) == 0 {
			return false, err
		}
		now := pod.Status.ContainerStatuses[0].RestartCount
		if from < 0 {
			from = now
		}
		if _, ok := seen[now]; !ok {
			seen[now] = time.Now()
		}
		db := e.getDB(name)
		if c := meta.FindStatusCondition(db.Status.Conditions, ConditionDegraded); c != nil {
			if n := restartsSaid(c.Message); n > 0 && !said[n] {
				said[n] = true
				t.Logf("Degraded said %d restarts %s after the Pod had them", n, time.Since(seen[n]).Round(time.Millisecond))
			}
		}
		for n := from + 1; n < now; n++ {
			if !said[n] {
				t.Fatalf("the Pod restarted %d times before Degraded ever said %d restarts (it said %v)", now, n, said)
			}
		}
		return said[upTo], nil
	})
}

// restartsSaid reads the restart count in a Degraded message, 0 if none.
func restartsSaid(msg string) int32 {
	if strings.Contains(msg, "(restarted once)") {
		return 1
	}
	var n int32
	if i := strings.Index(msg, "(restarted "); i >= 0 {
		fmt.Sscanf(msg[i:], "(restarted %d times)", &n)
	}
	return n
}

// TestQuotaRefusalReachesDegraded: a replica the namespace's quota refuses
// has no Pod to report; the StatefulSet controller says why only in a
// Warning Event about the StatefulSet, which the controller watches. The
// Database says it in Degraded, with the reason and words kubectl describe
// shows, and goes back to Ready once the spec fits.
func TestQuotaRefusalReachesDegraded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	opts := e.testOptions()
	opts.ResyncPeriod = DefaultOptions().ResyncPeriod
	e.startController(opts)
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pod-budget"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	e.mustCreate(quota)
	// The API server enforces a quota once kube-controller-manager has
	// counted it.
	polltest.Until(e.t, deadline, "the quota counted", func() (bool, error) {
		err := e.c.Get(e.ctx, e.key(quota.Name), quota)
		return err == nil && quota.Status.Hard != nil, err
	})
	e.mustCreate(newDB("orders", 2, ""))
	e.waitCondition("orders", ConditionDegraded, func(c *metav1.Condition) bool {
		return c.Status == metav1.ConditionTrue && c.Reason == "FailedCreate"
	})
	// The first replica fits; the second never does.
	db := e.waitCondition("orders", ConditionReady, func(c *metav1.Condition) bool {
		return strings.HasPrefix(c.Message, "1/2 replicas ready.")
	})
	expectCondition(t, db, ConditionDegraded, metav1.ConditionTrue, "FailedCreate", `StatefulSet orders: FailedCreate: Create Pod orders-1 in StatefulSet orders failed error: pods "orders-1" is forbidden: exceeded quota: pod-budget, requested: pods=1, used: pods=1, limited: pods=1.`)
	expectCondition(t, db, ConditionReady, metav1.ConditionFalse, ReasonWaitingForReplicas, "1/2 replicas ready.")
	expectCondition(t, db, ConditionProgressing, metav1.ConditionTrue, ReasonWaitingForReplicas, "")
	var woken bool
	for _, s := range e.sink.forDatabase("orders") {
		woken = woken || (s.Type == StepReconcileStart && s.WokenBy != nil && s.WokenBy.Kind == "Event" && s.Watch == WatchWatches)
	}
	if !woken {
		t.Errorf("no reconcile was woken by the StatefulSet's Warning Event through Watches: %s", describe(e.sink.forDatabase("orders")))
	}

	patch := client.MergeFrom(db.DeepCopy())
	db.Spec.Replicas = 1
	if err := e.c.Patch(e.ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	db = e.expectReady("orders")
	expectCondition(t, db, ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, "")
}

// podName names the test Database of a pods mode.
func podName(mode string) string {
	if mode == "" {
		return "plain"
	}
	return mode
}

// waitCondition waits until the Database's condition typ satisfies ok for
// its current generation and returns the Database as it was then.
func (e *env) waitCondition(name, typ string, ok func(*metav1.Condition) bool) *dbv1.Database {
	e.t.Helper()
	var db dbv1.Database
	polltest.Until(e.t, deadline, "database "+name+" condition "+typ, func() (bool, error) {
		if err := e.c.Get(e.ctx, e.key(name), &db); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(db.Status.Conditions, typ)
		return c != nil && c.ObservedGeneration == db.Generation && ok(c), nil
	})
	return &db
}

// expectCondition checks one condition; msg, when set, must be part of its
// message.
func expectCondition(t *testing.T, db *dbv1.Database, typ string, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	c := meta.FindStatusCondition(db.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msg) {
		t.Errorf("%s condition %s = %+v, want %s %s containing %q", db.Name, typ, c, status, reason, msg)
	}
}

// expectPodTemplateMode checks the pods mode on the StatefulSet's Pod
// template and on its Pods.
func (e *env) expectPodTemplateMode(name, mode string) {
	e.t.Helper()
	var s appsv1.StatefulSet
	if err := e.c.Get(e.ctx, e.key(name), &s); err != nil {
		e.t.Fatal(err)
	}
	if got := templatePodsMode(&s); got != mode {
		e.t.Errorf("StatefulSet %s Pod template pods mode %q, want %q", name, got, mode)
	}
	polltest.Until(e.t, deadline, "the Pods of "+name+" with pods mode "+orDefault(mode), func() (bool, error) {
		var pods corev1.PodList
		if err := e.c.List(e.ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels(selectorLabels(newDB(name, 1, "")))); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Annotations[PodsAnnotation] != mode || p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return len(pods.Items) > 0, nil
	})
}

// fixedClock is a Clock that always says the same time.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }
