package config_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// oplabSubject is oplab's ServiceAccount as the manifests install it.
var oplabSubject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "oplab", Namespace: ns}

// labNamespace makes a learner namespace of the manifests' instance
// ("lab") with c, as oplab's sessions do (labns.KubeNamespaces with
// the Deployment's --namespace-roles), and returns its name.
func labNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	name := "lab-" + strings.ToLower(rand.Text()[:8])
	n := labns.KubeNamespaces{Client: c, Prefix: "lab-", Roles: []string{"oplab-controller", "oplab-web"}, Self: oplabSubject}
	if err := n.Create(context.Background(), name, "cookie-hash"); err != nil {
		t.Fatalf("making learner namespace %s as oplab: %v", name, err)
	}
	t.Cleanup(func() {
		_ = shared.admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return name
}

// refused fails unless err is the API server's refusal (Forbidden, or
// Invalid for an admission policy's denial of a create), and says why.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want refused", what)
		return
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want refused (Forbidden)", what, err)
		return
	}
	t.Logf("%s: refused: %v", what, err)
}

// byPolicy is refused, by the learner policy: the learner's Role lets the
// request through, so nothing else stands in its way.
func byPolicy(t *testing.T, what string, err error) {
	t.Helper()
	refused(t, what, err)
	if err != nil && !strings.Contains(err.Error(), "oplab-learner-statefulsets") {
		t.Errorf("%s: refused by %v; want the learner policy oplab-learner-statefulsets", what, err)
	}
}

// TestOplabIsConfined runs, as oplab's ServiceAccount, each request the
// issue's attacker would make with its token, against the API server
// with the manifests applied: all refused, by RBAC or by the admission
// policy. The first one is finding (a): a token for a ServiceAccount bound
// to cluster-admin, which would have made oplab cluster-admin.
func TestOplabIsConfined(t *testing.T) {
	inTurn(t)
	admin, _ := installed(t)
	cfg := oplabIdentity(t)
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lab := labNamespace(t, c)

	// (a) A cluster-admin ServiceAccount in kube-system, as many clusters
	// have one.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ci-admin"}}
	if err := admin.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ci-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ci-admin", Namespace: "kube-system"}}}
	if err := admin.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, crb); _ = admin.Delete(ctx, sa) })
	t.Run("a token for a cluster-admin ServiceAccount in kube-system", func(t *testing.T) {
		tr, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "ci-admin",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		refused(t, "minting a token for kube-system/ci-admin", err)
		if err == nil && tr.Status.Token != "" {
			// The escalation went through: say how far.
			t.Errorf("oplab escalated to cluster-admin through kube-system/ci-admin's token")
		}
	})
	t.Run("a token for the learner ServiceAccount of a namespace not its own", func(t *testing.T) {
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "other-"}}
		if err := admin.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, other) })
		if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: other.Name, Name: "learner"}}); err != nil {
			t.Fatal(err)
		}
		_, err := cs.CoreV1().ServiceAccounts(other.Name).CreateToken(ctx, "learner",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		refused(t, "minting a token in "+other.Name, err)
	})
	t.Run("Secrets in kube-system and across the cluster", func(t *testing.T) {
		var list corev1.SecretList
		refused(t, "listing Secrets in kube-system", c.List(ctx, &list, client.InNamespace("kube-system")))
		refused(t, "listing Secrets cluster-wide", c.List(ctx, &list))
		refused(t, "reading a Secret in kube-system", c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "any"}, &corev1.Secret{}))
		refused(t, "creating a Secret in kube-system", c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "oplab-was-here"}}))
	})
	t.Run("a RoleBinding in default", func(t *testing.T) {
		// Its own per-namespace role, to itself: RBAC lets it bind that
		// role anywhere; the policy refuses it outside its namespaces.
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "oplab-web"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "oplab-web"}, Subjects: []rbacv1.Subject{oplabSubject}}
		refused(t, "binding oplab-web to itself in default", c.Create(ctx, rb))
		rb.Namespace = "kube-system"
		refused(t, "binding oplab-web to itself in kube-system", c.Create(ctx, rb))
	})
	t.Run("cluster-admin bound in its own namespace", func(t *testing.T) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: lab, Name: "admin"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{oplabSubject}}
		refused(t, "binding cluster-admin in "+lab, c.Create(ctx, rb))
	})
	t.Run("deleting a namespace without its label", func(t *testing.T) {
		victim := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "victim-"}}
		if err := admin.Create(ctx, victim); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, victim) })
		refused(t, "deleting namespace "+victim.Name, c.Delete(ctx, victim))
		refused(t, "deleting namespace kube-system", c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}))
		// Nor one of another instance.
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "class2-", Labels: map[string]string{
			labns.LabLabel: "true", labns.InstanceLabel: "class2", labns.PodSecurityEnforce: "restricted"}}}
		if err := admin.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, other) })
		refused(t, "deleting another instance's namespace "+other.Name, c.Delete(ctx, other))
		if err := admin.Get(ctx, client.ObjectKeyFromObject(victim), victim); err != nil || victim.DeletionTimestamp != nil {
			t.Errorf("namespace %s after the refused delete: %v, deleting %v", victim.Name, err, victim.DeletionTimestamp)
		}
	})
	t.Run("namespaces created without its labels", func(t *testing.T) {
		// ours is a lab namespace's labels as oplab makes them, with
		// changes (a value "" removes the label).
		ours := func(instance string, changes map[string]string) map[string]string {
			l := labns.PodSecurityLabels()
			l[labns.LabLabel], l[labns.InstanceLabel] = "true", instance
			for k, v := range changes {
				if v == "" {
					delete(l, k)
				} else {
					l[k] = v
				}
			}
			return l
		}
		for what, l := range map[string]map[string]string{
			"no label":                        nil,
			"another instance's label":        ours("class2", nil),
			"no Pod Security level":           {labns.LabLabel: "true", labns.InstanceLabel: "lab"},
			"a privileged Pod Security level": ours("lab", map[string]string{labns.PodSecurityEnforce: "privileged"}),
			// Issue 50 (4): "restricted" as it was at v1.0 checks neither
			// privilege escalation, seccomp nor capabilities.
			"an older version of restricted enforced": ours("lab", map[string]string{labns.PodSecurityEnforceVersion: "v1.0"}),
			"no version of restricted enforced":       ours("lab", map[string]string{labns.PodSecurityEnforceVersion: ""}),
			"no audit":                                ours("lab", map[string]string{labns.PodSecurityAudit: ""}),
			"a privileged warning level":              ours("lab", map[string]string{labns.PodSecurityWarn: "privileged"}),
			"an older version warned at":              ours("lab", map[string]string{labns.PodSecurityWarnVersion: "v1.0"}),
		} {
			n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lab-x", Labels: l}}
			err := c.Create(ctx, n)
			if err == nil {
				_ = admin.Delete(ctx, n)
			}
			refused(t, "creating a namespace with "+what, err)
		}
	})
	t.Run("kube-system labelled as its own", func(t *testing.T) {
		all := labns.PodSecurityLabels()
		all[labns.LabLabel], all[labns.InstanceLabel] = "true", "lab"
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": all}})
		if err != nil {
			t.Fatal(err)
		}
		refused(t, "labelling kube-system", c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}, client.RawPatch(types.MergePatchType, patch)))
	})
	t.Run("lowering its own namespace's Pod Security", func(t *testing.T) {
		// Issue 50 (4): only enforce was checked, so a version of
		// restricted that checks less could be pinned.
		for what, patch := range map[string]string{
			"its level":                       `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`,
			"the version enforced, to v1.0":   `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce-version":"v1.0"}}}`,
			"the version enforced, removed":   `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce-version":null}}}`,
			"the audit level":                 `{"metadata":{"labels":{"pod-security.kubernetes.io/audit":"privileged"}}}`,
			"the version audited, to v1.0":    `{"metadata":{"labels":{"pod-security.kubernetes.io/audit-version":"v1.0"}}}`,
			"the warning level, removed":      `{"metadata":{"labels":{"pod-security.kubernetes.io/warn":null}}}`,
			"the version warned at, to v1.22": `{"metadata":{"labels":{"pod-security.kubernetes.io/warn-version":"v1.22"}}}`,
		} {
			refused(t, "lowering "+lab+"'s Pod Security: "+what,
				c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: lab}}, client.RawPatch(types.MergePatchType, []byte(patch))))
		}
		var got corev1.Namespace
		if err := admin.Get(ctx, client.ObjectKey{Name: lab}, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range labns.PodSecurityLabels() {
			if got.Labels[k] != v {
				t.Errorf("after the refused patches %s has %s=%q, want %q", lab, k, got.Labels[k], v)
			}
		}
	})
	t.Run("a namespace of the oplab before versions were pinned, brought up to date", func(t *testing.T) {
		// As that oplab left it: restricted, no versions. The admin strips
		// them (no policy holds the admin); oplab, restarting, finds the
		// namespace and labels it as a new one, which its policy allows.
		older := labNamespace(t, c)
		strip := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce-version":null,` +
			`"pod-security.kubernetes.io/audit-version":null,"pod-security.kubernetes.io/warn-version":null}}}`)
		if err := admin.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: older}}, client.RawPatch(types.MergePatchType, strip)); err != nil {
			t.Fatal(err)
		}
		n := labns.KubeNamespaces{Client: c, Prefix: "lab-", Roles: []string{"oplab-controller", "oplab-web"}, Self: oplabSubject}
		if _, err := n.List(ctx); err != nil {
			t.Fatalf("oplab listing its namespaces: %v", err)
		}
		var got corev1.Namespace
		if err := admin.Get(ctx, client.ObjectKey{Name: older}, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range labns.PodSecurityLabels() {
			if got.Labels[k] != v {
				t.Errorf("after oplab's restore %s has %s=%q, want %q", older, k, got.Labels[k], v)
			}
		}
	})
	t.Run("after all that, still not cluster-admin", func(t *testing.T) {
		for _, where := range []string{"", "kube-system", lab} {
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*", Namespace: where}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Allowed {
				t.Errorf("oplab may '*' '*' in namespace %q", where)
			}
		}
	})
	// What it may do it still does: in its own namespace a Secret is
	// read and a token minted (TestControllerRunsWithOnlyItsServiceAccount
	// runs the whole round).
	if err := c.List(ctx, &corev1.SecretList{}, client.InNamespace(lab)); err != nil {
		t.Errorf("listing Secrets in its own namespace %s: %v", lab, err)
	}
}

// TestALearnerIsSandboxed acts with the learner's own kubeconfig
// identity, in a namespace oplab made, the way finding (b) and (c) did:
// a privileged, host-sharing StatefulSet patch is refused, paused or
// not; scaling to 600 is held to the namespace's Pod quota; a Pod the
// learner's Pods would need to break Pod Security is refused even for an
// admin; and the Database's own Pods run there.
func TestALearnerIsSandboxed(t *testing.T) {
	inTurn(t)
	admin, _ := installed(t)
	cfg := oplabIdentity(t)
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	lab := labNamespace(t, c)
	lc, err := client.New(learnerKubeconfig(t, cfg, lab), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	runner := startController(t, cfg, "lab")

	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: lab, Name: "shop"}, Spec: dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 2}}
	if err := lc.Create(ctx, db); err != nil {
		t.Fatalf("creating a Database as the learner: %v", err)
	}
	// Ready means its two Pods were admitted under "restricted" and run.
	waitReady(t, admin, db)

	evil := []byte(`{"spec":{"template":{"spec":{"hostPID":true,"hostNetwork":true,` +
		`"volumes":[{"name":"host","hostPath":{"path":"/"}}],` +
		`"containers":[{"name":"postgres","image":"busybox","securityContext":{"privileged":true,"allowPrivilegeEscalation":true},"volumeMounts":[{"name":"host","mountPath":"/host"}]}]}}}}`)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: lab, Name: "shop"}}
	for _, paused := range []bool{false, true} {
		if paused {
			runner.PauseNamespace(lab)
		}
		byPolicy(t, fmt.Sprintf("the learner's privileged patch (paused %v)", paused), lc.Patch(ctx, sts, client.RawPatch(types.StrategicMergePatchType, evil)))
		var got appsv1.StatefulSet
		if err := lc.Get(ctx, client.ObjectKeyFromObject(sts), &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Template.Spec.HostPID || got.Spec.Template.Spec.HostNetwork {
			t.Error("the StatefulSet's Pod template shares the host's namespaces")
		}
		// Nor by an update of the whole object.
		got.Spec.Template.Spec.HostPID = true
		refused(t, fmt.Sprintf("the learner's update of the StatefulSet (paused %v)", paused), lc.Update(ctx, &got))
		refused(t, "the learner creating a Pod", lc.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: lab, Name: "mine"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}))
		// Their Role may patch the StatefulSet: the learner policy is what
		// refuses a spec change, even one without privileges.
		image := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"postgres","image":"example.com/mine:1"}]}}}}`)
		byPolicy(t, fmt.Sprintf("the learner's image patch (paused %v)", paused), lc.Patch(ctx, sts, client.RawPatch(types.StrategicMergePatchType, image)))
	}
	// The learner's kubectl cannot become their code's identity, nor
	// mint it a token: oplab alone acts as it.
	codeCfg := learnerKubeconfig(t, cfg, lab)
	codeCfg.Impersonate = rest.ImpersonationConfig{UserName: controller.CodeUser(lab)}
	if cc, err := client.New(codeCfg, client.Options{Scheme: scheme, Mapper: c.RESTMapper()}); err != nil {
		t.Fatal(err)
	} else {
		refused(t, "the learner impersonating their code's ServiceAccount", cc.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(lab)))
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	code := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: lab, Name: controller.CodeServiceAccount}}
	refused(t, "the learner minting a token for their code's ServiceAccount", lc.SubResource("token").Create(ctx, code, tr))
	// Metadata is theirs (the owner-gc challenge): removing the
	// ownerReference goes through (paused here, nothing adopts it back).
	orphan := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/ownerReferences"}]`))
	if err := lc.Patch(ctx, sts, orphan); err != nil {
		t.Errorf("the learner removing the StatefulSet's ownerReference: %v; want it allowed", err)
	}
	// Pod Security "restricted" is enforced there: even an admin's
	// privileged Pod is refused (a dry run).
	priv := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: lab, Name: "privileged"},
		Spec: corev1.PodSpec{HostPID: true, Containers: []corev1.Container{{Name: "x", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}
	if err := admin.Create(ctx, priv, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("an admin's privileged Pod in %s = %v, want Forbidden by PodSecurity", lab, err)
	}

	// (c) kubectl scale --replicas=600, paused: the scale subresource is
	// the learner's, and the quota holds the Pods.
	scale := &autoscalingv1.Scale{}
	if err := lc.SubResource("scale").Get(ctx, sts, scale); err != nil {
		t.Fatalf("reading the scale as the learner: %v", err)
	}
	scale.Spec.Replicas = 600
	if err := lc.SubResource("scale").Update(ctx, sts, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("kubectl scale --replicas=600 as the learner: %v", err)
	}
	maxPods := labns.MaxPods(5)
	// The StatefulSet controller creates Pods until the quota refuses
	// them, and records that on the StatefulSet's events; wait for the
	// refusal, then count.
	polltest.Until(t, deadline, "the quota to refuse the StatefulSet's Pods", func(ctx context.Context) error {
		var evs corev1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(lab)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "StatefulSet" && strings.Contains(e.Message, "exceeded quota") {
				return nil
			}
		}
		return fmt.Errorf("no quota refusal among %d events", len(evs.Items))
	})
	var pods corev1.PodList
	if err := admin.List(ctx, &pods, client.InNamespace(lab)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > maxPods {
		t.Errorf("%d Pods in %s after scaling to 600, want at most the quota's %d", len(pods.Items), lab, maxPods)
	}
	t.Logf("scaled to 600: %d Pods, quota %d", len(pods.Items), maxPods)
	runner.ResumeNamespace(lab)
	// The controller scales it back; the drift lesson still works.
	polltest.Until(t, deadline, "the controller to scale shop back to 2", func(ctx context.Context) error {
		var got appsv1.StatefulSet
		if err := admin.Get(ctx, client.ObjectKeyFromObject(sts), &got); err != nil {
			return err
		}
		if r := ptr.Deref(got.Spec.Replicas, 0); r != 2 {
			return fmt.Errorf("replicas %d", r)
		}
		return nil
	})
	// And deleting a child, the other drift, is the learner's.
	if err := lc.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: lab, Name: "shop"}}); err != nil {
		t.Errorf("deleting the Service as the learner: %v", err)
	}
}
