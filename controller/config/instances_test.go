package config_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web/session"
)

// namespacesSeen records the namespaces of every step a controller traced.
type namespacesSeen struct {
	mu   sync.Mutex
	seen map[string]int
}

func (s *namespacesSeen) Emit(st controller.Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]int{}
	}
	s.seen[st.Object.Namespace]++
}

func (s *namespacesSeen) count(ns string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[ns]
}

// startController runs the controller as cfg, for instance's namespaces
// only, as oplab does without --all-namespaces; the test stops it.
func startController(t *testing.T, cfg *rest.Config, instance string) *controller.Runner {
	t.Helper()
	r, _ := startControllerSeen(t, cfg, instance)
	return r
}

func startControllerSeen(t *testing.T, cfg *rest.Config, instance string) (*controller.Runner, *namespacesSeen) {
	t.Helper()
	seen := &namespacesSeen{}
	opts := controller.DefaultOptions()
	opts.Sink = seen
	opts.NamespaceSelector = labels.SelectorFromSet(labels.Set{session.InstanceLabel: instance})
	r := controller.NewRunner(cfg, opts)
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("starting the controller of instance %s: %v", instance, err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r, seen
}

// TestTwoInstancesKeepToTheirOwn runs two oplab controllers on one cluster,
// instances "one" and "two" (prefixes one- and two-), as finding (e) did:
// a learner of two pauses their namespace and deletes a Database. One,
// which watches the same API server, never finalizes it: the Database
// waits, held by its finalizer, until two resumes. Without the instance
// scoping one reconciles it at once (the finding).
func TestTwoInstancesKeepToTheirOwn(t *testing.T) {
	admin, _ := installed(t)
	ctx := context.Background()
	cfg := shared.cl.Config()
	_, seenOne := startControllerSeen(t, cfg, "one")
	two, seenTwo := startControllerSeen(t, cfg, "two")

	mk := func(instance string) string {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: instance + "-", Labels: map[string]string{
			session.LabLabel: "true", session.InstanceLabel: instance, session.PodSecurityEnforce: "restricted"}}}
		if err := admin.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, n) })
		return n.Name
	}
	nsOne, nsTwo := mk("one"), mk("two")
	dbOne := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: nsOne, Name: "shop"}, Spec: dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 1}}
	dbTwo := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: nsTwo, Name: "shop"}, Spec: dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 1}}
	for _, db := range []*dbv1.Database{dbOne, dbTwo} {
		if err := admin.Create(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, admin, dbOne)
	waitReady(t, admin, dbTwo)

	// Two's learner pauses and deletes; then one's learner deletes theirs.
	// One sees its own delete through to the end: had it watched two's
	// namespace, two's earlier delete would have been finalized by now.
	two.PauseNamespace(nsTwo)
	if err := admin.Delete(ctx, dbTwo); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, dbOne); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one to finalize its own Database", func(ctx context.Context) error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(dbOne), &dbv1.Database{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	var held dbv1.Database
	if err := admin.Get(ctx, client.ObjectKeyFromObject(dbTwo), &held); err != nil {
		t.Fatalf("two's paused Database after one finalized its own: %v (finalized by one?)", err)
	}
	if held.DeletionTimestamp == nil || len(held.Finalizers) == 0 {
		t.Errorf("two's paused Database: deleting %v, finalizers %v; want held by its finalizer", held.DeletionTimestamp, held.Finalizers)
	}
	if n := seenOne.count(nsTwo); n > 0 {
		t.Errorf("instance one traced %d steps in two's namespace %s", n, nsTwo)
	}
	if n := seenTwo.count(nsOne); n > 0 {
		t.Errorf("instance two traced %d steps in one's namespace %s", n, nsOne)
	}

	// Two resumes: its own controller finishes the delete.
	two.ResumeNamespace(nsTwo)
	eventually(t, "two to finalize its Database once resumed", func(ctx context.Context) error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(dbTwo), &dbv1.Database{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}
