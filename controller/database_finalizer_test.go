package controller

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// expectChildrenCollected waits until the garbage collector has removed the
// Database's children and its Pods.
func (e *env) expectChildrenCollected(name string) {
	e.t.Helper()
	e.expectGone(&appsv1.StatefulSet{}, name)
	e.expectGone(&corev1.Service{}, name)
	e.expectGone(&corev1.Secret{}, SecretName(name))
	polltest.Until(e.t, deadline, "the Pods of "+name+" gone", func() (bool, error) {
		var pods corev1.PodList
		err := e.c.List(e.ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels{LabelDatabase: name})
		return err == nil && len(pods.Items) == 0, err
	})
}

// expectSnapshot returns the final snapshot ConfigMap of name.
func (e *env) expectSnapshot(name string) *corev1.ConfigMap {
	e.t.Helper()
	var cm corev1.ConfigMap
	if err := e.c.Get(e.ctx, e.key(SnapshotName(name)), &cm); err != nil {
		e.t.Fatalf("snapshot of %s: %v", name, err)
	}
	return &cm
}

func TestDeleteDrainsSnapshotsAndLetsGo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startController(e.testOptions())
	db := newDB("doomed", 2, "")
	e.mustCreate(db)
	db = e.expectReady("doomed")

	if err := e.c.Delete(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	e.expectGone(&dbv1.Database{}, "doomed")
	e.expectChildrenCollected("doomed")
	// The reconcile that removed the finalizer records "removed" after its
	// write has let the Database go; the next one, woken by the delete,
	// comes after it on the trace. Once that one is in, the phases are too.
	polltest.Until(e.t, deadline, "a reconcile finding the Database gone", func() (bool, error) {
		return slices.ContainsFunc(e.sink.forDatabase("doomed"), func(s Step) bool {
			return s.Type == StepFetch && s.Found == "not-found"
		}), nil
	})

	cm := e.expectSnapshot("doomed")
	if len(cm.OwnerReferences) != 0 {
		t.Errorf("snapshot has ownerReferences %v: the garbage collector would delete it", cm.OwnerReferences)
	}
	if !strings.Contains(cm.Data["spec"], "replicas: 2") || !strings.Contains(cm.Data["spec"], "engine: postgres") {
		t.Errorf("snapshot spec = %q, want the Database's spec", cm.Data["spec"])
	}
	// Marking an object with finalizers for deletion bumps its generation:
	// the snapshot is of generation 2, the spec as it was when deleted.
	if cm.Data["generation"] != "2" || cm.Data["time"] == "" {
		t.Errorf("snapshot generation %q time %q", cm.Data["generation"], cm.Data["time"])
	}

	// The phases came in order: drained to zero Pods, snapshot, finalizer removed.
	var phases []string
	for _, s := range e.sink.forDatabase("doomed") {
		if s.Type == StepFinalizer {
			phases = append(phases, s.Phase+": "+s.Message)
		}
	}
	order := []string{"added", "draining: dropping connections: 0 Pod(s) left", "snapshot", "removed"}
	i := 0
	for _, p := range phases {
		if i < len(order) && strings.HasPrefix(p, order[i]) {
			i++
		}
	}
	if i != len(order) {
		t.Errorf("finalizer phases %q: want, in order, %q", phases, order)
	}
	steps := e.sink.forDatabase("doomed")
	if !slices.ContainsFunc(steps, func(s Step) bool {
		return s.Type == StepStatus && slices.ContainsFunc(s.Conditions, func(c ConditionChange) bool {
			return c.Type == ConditionReady && c.To == "False" && c.Reason == ReasonDeleting
		})
	}) {
		t.Errorf("no status step set Ready=False/%s:\n%s", ReasonDeleting, describe(steps))
	}
}

func TestControllerStoppedDuringDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("pending", 1, ""))
	e.mustCreate(newDB("hatch", 1, ""))
	e.expectReady("pending")
	e.expectReady("hatch")

	if err := r.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	for _, name := range []string{"pending", "hatch"} {
		if err := e.c.Delete(e.ctx, e.getDB(name)); err != nil {
			t.Fatal(err)
		}
	}
	// With nobody to run the finalizer, the Databases hang in Terminating.
	for _, name := range []string{"pending", "hatch"} {
		db := e.getDB(name)
		if db.DeletionTimestamp.IsZero() || !slices.Contains(db.Finalizers, Finalizer) {
			t.Fatalf("%s: deletionTimestamp %v finalizers %v, want Terminating with our finalizer", name, db.DeletionTimestamp, db.Finalizers)
		}
		if got := kstatusOf(t, db); got != status.TerminatingStatus {
			t.Errorf("kstatus of %s = %s, want Terminating", name, got)
		}
	}

	// The escape hatch: remove the finalizer by hand. The Database goes,
	// without its snapshot.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := sharedCluster(t).WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sharedCluster(t).KubectlPath(), "--kubeconfig", kubeconfig, "-n", e.ns,
		"patch", "database", "hatch", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	e.expectGone(&dbv1.Database{}, "hatch")
	e.expectChildrenCollected("hatch")

	// A fresh controller finishes the pending deletion properly.
	if err := r.Start(e.ctx); err != nil {
		t.Fatalf("restarting: %v", err)
	}
	e.expectGone(&dbv1.Database{}, "pending")
	e.expectSnapshot("pending")
	e.expectChildrenCollected("pending")

	var cm corev1.ConfigMap
	if err := e.c.Get(e.ctx, e.key(SnapshotName("hatch")), &cm); !apierrors.IsNotFound(err) {
		t.Errorf("snapshot of the force-deleted Database: err %v, want NotFound (the escape hatch skips it)", err)
	}
}

// TestDeletingTheNamespaceDoesNotHang deletes a whole namespace holding a
// Ready Database: no snapshot can be created in a terminating namespace, so
// the controller must let go instead of holding the namespace forever.
func TestDeletingTheNamespaceDoesNotHang(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	e := newEnv(t)
	e.startController(e.testOptions())
	e.mustCreate(newDB("tenant", 1, ""))
	e.expectReady("tenant")

	ns := &corev1.Namespace{}
	if err := e.c.Get(e.ctx, client.ObjectKey{Name: e.ns}, ns); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, ns); err != nil {
		t.Fatal(err)
	}
	polltest.Until(e.t, deadline, "namespace "+e.ns+" gone", func() (bool, error) {
		err := e.c.Get(e.ctx, client.ObjectKey{Name: e.ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, client.IgnoreNotFound(err)
	})
	skipped := false
	for _, s := range e.sink.forDatabase("tenant") {
		if s.Type == StepFinalizer && s.Phase == "skipped" && strings.Contains(s.Message, "namespace terminating") {
			skipped = true
		}
	}
	if !skipped {
		t.Errorf("no finalizer step said the snapshot was skipped for the terminating namespace:\n%s", describe(e.sink.forDatabase("tenant")))
	}
}

// frozenDatabase answers every read of the Database with the same copy, as
// an informer cache would that has not seen the Database go.
type frozenDatabase struct {
	client.Client
	db *dbv1.Database
}

func (f frozenDatabase) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if db, ok := obj.(*dbv1.Database); ok && key.Name == f.db.Name {
		f.db.DeepCopyInto(db)
		return nil
	}
	return f.Client.Get(ctx, key, obj, opts...)
}

// TestStaleCopyAfterTheFinalizerIsGone reconciles a Database that is gone
// from a copy that still has its finalizer: the reconcile must converge,
// without an error and without writing the snapshot again.
func TestStaleCopyAfterTheFinalizerIsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustCreate(newDB("stale", 1, ""))
	opts := e.testOptions().withDefaults()
	live := newTracedReconciler(e.c, e.c, testScheme, &events.FakeRecorder{}, opts, newPauseGate())
	req := reconcile.Request{NamespacedName: e.key("stale")}
	if _, err := live.Reconcile(e.ctx, req); err != nil {
		t.Fatalf("first reconcile: %v", err)
	}
	if err := e.c.Delete(e.ctx, e.getDB("stale")); err != nil {
		t.Fatal(err)
	}
	terminating := e.getDB("stale")
	polltest.Until(e.t, deadline, "the Database finalized", func() (bool, error) {
		if _, err := live.Reconcile(e.ctx, req); err != nil {
			return false, err
		}
		err := e.c.Get(e.ctx, e.key("stale"), &dbv1.Database{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	e.expectSnapshot("stale")

	mark := e.sink.len()
	stale := newTracedReconciler(frozenDatabase{e.c, terminating}, e.c, testScheme, &events.FakeRecorder{}, opts, newPauseGate())
	if _, err := stale.Reconcile(e.ctx, req); err != nil {
		t.Errorf("reconcile of a stale copy: %v", err)
	}
	for _, s := range e.sink.since(mark, "stale") {
		if s.Type == StepAction && s.Target.Kind == "ConfigMap" && (s.Outcome == OutcomeCreated || s.Outcome == OutcomeUpdated) {
			t.Errorf("the snapshot was written again: %+v", s)
		}
		if s.Result == "error" {
			t.Errorf("error result: %s", s.Error)
		}
	}
}
