package config_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/internal/polltest"
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
	opts.NamespaceSelector = labels.SelectorFromSet(labels.Set{labns.InstanceLabel: instance})
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
	inTurn(t)
	admin, _ := installed(t)
	ctx := context.Background()
	cfg := shared.cl.Config()
	_, seenOne := startControllerSeen(t, cfg, "one")
	two, seenTwo := startControllerSeen(t, cfg, "two")

	mk := func(instance string) string {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: instance + "-", Labels: map[string]string{
			labns.LabLabel: "true", labns.InstanceLabel: instance, labns.PodSecurityEnforce: "restricted"}}}
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
	polltest.Until(t, deadline, "one to finalize its own Database", func(ctx context.Context) error {
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
	polltest.Until(t, deadline, "two to finalize its Database once resumed", func(ctx context.Context) error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(dbTwo), &dbv1.Database{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// TestASecondInstanceFromTheManifests installs a second oplab from
// controller/config/second-instance beside the first (default), as a
// platform team running two classes would, and tries each instance's
// ServiceAccount on the other's namespaces: each makes and writes in its
// own, and the API server refuses it the other's, by its own instance's
// policy.
func TestASecondInstanceFromTheManifests(t *testing.T) {
	inTurn(t)
	admin, kubeconfig := installed(t)
	out := kubectl(t, "--kubeconfig", kubeconfig, "apply", "-k", "second-instance")
	t.Logf("kubectl apply -k second-instance:\n%s", out)
	t.Cleanup(func() {
		_ = exec.Command(shared.cl.KubectlPath(), "--kubeconfig", kubeconfig, "delete", "-k", "second-instance", "--wait=false").Run()
	})
	ctx := context.Background()
	clientOf := func(cfg *rest.Config) client.Client {
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	one := clientOf(oplabIdentity(t))
	var two client.Client
	polltest.Until(t, deadline, "instance lab2's ServiceAccount", func(context.Context) error {
		var sa corev1.ServiceAccount
		return admin.Get(ctx, client.ObjectKey{Namespace: "oplab-lab2", Name: "oplab-lab2"}, &sa)
	})
	two = clientOf(identityIn(t, "oplab-lab2", "oplab-lab2"))
	// A new policy takes effect once the API server's admission has loaded
	// it (about a second): until then lab2 would be held by RBAC alone.
	polltest.Until(t, deadline, "the policy oplab-instance-namespaces-lab2 to take effect", func(ctx context.Context) error {
		probe := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unlabelled-"}}
		err := two.Create(ctx, probe, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "oplab-instance-namespaces-lab2") {
			return fmt.Errorf("a dry-run create of an unlabelled namespace as lab2: %v", err)
		}
		return nil
	})

	labOne := labNamespace(t, one)
	labTwo := "lab2-" + strings.ToLower(rand.Text()[:8])
	twos := labns.KubeNamespaces{Client: two, Prefix: "lab2-", Roles: []string{"oplab-controller", "oplab-web"},
		Self: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "oplab-lab2", Namespace: "oplab-lab2"}}
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: labTwo}})
	})
	if err := twos.Create(ctx, labTwo, "cookie-hash"); err != nil {
		t.Fatalf("instance lab2 making its own learner namespace %s: %v", labTwo, err)
	}

	secret := func(namespace string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "probe-"}}
	}
	if err := two.Create(ctx, secret(labTwo)); err != nil {
		t.Errorf("instance lab2 writing a Secret in its own %s: %v", labTwo, err)
	}
	if err := one.Create(ctx, secret(labOne)); err != nil {
		t.Errorf("instance lab writing a Secret in its own %s: %v", labOne, err)
	}
	// Each is refused the other's: RBAC would let them (the other binds
	// only itself there, but the cluster role's bind lets either bind
	// itself), the instance policy does not.
	for _, c := range []struct {
		who, policy string
		c           client.Client
		theirs      string
	}{{"lab", "oplab-instance-namespaces", one, labTwo}, {"lab2", "oplab-instance-namespaces-lab2", two, labOne}} {
		t.Run(c.who+" in the other's namespace", func(t *testing.T) {
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: c.theirs, Name: "oplab-web-" + c.who},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "oplab-web"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "oplab", Namespace: ns}}}
			byInstancePolicy(t, c.policy, "binding oplab-web to itself in "+c.theirs, c.c.Create(ctx, rb))
			refused(t, "writing a Secret in "+c.theirs, c.c.Create(ctx, secret(c.theirs)))
			var theirNS corev1.Namespace
			if err := admin.Get(ctx, client.ObjectKey{Name: c.theirs}, &theirNS); err != nil {
				t.Fatal(err)
			}
			byInstancePolicy(t, c.policy, "deleting namespace "+c.theirs, c.c.Delete(ctx, &theirNS))
			stolenLabels := labns.PodSecurityLabels()
			stolenLabels[labns.LabLabel], stolenLabels[labns.InstanceLabel] = "true", map[string]string{"lab": "lab2", "lab2": "lab"}[c.who]
			stolen := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "stolen-", Labels: stolenLabels}}
			byInstancePolicy(t, c.policy, "making a namespace labelled with the other instance", c.c.Create(ctx, stolen))
		})
	}
}

// byInstancePolicy is refused, by the instance policy named policy.
func byInstancePolicy(t *testing.T, policy, what string, err error) {
	t.Helper()
	refused(t, what, err)
	if err != nil && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'") {
		t.Errorf("%s: refused by %v; want the policy %s", what, err, policy)
	}
}
