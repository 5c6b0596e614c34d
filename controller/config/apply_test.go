package config_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/internal/polltest"
)

// TestApplyInstallsOplab applies controller/config/default to the embedded
// cluster with kubectl, as docs/CLASSROOM.md tells an instructor to, and checks
// what the API server then holds.
func TestApplyInstallsOplab(t *testing.T) {
	inTurn(t)
	admin, kubeconfig := installed(t)
	ctx := context.Background()

	var nsObj corev1.Namespace
	if err := admin.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatalf("namespace: %v", err)
	}
	if nsObj.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace labels = %v, want Pod Security restricted enforced", nsObj.Labels)
	}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oplab"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oplab"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "oplab-controller"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "oplab-web"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "oplab-cluster"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "oplab-cluster"}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "oplab-instance-namespaces"}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "oplab-instance-namespaces"}},
	} {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("%T %s: %v", obj, obj.GetName(), err)
		}
	}

	// The CRD is established: the API now serves Databases.
	polltest.Until(t, deadline, "the Database CRD to be established", func(ctx context.Context) error {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := admin.Get(ctx, client.ObjectKey{Name: "databases.db.oplab.dev"}, &crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", crd.Status.Conditions)
	})

	// The Deployment as stored, defaults and all, keeps its hardening.
	var d appsv1.Deployment
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oplab"}, &d); err != nil {
		t.Fatalf("deployment: %v", err)
	}
	checkDeployment(t, &d)

	// Its Pod passes the namespace's restricted Pod Security admission. The
	// embedded cluster runs no Deployment controller, so the test creates
	// the Pod its ReplicaSet would, from the stored template, as a dry run.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "oplab-", Labels: d.Spec.Template.Labels},
		Spec:       d.Spec.Template.Spec,
	}
	if err := admin.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("creating the Deployment's Pod in %s: %v", ns, err)
	}
	// ... and the admission really is enforced: a privileged Pod is refused.
	privileged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "privileged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "x", Image: "oplab:dev",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		}}},
	}
	err := admin.Create(ctx, privileged, client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("creating a privileged Pod in %s = %v, want Forbidden by PodSecurity", ns, err)
	}

	// Applying again changes nothing and fails on nothing.
	out := kubectl(t, "--kubeconfig", kubeconfig, "apply", "-k", "default")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasSuffix(line, " unchanged") {
			t.Errorf("a second apply changed something: %q", line)
		}
	}
}

// TestApplyIngressExample applies the Ingress overlay over the installed
// base.
func TestApplyIngressExample(t *testing.T) {
	inTurn(t)
	admin, kubeconfig := installed(t)
	ctx := context.Background()
	kubectl(t, "--kubeconfig", kubeconfig, "apply", "-k", "ingress")
	t.Cleanup(func() {
		// Leave the base as the other tests expect it.
		kubectl(t, "--kubeconfig", kubeconfig, "delete", "-n", ns, "ingress", "oplab", "--ignore-not-found")
		kubectl(t, "--kubeconfig", kubeconfig, "apply", "-k", "default")
	})
	var ing networkingv1.Ingress
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oplab"}, &ing); err != nil {
		t.Fatalf("ingress: %v", err)
	}
	var d appsv1.Deployment
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oplab"}, &d); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--allowed-hosts="+ing.Spec.Rules[0].Host) {
		t.Errorf("deployment args %q do not allow the Ingress host %s", args, ing.Spec.Rules[0].Host)
	}
}
