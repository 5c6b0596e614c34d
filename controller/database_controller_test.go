package controller

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// kstatusOf computes kstatus's verdict on a Database, as kubectl-style tools
// (kpt, Flux, cli-utils' applier) would.
func kstatusOf(t testing.TB, db *dbv1.Database) status.Status {
	t.Helper()
	db = db.DeepCopy()
	db.SetGroupVersionKind(dbv1.GroupVersion.WithKind("Database"))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return res.Status
}

func TestCreateBecomesReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("orders", 2, ""))

	db := e.expectReady("orders")
	if want := "orders." + e.ns + ".svc:5432"; db.Status.Endpoint != want {
		t.Errorf("endpoint = %q, want %q", db.Status.Endpoint, want)
	}
	if db.Status.SecretName != SecretName("orders") || db.Status.ReadyReplicas != 2 {
		t.Errorf("secretName %q readyReplicas %d, want %q and 2", db.Status.SecretName, db.Status.ReadyReplicas, SecretName("orders"))
	}
	for _, c := range db.Status.Conditions {
		if c.ObservedGeneration != db.Generation {
			t.Errorf("condition %s observedGeneration %d, want %d", c.Type, c.ObservedGeneration, db.Generation)
		}
	}
	if db.Spec.Engine != dbv1.EnginePostgres || db.Spec.Storage.String() != "1Gi" {
		t.Errorf("defaults not applied by the API server: engine %q storage %s", db.Spec.Engine, db.Spec.Storage.String())
	}
	if !slices.Contains(db.Finalizers, Finalizer) {
		t.Errorf("finalizers = %v, want %s", db.Finalizers, Finalizer)
	}
	if got := kstatusOf(t, db); got != status.CurrentStatus {
		t.Errorf("kstatus = %s, want Current", got)
	}

	// Every child is controlled by the Database and blocks its deletion
	// until the garbage collector has dealt with the child.
	for _, obj := range []client.Object{&corev1.Secret{}, &corev1.Service{}, &appsv1.StatefulSet{}} {
		name := "orders"
		if _, ok := obj.(*corev1.Secret); ok {
			name = SecretName("orders")
		}
		if err := e.c.Get(e.ctx, e.key(name), obj); err != nil {
			t.Fatalf("child %T %s: %v", obj, name, err)
		}
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.UID != db.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("%T %s controller reference = %+v, want the Database with blockOwnerDeletion", obj, name, ref)
		}
	}

	// The lab shows the Kubernetes Events the controller recorded.
	polltest.Until(e.t, deadline, "a Created event on the Database", func() (bool, error) {
		var list eventsv1.EventList
		if err := e.c.List(e.ctx, &list, client.InNamespace(e.ns)); err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == "orders" && ev.Reason == "Created" && ev.ReportingController == RecorderName {
				return true, nil
			}
		}
		return false, nil
	})

	// The trace tells the story: events, a fetch, diffs, creates, a status write.
	steps := e.sink.forDatabase("orders")
	for _, want := range []func(Step) bool{
		func(s Step) bool { return s.Type == StepEvent && s.Event == "create" && s.Object.Kind == "Database" },
		func(s Step) bool { return s.Type == StepEvent && s.Object.Kind == "StatefulSet" },
		func(s Step) bool {
			return s.Type == StepReconcileStart && s.Trigger == TriggerEvent && s.ReconcileID != ""
		},
		func(s Step) bool { return s.Type == StepFetch && s.Found == "found" },
		func(s Step) bool { return s.Type == StepFinalizer && s.Phase == "added" },
		func(s Step) bool {
			return s.Type == StepDiff && len(s.Differences) == 1 && s.Differences[0] == "missing"
		},
		func(s Step) bool {
			return s.Type == StepAction && s.Outcome == OutcomeCreated && s.Target.Kind == "StatefulSet"
		},
		func(s Step) bool {
			return s.Type == StepStatus && !s.Skipped && len(s.Conditions) > 0 && s.ObservedGeneration == 1
		},
		func(s Step) bool { return s.Type == StepResult && s.Result == "done" && s.RequeueAfter > 0 },
	} {
		if !slices.ContainsFunc(steps, want) {
			t.Errorf("trace lacks an expected step; got:\n%s", describe(steps))
			break
		}
	}
}

func TestSpecChangeIsFollowedByObservedGeneration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("scale", 1, ""))
	db := e.expectReady("scale")

	patch := client.MergeFrom(db.DeepCopy())
	db.Spec.Replicas = 3
	if err := e.c.Patch(e.ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	if db.Generation != 2 {
		t.Fatalf("generation after a spec change = %d, want 2", db.Generation)
	}
	db = e.expectReady("scale")
	if db.Status.ObservedGeneration != 2 || db.Status.ReadyReplicas != 3 {
		t.Errorf("observedGeneration %d readyReplicas %d, want 2 and 3", db.Status.ObservedGeneration, db.Status.ReadyReplicas)
	}
	var sts appsv1.StatefulSet
	if err := e.c.Get(e.ctx, e.key("scale"), &sts); err != nil || *sts.Spec.Replicas != 3 {
		t.Errorf("statefulset replicas = %v (err %v), want 3", sts.Spec.Replicas, err)
	}
	var sawDiff bool
	for _, s := range e.sink.forDatabase("scale") {
		if s.Type == StepDiff && slices.Contains(s.Differences, "replicas 1 → 3") {
			sawDiff = true
		}
	}
	if !sawDiff {
		t.Error("trace has no diff step saying replicas 1 → 3")
	}
}

func TestConvergedReconcileWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("calm", 1, ""))
	e.expectReady("calm")
	e.expectSettled("calm")
	before := childVersions(t, e, "calm")

	// Touch the Database (an annotation: no spec change) to get a reconcile.
	mark := e.sink.len()
	db := e.getDB("calm")
	patch := client.MergeFrom(db.DeepCopy())
	db.Annotations = map[string]string{"touched": "yes"}
	if err := e.c.Patch(e.ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	touchedVersion := db.ResourceVersion
	polltest.Until(e.t, deadline, "a reconcile after the touch", func() (bool, error) {
		return slices.ContainsFunc(e.sink.since(mark, "calm"), func(s Step) bool { return s.Type == StepResult }), nil
	})

	for _, s := range e.sink.since(mark, "calm") {
		if s.Type == StepAction && s.Outcome != OutcomeUnchanged {
			t.Errorf("converged reconcile acted: %s %s %s", s.Action, s.Target.Name, s.Outcome)
		}
		if s.Type == StepStatus && !s.Skipped {
			t.Errorf("converged reconcile wrote status: %+v", s.Conditions)
		}
	}
	if got := e.getDB("calm").ResourceVersion; got != touchedVersion {
		t.Errorf("database resourceVersion moved from %s to %s: something was written", touchedVersion, got)
	}
	if after := childVersions(t, e, "calm"); !maps.Equal(before, after) {
		t.Errorf("children were written: before %v after %v", before, after)
	}
}

func childVersions(t testing.TB, e *env, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for kind, obj := range map[string]client.Object{
		"Secret/" + SecretName(name): &corev1.Secret{}, "Service/" + name: &corev1.Service{}, "StatefulSet/" + name: &appsv1.StatefulSet{},
	} {
		n := kind[strings.Index(kind, "/")+1:]
		if err := e.c.Get(e.ctx, e.key(n), obj); err != nil {
			t.Fatalf("getting %s: %v", kind, err)
		}
		out[kind] = obj.GetResourceVersion()
	}
	return out
}

func TestIdleResyncWritesNothing(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("idle", 1, ""))
	e.expectReady("idle")
	e.expectSettled("idle")
	version := e.getDB("idle").ResourceVersion
	mark := e.sink.len()

	// Two resyncs must come and go without any event.
	polltest.Until(e.t, deadline, "two resyncs", func() (bool, error) {
		n := 0
		for _, s := range e.sink.since(mark, "idle") {
			if s.Type == StepResult && n >= 0 {
				n++
			}
		}
		return countSteps(e.sink.since(mark, "idle"), func(s Step) bool {
			return s.Type == StepReconcileStart && s.Trigger == TriggerResync
		}) >= 2 && n >= 2, nil
	})
	for _, s := range e.sink.since(mark, "idle") {
		if s.Type == StepStatus && !s.Skipped {
			t.Errorf("an idle resync wrote status: %+v", s.Conditions)
		}
	}
	if got := e.getDB("idle").ResourceVersion; got != version {
		t.Errorf("resourceVersion moved from %s to %s during idle resyncs", version, got)
	}
}

func TestDriftIsPutBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("drift", 1, ""))
	e.expectReady("drift")

	// A deleted child comes back.
	e.deleteServiceAndWaitForIt("drift")

	// Replicas changed by hand are put back.
	var sts appsv1.StatefulSet
	if err := e.c.Get(e.ctx, e.key("drift"), &sts); err != nil {
		t.Fatal(err)
	}
	handGen := sts.Generation + 1
	patch := client.MergeFrom(sts.DeepCopy())
	sts.Spec.Replicas = ptr.To[int32](4)
	if err := e.c.Patch(e.ctx, &sts, patch); err != nil {
		t.Fatal(err)
	}
	polltest.Until(e.t, deadline, "replicas put back to 1", func() (bool, error) {
		var got appsv1.StatefulSet
		err := e.c.Get(e.ctx, e.key("drift"), &got)
		return err == nil && got.Generation > handGen && *got.Spec.Replicas == 1, err
	})
	steps := e.sink.forDatabase("drift")
	if !slices.ContainsFunc(steps, func(s Step) bool {
		return s.Type == StepDiff && slices.Contains(s.Differences, "replicas 4 → 1")
	}) {
		t.Errorf("trace has no diff replicas 4 → 1:\n%s", describe(steps))
	}
	if !slices.ContainsFunc(steps, func(s Step) bool {
		return s.Type == StepEvent && s.Object.Kind == "Service" && s.Event == "delete"
	}) {
		t.Error("trace has no delete event for the Service")
	}
	e.expectReady("drift")
}

// staleReader answers NotFound for every child, as an informer cache that
// has not caught up yet would.
type staleReader struct{ client.Client }

func (s staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*dbv1.Database); ok {
		return s.Client.Get(ctx, key, obj, opts...)
	}
	return apierrors.NewNotFound(schemaGR(obj), key.Name)
}

func TestAlreadyExistsConverges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustCreate(newDB("twice", 1, ""))
	newReconciler := func(c client.Client) reconcile.Reconciler {
		opts := e.testOptions().withDefaults()
		return newTracedReconciler(c, e.c, testScheme, &events.FakeRecorder{}, opts, newPauseGate())
	}
	req := reconcile.Request{NamespacedName: e.key("twice")}
	if _, err := newReconciler(e.c).Reconcile(e.ctx, req); err != nil {
		t.Fatalf("first reconcile: %v", err)
	}

	// The second reconciler's cache has not seen the children: it creates
	// them again, gets AlreadyExists, and must converge, not fail.
	mark := e.sink.len()
	res, err := newReconciler(staleReader{e.c}).Reconcile(e.ctx, req)
	if err != nil {
		t.Fatalf("reconcile with a stale cache: %v", err)
	}
	if res.RequeueAfter == 0 {
		t.Errorf("result %+v: want the periodic resync", res)
	}
	steps := e.sink.since(mark, "twice")
	if got := countSteps(steps, func(s Step) bool { return s.Type == StepAction && s.Outcome == OutcomeAlreadyExists }); got != 3 {
		t.Errorf("%d AlreadyExists outcomes, want 3 (one per child):\n%s", got, describe(steps))
	}
	if slices.ContainsFunc(steps, func(s Step) bool { return s.Outcome == OutcomeError || s.Result == "error" }) {
		t.Errorf("AlreadyExists was treated as an error:\n%s", describe(steps))
	}
	db := e.getDB("twice")
	if c := meta.FindStatusCondition(db.Status.Conditions, ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v, want False", c)
	}
}

func TestInvalidSpecIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name  string
		spec  map[string]any
		field string
	}{
		{"replicas zero", map[string]any{"replicas": 0}, "spec.replicas"},
		{"replicas six", map[string]any{"replicas": 6}, "spec.replicas"},
		{"unknown engine", map[string]any{"engine": "oracle"}, "spec.engine"},
		{"negative storage", map[string]any{"storage": "-1Gi"}, "spec.storage"},
		{"zero storage", map[string]any{"storage": "0"}, "spec.storage"},
		{"storage not a quantity", map[string]any{"storage": "lots"}, "spec.storage"},
		{"version not a tag", map[string]any{"version": "17 beta!"}, "spec.version"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": dbv1.GroupVersion.String(), "kind": "Database",
				"metadata": map[string]any{"name": "bad-" + string(rune('a'+i)), "namespace": e.ns},
				"spec":     tt.spec,
			}}
			err := e.c.Create(e.ctx, u)
			if err == nil {
				t.Fatalf("spec %v was accepted", tt.spec)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q: want Invalid naming %s", err, tt.field)
			}
		})
	}

	t.Run("engine is immutable", func(t *testing.T) {
		db := newDB("mysql-one", 1, "")
		db.Spec.Engine = dbv1.EngineMySQL
		e.mustCreate(db)
		patch := client.MergeFrom(db.DeepCopy())
		db.Spec.Engine = dbv1.EnginePostgres
		err := e.c.Patch(e.ctx, db, patch)
		if err == nil || !strings.Contains(err.Error(), "spec.engine") {
			t.Errorf("changing the engine: error %v, want one naming spec.engine", err)
		}
	})

	t.Run("valid storage as an integer", func(t *testing.T) {
		db := newDB("int-storage", 1, "")
		db.Spec.Storage = resource.MustParse("1073741824")
		e.mustCreate(db)
	})
}

func TestKubectlWaitForReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("waited", 1, ""))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := sharedCluster(t).WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sharedCluster(t).KubectlPath(), "--kubeconfig", kubeconfig, "-n", e.ns,
		"wait", "--for=condition=Ready", "database/waited", "--timeout=180s")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl wait: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "condition met") {
		t.Errorf("kubectl wait said %q, want condition met", out)
	}
	// kubectl get shows the printer columns.
	out, err = exec.Command(sharedCluster(t).KubectlPath(), "--kubeconfig", kubeconfig, "-n", e.ns, "get", "databases").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	for _, col := range []string{"READY", "REPLICAS", "ENDPOINT", "AGE", "waited." + e.ns + ".svc:5432"} {
		if !strings.Contains(string(out), col) {
			t.Errorf("kubectl get databases lacks %s:\n%s", col, out)
		}
	}
}

func TestKstatusInProgressWhileConverging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("judged", 1, ""))
	db := e.expectReady("judged")
	if got := kstatusOf(t, db); got != status.CurrentStatus {
		t.Fatalf("kstatus of a Ready Database = %s, want Current", got)
	}

	// With the controller stopped, a spec change stays unobserved for as
	// long as we look: generation 2, observedGeneration 1. That is the
	// state every Database passes through while the controller converges.
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(db.DeepCopy())
	db.Spec.Replicas = 2
	if err := e.c.Patch(e.ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	if got := kstatusOf(t, db); got != status.InProgressStatus {
		t.Errorf("kstatus with generation %d observed %d = %s, want InProgress",
			db.Generation, db.Status.ObservedGeneration, got)
	}

	// Ready=False for the current generation is InProgress too.
	notReady := db.DeepCopy()
	notReady.Status = computeStatus(notReady, observation{sts: sts(2, 1, 2, 1)}, time.Now())
	if got := kstatusOf(t, notReady); got != status.InProgressStatus {
		t.Errorf("kstatus of %+v = %s, want InProgress", notReady.Status.Conditions, got)
	}

	if err := r.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := kstatusOf(t, e.expectReady("judged")); got != status.CurrentStatus {
		t.Errorf("kstatus after converging = %s, want Current", got)
	}
}

func schemaGR(obj client.Object) schema.GroupResource {
	gvks, _, _ := testScheme.ObjectKinds(obj)
	if len(gvks) == 0 {
		return schema.GroupResource{}
	}
	return schema.GroupResource{Group: gvks[0].Group, Resource: strings.ToLower(gvks[0].Kind) + "s"}
}

func countSteps(steps []Step, f func(Step) bool) int {
	n := 0
	for _, s := range steps {
		if f(s) {
			n++
		}
	}
	return n
}
