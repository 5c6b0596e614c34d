package config_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// oplabIdentity mints a token for oplab's ServiceAccount with the
// TokenRequest API, as the kubelet does for its Pod, and returns a config
// that carries that token and nothing else of the admin's.
func oplabIdentity(t *testing.T) *rest.Config {
	t.Helper()
	installed(t)
	return identity(t, "oplab")
}

// identity returns a config with only a fresh token of the ServiceAccount
// sa in oplab's namespace, after checking with the API server that this is
// who the token is, in no privileged group.
func identity(t *testing.T, sa string) *rest.Config {
	t.Helper()
	return identityIn(t, ns, sa)
}

// identityIn is identity for the ServiceAccount sa of namespace ns.
func identityIn(t *testing.T, ns, sa string) *rest.Config {
	t.Helper()
	adminCfg := shared.cl.Config()
	cs, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("minting a token for ServiceAccount %s/%s: %v", ns, sa, err)
	}
	cfg := &rest.Config{
		Host:            adminCfg.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: adminCfg.CAData},
		BearerToken:     tr.Status.Token,
		QPS:             200, Burst: 400,
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := as.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("asking the API server who the token is: %v", err)
	}
	u := review.Status.UserInfo
	if u.Username != "system:serviceaccount:"+ns+":"+sa {
		t.Fatalf("the token is %q, want ServiceAccount %s", u.Username, sa)
	}
	for _, g := range u.Groups {
		if g == "system:masters" {
			t.Fatalf("the token is in system:masters: %v", u.Groups)
		}
	}
	return cfg
}

// TestOplabMayNotDoMore asks the API server what oplab's ServiceAccount may
// do: in a learner namespace it made, the web side's needs are granted;
// in kube-system and default, none of the per-namespace powers; and
// nowhere anything that would let it take over the cluster.
func TestOplabMayNotDoMore(t *testing.T) {
	inTurn(t)
	cfg := oplabIdentity(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	lab := labNamespace(t, c)
	canI := func(verb, group, resource, name, namespace string) bool {
		t.Helper()
		res, sub, _ := strings.Cut(resource, "/")
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: res, Subresource: sub, Name: name, Namespace: namespace,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	type perm struct{ verb, group, resource, name string }
	// Granted everywhere (the policy, not RBAC, holds the namespace and
	// RoleBinding writes to oplab's own namespaces: TestOplabIsConfined).
	for _, a := range []perm{
		{"create", "", "namespaces", ""},
		{"delete", "", "namespaces", ""},
		{"create", "rbac.authorization.k8s.io", "rolebindings", ""},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "oplab-web"},
		{"get", "apiextensions.k8s.io", "customresourcedefinitions", "databases.db.oplab.dev"},
		{"watch", "", "events", ""},
		{"watch", "", "pods", ""},
	} {
		if !canI(a.verb, a.group, a.resource, a.name, "") {
			t.Errorf("oplab may not %s %s.%s %s cluster-wide", a.verb, a.resource, a.group, a.name)
		}
	}
	// Granted in its learner namespace only, by the RoleBindings it made.
	perNamespace := []perm{
		{"create", "", "resourcequotas", ""},
		{"create", "", "serviceaccounts/token", ""},
		{"get", "", "secrets", ""},
		{"list", "", "secrets", ""},
		{"watch", "", "secrets", ""},
		{"create", "", "secrets", ""},
		{"delete", "", "secrets", ""},
		{"create", "rbac.authorization.k8s.io", "roles", ""},
		{"delete", "rbac.authorization.k8s.io", "rolebindings", ""},
		{"delete", "", "serviceaccounts", ""},
		{"delete", "", "pods", ""},
	}
	for _, a := range perNamespace {
		if !canI(a.verb, a.group, a.resource, a.name, lab) {
			t.Errorf("oplab may not %s %s.%s in its namespace %s", a.verb, a.resource, a.group, lab)
		}
		for _, elsewhere := range []string{"kube-system", "default", ""} {
			if canI(a.verb, a.group, a.resource, a.name, elsewhere) {
				t.Errorf("oplab may %s %s.%s in namespace %q, which is not its own", a.verb, a.resource, a.group, elsewhere)
			}
		}
	}
	denied := []perm{
		{"create", "apiextensions.k8s.io", "customresourcedefinitions", ""},
		{"update", "apiextensions.k8s.io", "customresourcedefinitions", "databases.db.oplab.dev"},
		{"get", "apiextensions.k8s.io", "customresourcedefinitions", "other.example.com"},
		{"create", "rbac.authorization.k8s.io", "clusterroles", ""},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", ""},
		{"escalate", "rbac.authorization.k8s.io", "roles", ""},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "cluster-admin"},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "admin"},
		{"impersonate", "", "users", ""},
		{"delete", "", "nodes", ""},
		{"create", "", "pods", ""},
		{"create", "", "pods/exec", ""},
		{"create", "apps", "deployments", ""},
		{"delete", "apps", "deployments", ""},
		{"*", "*", "*", ""},
	}
	for _, d := range denied {
		for _, where := range []string{lab, "kube-system", ""} {
			if canI(d.verb, d.group, d.resource, d.name, where) {
				t.Errorf("oplab may %s %s.%s %s in namespace %q, which it never needs", d.verb, d.resource, d.group, d.name, where)
			}
		}
	}
}

// stepErrors keeps the controller's trace steps that carry an error.
type stepErrors struct {
	mu   sync.Mutex
	errs []string
}

func (s *stepErrors) Emit(st controller.Step) {
	if st.Error == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf("%s %s: %s", st.Type, st.Action, st.Error))
}

func (s *stepErrors) forbidden() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.errs {
		// A namespace being deleted answers 403 too ("unable to create new
		// content … being terminated"): that is no RBAC refusal, and with
		// the controller watching every instance namespace it can meet one
		// an earlier test is deleting.
		if strings.Contains(e, "forbidden") && !strings.Contains(e, "because it is being terminated") && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// TestControllerRunsWithOnlyItsServiceAccount runs the real controller and
// the lab's own calls with nothing but oplab's ServiceAccount token, through
// a learner's whole round: a session namespace, the learner's kubectl
// identity, create → Ready → edit → drift → delete with the final snapshot,
// then the namespace's removal. Every call is refused unless the installed
// ClusterRoles grant it, so this proves they suffice.
func TestControllerRunsWithOnlyItsServiceAccount(t *testing.T) {
	inTurn(t)
	cfg := oplabIdentity(t)
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	// What oplab checks at start and in /readyz: the CRD, by name.
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "databases.db.oplab.dev"}, &crd); err != nil {
		t.Fatalf("reading the CRD as oplab: %v", err)
	}

	errs := &stepErrors{}
	opts := controller.DefaultOptions()
	opts.Sink = errs
	opts.NamespaceSelector = labels.SelectorFromSet(labels.Set{labns.InstanceLabel: "lab"})
	runner := controller.NewRunner(cfg, opts)
	if err := runner.Start(ctx); err != nil {
		t.Fatalf("starting the controller as oplab: %v", err)
	}
	t.Cleanup(func() {
		if err := runner.Stop(); err != nil {
			t.Error(err)
		}
	})

	// A session: the lab namespace, as controller/labns's KubeNamespaces makes
	// it: labelled, with oplab's own RoleBindings, its quota and
	// LimitRange; then the learner's kubectl identity, as the kubeconfig
	// download makes it.
	lab := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: labNamespace(t, c)}}
	var labs corev1.NamespaceList
	if err := c.List(ctx, &labs, client.MatchingLabels{"oplab.dev/lab": "true"}); err != nil || len(labs.Items) == 0 {
		t.Errorf("listing lab namespaces as oplab: %d, %v", len(labs.Items), err)
	}
	learnerKubeconfig(t, cfg, lab.Name)
	// Run my code: the learner code's own identity, made and held by the
	// manifests' policy, with nothing but oplab's token.
	if err := runner.GrantCode(ctx, lab.Name); err != nil {
		t.Errorf("giving learner code its identity as oplab: %v", err)
	}

	// create → Ready, as the lab's create form does.
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Name, Name: "shop"}, Spec: dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 1}}
	if err := c.Create(ctx, db); err != nil {
		t.Fatalf("creating a Database as oplab: %v", err)
	}
	waitReady(t, c, db)

	// edit: scale to 2 (a merge patch, like the lab's edit form).
	if err := c.Patch(ctx, db, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))); err != nil {
		t.Fatalf("editing the Database as oplab: %v", err)
	}
	waitReady(t, c, db)

	// drift: scale the StatefulSet and delete the Service behind the
	// controller's back; it puts both back.
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Name, Name: "shop"}}
	if err := c.Patch(ctx, sts, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":4}}`))); err != nil {
		t.Fatalf("scaling the StatefulSet as oplab: %v", err)
	}
	if err := c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Name, Name: "shop"}}); err != nil {
		t.Fatalf("deleting the Service as oplab: %v", err)
	}
	polltest.Until(t, deadline, "the controller to undo the drift", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return err
		}
		if r := ptr.Deref(sts.Spec.Replicas, 0); r != 2 {
			return fmt.Errorf("StatefulSet replicas %d", r)
		}
		return c.Get(ctx, client.ObjectKey{Namespace: lab.Name, Name: "shop"}, &corev1.Service{})
	})

	// What the lab's state watcher reads in a learner namespace: Secrets
	// as metadata only, Pods, ConfigMaps, Events. Secrets it may not list
	// across the cluster.
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	for _, l := range []client.ObjectList{secrets, &corev1.PodList{}, &corev1.ConfigMapList{}, &corev1.EventList{}} {
		if err := c.List(ctx, l, client.InNamespace(lab.Name)); err != nil {
			t.Errorf("listing %T in %s as oplab: %v", l, lab.Name, err)
		}
	}
	if err := c.List(ctx, secrets); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets cluster-wide as oplab = %v, want Forbidden", err)
	}

	// delete → the finalizer writes the final snapshot, then the Database goes.
	if err := c.Delete(ctx, db); err != nil {
		t.Fatalf("deleting the Database as oplab: %v", err)
	}
	polltest.Until(t, deadline, "the Database to be gone", func(ctx context.Context) error {
		err := c.Get(ctx, client.ObjectKeyFromObject(db), &dbv1.Database{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if f := errs.forbidden(); len(f) > 0 {
			t.Fatalf("the controller was refused, so the Database stays:\n%s", strings.Join(f, "\n"))
		}
		return fmt.Errorf("still there (%v)", err)
	})
	var snap corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: lab.Name, Name: controller.SnapshotName("shop")}, &snap); err != nil {
		t.Errorf("the final snapshot: %v", err)
	}
	// The controller's Events (events.k8s.io) were recorded, not refused.
	var core corev1.EventList
	if err := c.List(ctx, &core, client.InNamespace(lab.Name)); err != nil {
		t.Fatal(err)
	}
	recorded := false
	for _, e := range core.Items {
		if e.ReportingController == controller.RecorderName {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("no Event from %s among %d in %s: were its Events refused?", controller.RecorderName, len(core.Items), lab.Name)
	}
	if f := errs.forbidden(); len(f) > 0 {
		t.Errorf("the controller was refused:\n%s", strings.Join(f, "\n"))
	}

	// The session ends: its namespace is deleted.
	if err := c.Delete(ctx, lab); err != nil {
		t.Errorf("deleting the lab namespace as oplab: %v", err)
	}
}

// learnerKubeconfig makes the learner's scoped kubectl identity as oplab
// does (labns.Issuer: a ServiceAccount, a Role and RoleBinding in
// the lab namespace, and a TokenRequest token), as oplab, and returns a
// client config with that identity. Kubernetes refuses a Role that grants
// more than its creator holds there, so this also shows oplab holds what
// it grants.
func learnerKubeconfig(t *testing.T, oplab *rest.Config, labNS string) *rest.Config {
	t.Helper()
	cs, err := kubernetes.NewForConfig(oplab)
	if err != nil {
		t.Fatal(err)
	}
	issuer := &labns.Issuer{Client: cs, Cluster: labns.Cluster{Server: oplab.Host, CAData: oplab.CAData}}
	creds, err := issuer.Issue(context.Background(), labNS, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatalf("making the learner's kubeconfig as oplab: %v", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(creds.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitReady waits until the Database is Ready for its current generation.
func waitReady(t *testing.T, c client.Client, db *dbv1.Database) {
	t.Helper()
	polltest.Until(t, deadline, "Database "+db.Name+" to be Ready", func(ctx context.Context) error {
		var got dbv1.Database
		if err := c.Get(ctx, client.ObjectKeyFromObject(db), &got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, controller.ConditionReady)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != got.Generation {
			return fmt.Errorf("generation %d, Ready %+v", got.Generation, cond)
		}
		return nil
	})
}

// TestGeneratedRoleSufficesForTheController runs the controller as a
// ServiceAccount bound to nothing but the ClusterRole controller-gen
// generates from the reconciler's +kubebuilder:rbac markers, through
// create → Ready → delete with the final snapshot. The web side's role is
// left out on purpose: a marker the reconciler lacks shows up here as a
// refused call, not hidden by a rule the web side happens to hold.
func TestGeneratedRoleSufficesForTheController(t *testing.T) {
	inTurn(t)
	admin, _ := installed(t)
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "controller-only-"}}
	if err := admin.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "oplab-controller"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if err := admin.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.Delete(ctx, binding)
		_ = admin.Delete(ctx, sa)
	})
	cfg := identity(t, sa.Name)

	errs := &stepErrors{}
	opts := controller.DefaultOptions()
	opts.Sink = errs
	runner := controller.NewRunner(cfg, opts)
	if err := runner.Start(ctx); err != nil {
		t.Fatalf("starting the controller with only the generated role: %v", err)
	}
	t.Cleanup(func() {
		if err := runner.Stop(); err != nil {
			t.Error(err)
		}
	})

	lab := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctl-only-"}}
	if err := admin.Create(ctx, lab); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, lab) })
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Name, Name: "orders"}, Spec: dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 2}}
	if err := admin.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	waitReady(t, admin, db)
	if err := admin.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, deadline, "the Database to be gone", func(ctx context.Context) error {
		err := admin.Get(ctx, client.ObjectKeyFromObject(db), &dbv1.Database{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if f := errs.forbidden(); len(f) > 0 {
			t.Fatalf("the controller was refused, so the Database stays:\n%s", strings.Join(f, "\n"))
		}
		return fmt.Errorf("still there (%v)", err)
	})
	if err := admin.Get(ctx, client.ObjectKey{Namespace: lab.Name, Name: controller.SnapshotName("orders")}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the final snapshot: %v", err)
	}
	var events corev1.EventList
	if err := admin.List(ctx, &events, client.InNamespace(lab.Name)); err != nil {
		t.Fatal(err)
	}
	recorded := false
	for _, e := range events.Items {
		recorded = recorded || e.ReportingController == controller.RecorderName
	}
	if !recorded {
		t.Errorf("no Event from %s among %d: were its Events refused?", controller.RecorderName, len(events.Items))
	}
	if f := errs.forbidden(); len(f) > 0 {
		t.Errorf("the controller was refused with only the generated role:\n%s", strings.Join(f, "\n"))
	}
}
