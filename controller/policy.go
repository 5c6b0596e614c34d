package controller

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// The learner policies are the same files the manifests apply
// (config/policy), embedded so that oplab can install them on a cluster it
// runs itself: learner.yaml lets a learner's kubectl patch a StatefulSet's
// metadata but never its spec; code.yaml holds a learner's own reconciler
// to the engines' images and to Services that stay in the cluster. The
// learner code's ClusterRole (config/rbac/code_role.yaml) comes with them:
// oplab binds it in each lab namespace.
var (
	//go:embed config/policy/learner.yaml
	learnerPolicyYAML []byte
	//go:embed config/policy/code.yaml
	codePolicyYAML []byte
	//go:embed config/rbac/code_role.yaml
	codeRoleYAML []byte
)

// LearnerPolicies returns the ValidatingAdmissionPolicies and their
// bindings from the embedded config/policy files, in order: the learner's
// kubectl's, then the learner code's.
func LearnerPolicies() ([]*admissionv1.ValidatingAdmissionPolicy, []*admissionv1.ValidatingAdmissionPolicyBinding, error) {
	var ps []*admissionv1.ValidatingAdmissionPolicy
	var bs []*admissionv1.ValidatingAdmissionPolicyBinding
	for _, f := range []struct {
		name string
		data []byte
	}{{"config/policy/learner.yaml", learnerPolicyYAML}, {"config/policy/code.yaml", codePolicyYAML}} {
		docs := bytes.Split(f.data, []byte("\n---\n"))
		if len(docs) != 2 {
			return nil, nil, fmt.Errorf("embedded %s: %d documents, want a policy and its binding", f.name, len(docs))
		}
		var p admissionv1.ValidatingAdmissionPolicy
		if err := yaml.UnmarshalStrict(docs[0], &p); err != nil || p.Kind != "ValidatingAdmissionPolicy" {
			return nil, nil, fmt.Errorf("embedded %s: first document is not a ValidatingAdmissionPolicy (kind %q): %v", f.name, p.Kind, err)
		}
		var b admissionv1.ValidatingAdmissionPolicyBinding
		if err := yaml.UnmarshalStrict(docs[1], &b); err != nil || b.Kind != "ValidatingAdmissionPolicyBinding" {
			return nil, nil, fmt.Errorf("embedded %s: second document is not a ValidatingAdmissionPolicyBinding (kind %q): %v", f.name, b.Kind, err)
		}
		ps, bs = append(ps, &p), append(bs, &b)
	}
	return ps, bs, nil
}

// CodeRole returns the ClusterRole learner code acts under in its
// namespace, from the embedded config/rbac/code_role.yaml.
func CodeRole() (*rbacv1.ClusterRole, error) {
	var r rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(codeRoleYAML, &r); err != nil || r.Kind != "ClusterRole" {
		return nil, fmt.Errorf("embedded config/rbac/code_role.yaml: not a ClusterRole (kind %q): %v", r.Kind, err)
	}
	return &r, nil
}

// InstallLearnerPolicies creates the learner policies, their bindings and
// the learner code's ClusterRole, or updates them to the embedded version.
// Without them a learner's Role would let them patch a StatefulSet's Pod
// template, and their code could run any image (Pod Security "restricted"
// and the Pod quota would still hold the Pods either makes).
func InstallLearnerPolicies(ctx context.Context, cfg *rest.Config) error {
	ps, bs, err := LearnerPolicies()
	if err != nil {
		return err
	}
	role, err := CodeRole()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	api := cs.AdmissionregistrationV1()
	for i, p := range ps {
		if err := createOrReplace(ctx, p, api.ValidatingAdmissionPolicies().Get, api.ValidatingAdmissionPolicies().Create, api.ValidatingAdmissionPolicies().Update); err != nil {
			return fmt.Errorf("installing ValidatingAdmissionPolicy %s: %w", p.Name, err)
		}
		b := bs[i]
		if err := createOrReplace(ctx, b, api.ValidatingAdmissionPolicyBindings().Get, api.ValidatingAdmissionPolicyBindings().Create, api.ValidatingAdmissionPolicyBindings().Update); err != nil {
			return fmt.Errorf("installing ValidatingAdmissionPolicyBinding %s: %w", b.Name, err)
		}
	}
	roles := cs.RbacV1().ClusterRoles()
	if err := createOrReplace(ctx, role, roles.Get, roles.Create, roles.Update); err != nil {
		return fmt.Errorf("installing ClusterRole %s: %w", role.Name, err)
	}
	return nil
}

// createOrReplace creates obj, or replaces the object of its name with it.
func createOrReplace[T interface {
	*P
	metav1.Object
}, P any](ctx context.Context, obj T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error)) error {
	_, err := create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	_, err = update(ctx, obj, metav1.UpdateOptions{})
	return err
}
