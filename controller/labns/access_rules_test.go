package labns

import (
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/oplab-dev/oplab/controller"
)

// The API server lets oplab grant in a learner's Role only what oplab itself
// holds in that namespace. In a cluster oplab holds its ClusterRoles
// (controller/config/rbac): oplab-cluster everywhere, oplab-controller and
// oplab-web in each learner namespace. Everything LearnerRules grants must be in
// them, or the first kubeconfig download in a self-hosted class fails.
func TestOplabsRolesHoldWhatALearnerIsGranted(t *testing.T) {
	var held []rbacv1.PolicyRule
	for _, f := range []string{"../config/rbac/role.yaml", "../config/rbac/web_role.yaml", "../config/rbac/cluster_role.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(b, &role); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		held = append(held, role.Rules...)
	}
	for _, missing := range notHeld(LearnerRules, held) {
		t.Errorf("a learner's Role grants %s, which oplab's ClusterRoles do not hold: add it to controller/config/rbac/web_role.yaml", missing)
	}
	// The check itself can fail.
	if got := notHeld([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}, held); len(got) != 1 {
		t.Errorf("notHeld found %v for nodes; want the one rule reported", got)
	}
}

// notHeld lists each "verb group/resource" of want that no rule of held grants.
func notHeld(want, held []rbacv1.PolicyRule) []string {
	var out []string
	for _, w := range want {
		for _, g := range w.APIGroups {
			for _, r := range w.Resources {
				for _, v := range w.Verbs {
					if !slices.ContainsFunc(held, func(h rbacv1.PolicyRule) bool {
						return slices.Contains(h.APIGroups, g) && slices.Contains(h.Resources, r) && slices.Contains(h.Verbs, v) && len(h.ResourceNames) == 0
					}) {
						out = append(out, v+" "+g+"/"+r)
					}
				}
			}
		}
	}
	return out
}

// A learner may scale a StatefulSet (drift) and patch it (its metadata:
// owner-gc removes its ownerReference), never update it or create Pods;
// a patch's spec change is the learner policy's to refuse. That the API
// server really refuses it is tested where the policy is installed
// (controller/config TestALearnerIsSandboxed, web/session).
func TestALearnerCannotWriteAPodTemplate(t *testing.T) {
	patches := false
	for _, r := range LearnerRules {
		if slices.Contains(r.APIGroups, "apps") && slices.Contains(r.Resources, "statefulsets") {
			if slices.Contains(r.Verbs, "update") || slices.Contains(r.Verbs, "*") {
				t.Errorf("the learner's Role may %v statefulsets, which replaces their Pod template", r.Verbs)
			}
			patches = patches || slices.Contains(r.Verbs, "patch")
		}
		for _, res := range r.Resources {
			if res == "pods" && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "patch") || slices.Contains(r.Verbs, "update")) {
				t.Errorf("the learner's Role may %v pods", r.Verbs)
			}
		}
	}
	if len(notHeld([]rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"statefulsets/scale"}, Verbs: []string{"patch"}}}, LearnerRules)) != 0 {
		t.Error("the learner's Role does not let them scale a StatefulSet: drift by scale is part of the lab")
	}
	if !patches {
		return
	}
	// The patch is safe only with the policy that keeps the spec.
	ps, _, err := controller.LearnerPolicies()
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if len(p.Spec.Validations) != 1 || p.Spec.Validations[0].Expression != "object.spec == oldObject.spec" ||
		len(p.Spec.MatchConstraints.ResourceRules) != 1 || !slices.Equal(p.Spec.MatchConstraints.ResourceRules[0].Resources, []string{"statefulsets"}) {
		t.Errorf("the learner may patch statefulsets, but the learner policy does not hold their spec: %+v", p.Spec)
	}
	if want := "system:serviceaccount:' + request.namespace + ':" + LearnerServiceAccount + "'"; len(p.Spec.MatchConditions) != 1 || !strings.HasSuffix(p.Spec.MatchConditions[0].Expression, want) {
		t.Errorf("the learner policy matches %+v; want the learner's ServiceAccount %q", p.Spec.MatchConditions, LearnerServiceAccount)
	}
}
