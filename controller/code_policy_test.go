package controller

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// codeNamespace is a lab namespace (the learner-code policy holds only
// there) granted its learner-code identity, and a client acting as it,
// bypassing the sandbox's own checks: what the API server alone holds.
func codeNamespace(t *testing.T, registry string) (ns string, code client.Client) {
	t.Helper()
	e := newEnv(t)
	lab := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "code-", Labels: map[string]string{"oplab.dev/lab": "true"}}}
	if err := e.c.Create(e.ctx, lab); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), lab) })
	opts := e.testOptions()
	opts.ImageRegistry = registry
	if err := NewRunner(e.cfg, opts).GrantCode(e.ctx, lab.Name); err != nil {
		t.Fatal(err)
	}
	code, err := client.New(codeConfig(e.cfg, lab.Name), client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return lab.Name, code
}

// goodStatefulSet is oplab's own StatefulSet as learner code that copied
// it writes it: the engine's image, no token mounted.
func goodStatefulSet(ns, registry string) *appsv1.StatefulSet {
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}
	s := desiredStatefulSet(db, registry)
	codeDefaults(s)
	return s
}

// Every write the issue found learner code could make with oplab's powers
// is refused twice over, in the same words: by the sandbox before it is
// sent (codeRefusal) and by the API server's admission policy
// oplab-learner-code when it is sent anyway, as the learner code's own
// ServiceAccount. What oplab's reconciler writes passes both.
func TestTheSandboxAndThePolicyRefuseTheSameWrites(t *testing.T) {
	t.Parallel()
	const registry = ""
	ns, code := codeNamespace(t, registry)
	sts := func(name string, change func(*appsv1.StatefulSet)) client.Object {
		s := goodStatefulSet(ns, registry)
		s.Name = name
		change(s)
		return s
	}
	svc := func(name string, change func(*corev1.Service)) client.Object {
		s := desiredService(&dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		change(s)
		return s
	}
	pod := func(s *appsv1.StatefulSet) *corev1.PodSpec { return &s.Spec.Template.Spec }
	cases := []struct {
		what  string
		obj   client.Object
		words string
	}{
		{"a foreign image", sts("image", func(s *appsv1.StatefulSet) { pod(s).Containers[0].Image = "ghcr.io/attacker/anything:latest" }),
			"may run only a Database engine's image"},
		{"an init container of another image", sts("init", func(s *appsv1.StatefulSet) {
			pod(s).InitContainers = []corev1.Container{{Name: "x", Image: "busybox"}}
		}), "runs postgres:17, busybox"},
		{"a command of its own", sts("command", func(s *appsv1.StatefulSet) { pod(s).Containers[0].Command = []string{"sh", "-c", "nc -l 4444"} }),
			"a command or args of its own"},
		{"args of its own", sts("args", func(s *appsv1.StatefulSet) { pod(s).Containers[0].Args = []string{"-c", "listen_addresses=*"} }),
			"a command or args of its own"},
		{"a hostPath volume", sts("hostpath", func(s *appsv1.StatefulSet) {
			pod(s).Volumes = append(pod(s).Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}), "mounts root"},
		{"a projected ServiceAccount token", sts("projected", func(s *appsv1.StatefulSet) {
			pod(s).Volumes = append(pod(s).Volumes, corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}})
		}), "mounts token"},
		{"another ServiceAccount", sts("account", func(s *appsv1.StatefulSet) { pod(s).ServiceAccountName = "learner" }),
			"default ServiceAccount with no token mounted"},
		{"a mounted token", sts("automount", func(s *appsv1.StatefulSet) { pod(s).AutomountServiceAccountToken = ptr.To(true) }),
			"default ServiceAccount with no token mounted"},
		{"the host's network", sts("hostnet", func(s *appsv1.StatefulSet) { pod(s).HostNetwork = true }),
			"host's network, PID or IPC namespaces"},
		{"a toleration", sts("tolerate", func(s *appsv1.StatefulSet) {
			pod(s).Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists}}
		}), "with tolerations"},
		{"a node of its choosing", sts("node", func(s *appsv1.StatefulSet) { pod(s).NodeName = "kwok-node-0" }), "on a node of its choosing"},
		{"200 replicas", sts("many", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](200) }), "asks for 200"},
		{"a 100Ti claim", sts("claim", func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Ti")}}}}}
		}), "storage quota of 10Gi"},
		{"a LoadBalancer with externalIPs", svc("lb", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ClusterIP, s.Spec.ExternalIPs = corev1.ServiceTypeLoadBalancer, "", []string{"10.0.0.10", "8.8.8.8"}
		}), "is LoadBalancer with externalIPs 10.0.0.10, 8.8.8.8"},
		{"a NodePort", svc("nodeport", func(s *corev1.Service) { s.Spec.Type, s.Spec.ClusterIP = corev1.ServiceTypeNodePort, "" }), "is NodePort"},
		{"an ExternalName", svc("external", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ClusterIP, s.Spec.Selector, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "", nil, "example.com"
		}), "is ExternalName"},
		{"a ClusterIP with externalIPs", svc("extip", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ExternalIPs = "", []string{"8.8.8.8"} }),
			"is ClusterIP with externalIPs 8.8.8.8"},
		{"a token Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: CodeServiceAccount}}, Type: corev1.SecretTypeServiceAccountToken},
			"is of type kubernetes.io/service-account-token"},
	}
	for _, c := range cases {
		why := codeRefusal(c.obj, registry)
		if !strings.Contains(why, c.words) {
			t.Errorf("%s: the sandbox says %q; want it refused, saying %q", c.what, why, c.words)
		}
		err := code.Create(context.Background(), c.obj.DeepCopyObject().(client.Object))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "oplab-learner-code") {
			t.Errorf("%s: the API server answered %v; want Forbidden by the policy oplab-learner-code", c.what, err)
			continue
		}
		if why != "" && !strings.Contains(err.Error(), why) {
			t.Errorf("%s: the policy and the sandbox word it differently:\n policy:  %v\n sandbox: %s", c.what, err, why)
		}
	}

	// What oplab's own reconciler writes passes both.
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "good"}}
	good := []client.Object{goodStatefulSet(ns, registry), desiredService(db), desiredSecret(db)}
	for _, obj := range good {
		if why := codeRefusal(obj, registry); why != "" {
			t.Errorf("the sandbox refuses oplab's own %T: %s", obj, why)
		}
		if err := code.Create(context.Background(), obj); err != nil {
			t.Errorf("the API server refuses oplab's own %T written as learner code: %v", obj, err)
		}
	}
	// An update is held like a create: the image of the StatefulSet just
	// made, changed.
	// (Read again: the StatefulSet controller writes its status meanwhile.)
	s := &appsv1.StatefulSet{}
	if err := code.Get(context.Background(), client.ObjectKeyFromObject(good[0]), s); err != nil {
		t.Fatal(err)
	}
	s.Spec.Template.Spec.Containers[0].Image = "ghcr.io/attacker/anything:latest"
	if err := code.Update(context.Background(), s); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "engine's image") {
		t.Errorf("updating the StatefulSet to a foreign image as learner code = %v; want Forbidden", err)
	}
}

// With a mirror (--image-registry), the engines' images come from there
// and nowhere else; the namespace carries the registry for the policy.
func TestLearnerCodeImagesComeFromTheConfiguredRegistry(t *testing.T) {
	t.Parallel()
	const registry = "mirror.example.com/library"
	ns, code := codeNamespace(t, registry)
	mirrored := goodStatefulSet(ns, registry)
	if got := mirrored.Spec.Template.Spec.Containers[0].Image; got != registry+"/postgres:17" {
		t.Fatalf("oplab's image with the mirror is %s", got)
	}
	if err := code.Create(context.Background(), mirrored); err != nil {
		t.Errorf("the mirror's engine image, as learner code: %v", err)
	}
	short := goodStatefulSet(ns, "")
	short.Name = "short"
	if why := codeRefusal(short, registry); !strings.Contains(why, registry+"/postgres:VERSION") {
		t.Errorf("the sandbox, with a mirror, says %q of postgres:17; want it refused", why)
	}
	if err := code.Create(context.Background(), short); !apierrors.IsForbidden(err) {
		t.Errorf("postgres:17 from Docker Hub when a mirror is configured, as learner code = %v; want Forbidden", err)
	}
}

// The learner code's ServiceAccount holds only what a reconciler of
// Databases needs, in its own namespace: no new Databases, Pods, roles or
// anything anywhere else.
func TestLearnerCodeMayDoNoMoreThanAReconciler(t *testing.T) {
	t.Parallel()
	ns, code := codeNamespace(t, "")
	ctx := context.Background()
	for _, w := range []struct {
		what string
		do   func() error
	}{
		{"create a Database", func() error {
			return code.Create(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "more"}})
		}},
		{"create a Pod", func() error {
			return code.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "postgres:17"}}}})
		}},
		{"bind a role", func() error {
			return code.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rb"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: CodeServiceAccount, Namespace: ns}}})
		}},
		{"read Secrets in kube-system", func() error { return code.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")) }},
		{"write a ConfigMap in default", func() error {
			return code.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}})
		}},
		{"delete its namespace", func() error { return code.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) }},
	} {
		if err := w.do(); !apierrors.IsForbidden(err) {
			t.Errorf("learner code may %s: %v; want Forbidden", w.what, err)
		}
	}
}
