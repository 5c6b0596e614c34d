package config_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/oplab-dev/oplab/controller"
)

// wildcards lists every "*" in the rules of the rendered roles, as
// "Kind name rule N field". Kubernetes reads "*" as "every": every verb,
// every resource, even ones added to the cluster later.
func wildcards(objs []*unstructured.Unstructured) []string {
	var found []string
	for _, u := range objs {
		if u.GetKind() != "ClusterRole" && u.GetKind() != "Role" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		for i, r := range rules {
			rule, _ := r.(map[string]any)
			for _, field := range []string{"verbs", "resources", "apiGroups", "resourceNames", "nonResourceURLs"} {
				values, _, _ := unstructured.NestedStringSlice(rule, field)
				for _, v := range values {
					if strings.Contains(v, "*") {
						found = append(found, fmt.Sprintf("%s %s rule %d %s: %s", u.GetKind(), u.GetName(), i, field, v))
					}
				}
			}
		}
		if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "aggregationRule"); ok {
			found = append(found, u.GetKind()+" "+u.GetName()+" aggregates other roles")
		}
	}
	return found
}

func TestWildcardCheckFindsAStar(t *testing.T) {
	inTurn(t)
	// The check itself must be able to fail.
	bad := decode(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: greedy}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get]}
- {apiGroups: [apps], resources: ["*"], verbs: [get]}
- {apiGroups: ["*"], resources: [pods], verbs: ["*"]}
`))
	if got := wildcards(bad); len(got) != 3 {
		t.Errorf("wildcards found %q, want three", got)
	}
}

func TestManifestsGrantNoWildcard(t *testing.T) {
	inTurn(t)
	for _, dir := range []string{"default", "ingress"} {
		t.Run(dir, func(t *testing.T) {
			objs := render(t, dir)
			roles := 0
			for _, u := range objs {
				if u.GetKind() == "ClusterRole" || u.GetKind() == "Role" {
					roles++
				}
			}
			if roles < 2 {
				t.Fatalf("rendered %d roles, want the controller's and the web side's", roles)
			}
			if w := wildcards(objs); len(w) > 0 {
				t.Errorf("the roles use wildcards:\n%s", strings.Join(w, "\n"))
			}
		})
	}
}

// TestManifestsCarryTheGeneratedRole guards against the rendered controller
// role drifting from what controller-gen writes from the markers.
func TestManifestsCarryTheGeneratedRole(t *testing.T) {
	inTurn(t)
	b, err := os.ReadFile("rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var generated, rendered rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &generated); err != nil {
		t.Fatal(err)
	}
	find(t, render(t, "default"), "ClusterRole", "oplab-controller", &rendered)
	if diff := cmp.Diff(generated.Rules, rendered.Rules); diff != "" {
		t.Errorf("rendered oplab-controller rules differ from rbac/role.yaml (-generated +rendered):\n%s", diff)
	}
}

func TestManifestsInstallEverything(t *testing.T) {
	inTurn(t)
	objs := render(t, "default")
	var kinds []string
	for _, u := range objs {
		kinds = append(kinds, u.GetKind()+"/"+u.GetName())
		scoped := u.GetKind() != "Namespace" && u.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(u.GetKind(), "Cluster") &&
			!strings.HasPrefix(u.GetKind(), "ValidatingAdmissionPolicy")
		if scoped && u.GetNamespace() != ns {
			t.Errorf("%s %s is in namespace %q, want %s", u.GetKind(), u.GetName(), u.GetNamespace(), ns)
		}
	}
	want := []string{
		"Namespace/" + ns, "CustomResourceDefinition/databases.db.oplab.dev", "ServiceAccount/oplab",
		"ClusterRole/oplab-controller", "ClusterRole/oplab-web", "ClusterRole/oplab-cluster", "ClusterRole/oplab-code",
		"ClusterRoleBinding/oplab-cluster",
		"ValidatingAdmissionPolicy/oplab-instance-namespaces", "ValidatingAdmissionPolicyBinding/oplab-instance-namespaces",
		"ValidatingAdmissionPolicy/oplab-learner-statefulsets", "ValidatingAdmissionPolicyBinding/oplab-learner-statefulsets",
		"ValidatingAdmissionPolicy/oplab-learner-code", "ValidatingAdmissionPolicyBinding/oplab-learner-code",
		"Deployment/oplab", "Service/oplab",
	}
	for _, w := range want {
		if !slices.Contains(kinds, w) {
			t.Errorf("rendered no %s; got %v", w, kinds)
		}
	}
	// oplab-controller and oplab-web are bound by oplab itself, per
	// learner namespace: nothing binds them cluster-wide.
	for _, u := range objs {
		if u.GetKind() == "ClusterRoleBinding" && u.GetName() != "oplab-cluster" {
			t.Errorf("ClusterRoleBinding %s: only oplab-cluster is bound cluster-wide", u.GetName())
		}
	}
	for _, name := range []string{"oplab-cluster"} {
		var b rbacv1.ClusterRoleBinding
		find(t, objs, "ClusterRoleBinding", name, &b)
		wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "oplab", Namespace: ns}}
		if !cmp.Equal(b.Subjects, wantSubject) || b.RoleRef.Name != name || b.RoleRef.Kind != "ClusterRole" {
			t.Errorf("ClusterRoleBinding %s binds %v to %v, want %s to %v", name, b.RoleRef, b.Subjects, name, wantSubject)
		}
	}
}

func TestDeploymentIsHardened(t *testing.T) {
	inTurn(t)
	var d appsv1.Deployment
	find(t, render(t, "default"), "Deployment", "oplab", &d)
	checkDeployment(t, &d)
}

// checkDeployment checks the Deployment's shape; the apply test runs it
// on the object the API server stored too.
func checkDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas = %v, want 1 (sessions live in the process)", d.Spec.Replicas)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy = %q, want Recreate (never two controllers at once)", d.Spec.Strategy.Type)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "oplab" {
		t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "oplab:dev" {
		t.Errorf("image = %q, want the tag `make image` writes", c.Image)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("readOnlyRootFilesystem is not true")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Error("runAsNonRoot is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("allowPrivilegeEscalation is not false")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities = %+v, want drop [ALL] and nothing added", sc.Capabilities)
	}
	for _, probe := range []struct {
		name string
		p    *corev1.Probe
		path string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if probe.p == nil || probe.p.HTTPGet == nil || probe.p.HTTPGet.Path != probe.path || probe.p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe = %+v, want GET %s on port http", probe.name, probe.p, probe.path)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports = %+v, want http 8080 (the image's --addr)", c.Ports)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[res], c.Resources.Limits[res]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s request %s, limit %s: want both, request ≤ limit", res, req.String(), lim.String())
		}
	}
	var tmpVolume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/tmp" {
			tmpVolume = m.Name
		}
	}
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == tmpVolume })
	if tmpVolume == "" || i < 0 || pod.Volumes[i].EmptyDir == nil {
		t.Errorf("/tmp is not an emptyDir (mounts %+v, volumes %+v)", c.VolumeMounts, pod.Volumes)
	}
	for _, arg := range []string{"--install-crds=false", "--instructor-token=$(OPLAB_INSTRUCTOR_TOKEN)"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %s", c.Args, arg)
		}
	}
	j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "OPLAB_INSTRUCTOR_TOKEN" })
	if j < 0 || c.Env[j].ValueFrom == nil || c.Env[j].ValueFrom.SecretKeyRef == nil {
		t.Fatalf("env %+v: OPLAB_INSTRUCTOR_TOKEN does not come from a Secret", c.Env)
	}
	ref := c.Env[j].ValueFrom.SecretKeyRef
	if ref.Name != "oplab-instructor" || ref.Key != "token" || (ref.Optional != nil && *ref.Optional) {
		// An optional variable that is missing leaves $(OPLAB_INSTRUCTOR_TOKEN)
		// unexpanded: a token anyone can read in the manifests.
		t.Errorf("instructor token from %+v, want the required key token of Secret oplab-instructor", ref)
	}
}

func TestServiceAndIngressReachThePod(t *testing.T) {
	inTurn(t)
	objs := render(t, "ingress")
	var d appsv1.Deployment
	var svc corev1.Service
	var ing networkingv1.Ingress
	find(t, objs, "Deployment", "oplab", &d)
	find(t, objs, "Service", "oplab", &svc)
	find(t, objs, "Ingress", "oplab", &ing)
	checkDeployment(t, &d)
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service selects %s=%s, which the Pod template lacks (labels %v)", k, v, d.Spec.Template.Labels)
		}
	}
	if len(svc.Spec.Selector) == 0 || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service = %+v, want it to select the Pod and target port http", svc.Spec)
	}
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		t.Fatalf("Ingress rules = %+v", ing.Spec.Rules)
	}
	rule := ing.Spec.Rules[0]
	backend := rule.HTTP.Paths[0].Backend.Service
	if backend == nil || backend.Name != "oplab" || backend.Port.Name != "http" {
		t.Errorf("Ingress backend = %+v, want Service oplab port http", backend)
	}
	// oplab answers only to the host names it is told (a DNS-rebinding
	// guard), so the Ingress's host must be among them.
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--allowed-hosts="+rule.Host) {
		t.Errorf("args %q do not allow the Ingress host %s", d.Spec.Template.Spec.Containers[0].Args, rule.Host)
	}
}

// TestControllerEmbedsOnlyTheCRD guards the coupling between this tree and
// the controller package, which embeds config/crd/*.yaml and installs each
// file as a CRD: a kustomization.yaml there would break every start.
func TestControllerEmbedsOnlyTheCRD(t *testing.T) {
	inTurn(t)
	crds, err := controller.CRDs()
	if err != nil {
		t.Fatalf("the controller's embedded CRDs: %v", err)
	}
	if len(crds) != 1 || crds[0].Name != "databases.db.oplab.dev" {
		t.Errorf("the controller embeds %d CRDs, want only databases.db.oplab.dev", len(crds))
	}
	var rendered []string
	for _, u := range render(t, "crd") {
		rendered = append(rendered, u.GetKind()+"/"+u.GetName())
	}
	if !slices.Equal(rendered, []string{"CustomResourceDefinition/databases.db.oplab.dev"}) {
		t.Errorf("crd/ renders %v", rendered)
	}
}

// TestClusterWideRoleReadsNoSecrets checks the one role bound cluster-wide
// for what finding (a) of issue 19 was: nothing on Secrets or tokens, no
// Role or ServiceAccount writes, "bind" only on oplab's own two roles, and
// no reads beyond watch of what the lab shows.
func TestClusterWideRoleReadsNoSecrets(t *testing.T) {
	inTurn(t)
	var role rbacv1.ClusterRole
	find(t, render(t, "rbac"), "ClusterRole", "oplab-cluster", &role)
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			switch {
			case res == "secrets" || strings.HasPrefix(res, "serviceaccounts") || res == "roles" || res == "clusterrolebindings":
				t.Errorf("oplab-cluster grants %v on %s cluster-wide", r.Verbs, res)
			case res == "clusterroles" && (!slices.Equal(r.Verbs, []string{"bind"}) || !slices.Equal(r.ResourceNames, []string{"oplab-controller", "oplab-web", "oplab-code"})):
				t.Errorf("oplab-cluster grants %v on clusterroles %v, want only bind on oplab-controller, oplab-web and oplab-code (the learner code's)", r.Verbs, r.ResourceNames)
			case res == "rolebindings" && !slices.Equal(r.Verbs, []string{"create"}):
				t.Errorf("oplab-cluster grants %v on rolebindings, want create only (the admission policy holds it to its namespaces)", r.Verbs)
			}
		}
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			t.Errorf("oplab-cluster has a wildcard rule: %+v", r)
		}
	}
}
