package controller

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// learnerPolicyYAML is the admission policy that lets a learner's kubectl
// patch a StatefulSet's metadata but never its spec. It is the same file
// the manifests apply (config/policy), embedded so that oplab can install
// it on a cluster it runs itself.
//
//go:embed config/policy/learner.yaml
var learnerPolicyYAML []byte

// LearnerPolicy returns the ValidatingAdmissionPolicy and its binding from
// the embedded config/policy/learner.yaml.
func LearnerPolicy() (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding, error) {
	docs := bytes.Split(learnerPolicyYAML, []byte("\n---\n"))
	if len(docs) != 2 {
		return nil, nil, fmt.Errorf("embedded config/policy/learner.yaml: %d documents, want a policy and its binding", len(docs))
	}
	var p admissionv1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict(docs[0], &p); err != nil || p.Kind != "ValidatingAdmissionPolicy" {
		return nil, nil, fmt.Errorf("embedded config/policy/learner.yaml: first document is not a ValidatingAdmissionPolicy (kind %q): %v", p.Kind, err)
	}
	var b admissionv1.ValidatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict(docs[1], &b); err != nil || b.Kind != "ValidatingAdmissionPolicyBinding" {
		return nil, nil, fmt.Errorf("embedded config/policy/learner.yaml: second document is not a ValidatingAdmissionPolicyBinding (kind %q): %v", b.Kind, err)
	}
	return &p, &b, nil
}

// InstallLearnerPolicy creates the learner policy and its binding, or
// updates them to the embedded version. Without it a learner's Role would
// let them patch a StatefulSet's Pod template (Pod Security "restricted"
// and the Pod quota would still hold the Pods it makes).
func InstallLearnerPolicy(ctx context.Context, cfg *rest.Config) error {
	p, b, err := LearnerPolicy()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	api := cs.AdmissionregistrationV1()
	if err := createOrReplace(ctx, p, api.ValidatingAdmissionPolicies().Get, api.ValidatingAdmissionPolicies().Create, api.ValidatingAdmissionPolicies().Update); err != nil {
		return fmt.Errorf("installing ValidatingAdmissionPolicy %s: %w", p.Name, err)
	}
	if err := createOrReplace(ctx, b, api.ValidatingAdmissionPolicyBindings().Get, api.ValidatingAdmissionPolicyBindings().Create, api.ValidatingAdmissionPolicyBindings().Update); err != nil {
		return fmt.Errorf("installing ValidatingAdmissionPolicyBinding %s: %w", b.Name, err)
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
