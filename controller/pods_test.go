package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
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

// countingReader counts List calls and answers with no Pods.
type countingReader struct {
	client.Reader
	lists int
}

func (c *countingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	c.lists++
	return nil
}

// TestLookAtPodsOnlyWhenLate: the Pods are read only once the replicas are
// late, so a Database the fake node makes Ready at once costs no request.
func TestLookAtPodsOnlyWhenLate(t *testing.T) {
	progressing := func(since time.Time) *dbv1.Database {
		return testDB(1, 1, cond(ConditionProgressing, metav1.ConditionTrue, ReasonWaitingForReplicas, since, 1))
	}
	tests := []struct {
		name  string
		db    *dbv1.Database
		sts   *appsv1.StatefulSet
		lists int
	}{
		{name: "no StatefulSet yet", db: progressing(t0), lists: 0},
		{name: "replicas ready", db: progressing(t0), sts: sts(1, 1, 1, 1), lists: 0},
		{name: "progressing for less than the poll", db: progressing(t1.Add(-progressPoll / 2)), sts: sts(1, 1, 1, 0), lists: 0},
		{name: "not progressing yet", db: testDB(1, 1), sts: sts(1, 1, 1, 0), lists: 0},
		{name: "late", db: progressing(t1.Add(-progressPoll)), sts: sts(1, 1, 1, 0), lists: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := &countingReader{}
			r := &DatabaseReconciler{APIReader: reader, Clock: fixedClock(t1)}
			if _, err := r.lookAtPods(context.Background(), tt.db, tt.sts); err != nil {
				t.Fatal(err)
			}
			if reader.lists != tt.lists {
				t.Errorf("Pods listed %d times, want %d", reader.lists, tt.lists)
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
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
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
		// A Pod that keeps failing is no reconcile error: the controller
		// polls it, it does not back off with errors.
		for _, st := range e.sink.forDatabase(name) {
			if st.Type == StepResult && st.Result == "error" {
				t.Errorf("a crash-looping Pod made a reconcile fail: %+v", st)
			}
		}
	})
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
	e.waitFor("database "+name+" condition "+typ, func() (bool, error) {
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
	e.waitFor("the Pods of "+name+" with pods mode "+orDefault(mode), func() (bool, error) {
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
