package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// A learner's own reconciler is a tenant, not oplab: run on /code as a
// learner runs it, code that tries every write the issue found it could
// make with oplab's powers is refused each one, in words it can read, and
// nothing of it reaches the cluster.

// attackCode tries each write, keeps what each answered in the ConfigMap
// "attempts", and returns.
const attackCode = `package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

type DatabaseReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

func sts(ns, name, image string) *appsv1.StatefulSet {
	one := int32(1)
	no := false
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{AutomountServiceAccountToken: &no, Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}

func svc(ns, name string, t corev1.ServiceType) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: t, Ports: []corev1.ServicePort{{Port: 80}}}}
}

func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Namespace
	tries := map[string]client.Object{}
	tries["image"] = sts(ns, "evil-image", "ghcr.io/attacker/anything:latest")
	command := sts(ns, "evil-command", "postgres:17")
	command.Spec.Template.Spec.Containers[0].Command = []string{"sh", "-c", "id"}
	tries["command"] = command
	many := sts(ns, "evil-many", "postgres:17")
	n := int32(200)
	many.Spec.Replicas = &n
	tries["replicas"] = many
	claim := sts(ns, "evil-claim", "postgres:17")
	claim.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Ti")}},
		},
	}}
	tries["claim"] = claim
	token := sts(ns, "evil-token", "postgres:17")
	yes := true
	token.Spec.Template.Spec.AutomountServiceAccountToken = &yes
	tries["token"] = token
	host := sts(ns, "evil-hostpath", "postgres:17")
	host.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	tries["hostpath"] = host
	lb := svc(ns, "evil-lb", corev1.ServiceTypeLoadBalancer)
	lb.Spec.ExternalIPs = []string{"10.0.0.10", "8.8.8.8"}
	tries["loadbalancer"] = lb
	tries["nodeport"] = svc(ns, "evil-nodeport", corev1.ServiceTypeNodePort)
	external := svc(ns, "evil-external", corev1.ServiceTypeExternalName)
	external.Spec.ExternalName = "example.com"
	tries["externalname"] = external
	tries["other-namespace"] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "evil"}}
	// oplab may create Databases; a reconciler may not.
	tries["database"] = &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "evil-more"}}

	report := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "attempts"}, Data: map[string]string{}}
	for what, obj := range tries {
		if err := r.Create(ctx, obj); err != nil {
			report.Data[what] = err.Error()
		} else {
			report.Data[what] = "allowed"
		}
	}
	if err := r.Create(ctx, report); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}
`

// runCode posts src to /code/run as the code page does, and fails unless
// it runs.
func runCode(t *testing.T, e *testEnv, c *http.Client, src string) {
	t.Helper()
	resp, body := do(t, c, jsonPost(t, e.http.URL+"/code/run", map[string]string{"source": src}))
	var v struct {
		Running bool            `json:"running"`
		Error   json.RawMessage `json:"error"`
		Fence   string          `json:"fence"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || !v.Running || v.Error != nil {
		t.Fatalf("POST /code/run = %d %s; want the code running", resp.StatusCode, body)
	}
	if !strings.Contains(v.Fence, "seccomp") {
		t.Errorf("Run says the fence is %q; want its layers named", v.Fence)
	}
}

func jsonPost(t *testing.T, u string, body any) *http.Request {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func TestLearnerCodeIsATenant(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	runCode(t, e, c, attackCode)
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bait"}}
	if err := e.client.Create(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	var attempts corev1.ConfigMap
	polltest.Until(t, deadline, "the learner code's report of its attempts", func() (bool, error) {
		err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "attempts"}, &attempts)
		return err == nil, client.IgnoreNotFound(err)
	})
	for what, words := range map[string]string{
		"image":           "may run only a Database engine's image, postgres:VERSION or mysql:VERSION; StatefulSet evil-image runs ghcr.io/attacker/anything:latest",
		"command":         "may not give a container a command or args of its own",
		"replicas":        "asks for 200",
		"claim":           "at most the namespace's storage quota of 10Gi",
		"token":           "with no token mounted (automountServiceAccountToken: false)",
		"hostpath":        "mounts root",
		"loadbalancer":    "Service evil-lb is LoadBalancer with externalIPs 10.0.0.10, 8.8.8.8",
		"nodeport":        "Service evil-nodeport is NodePort",
		"externalname":    "Service evil-external is ExternalName",
		"other-namespace": `your code may touch only namespace "` + ns + `"`,
		// Refused by RBAC, naming the user the code acts as: its own
		// ServiceAccount, not oplab's.
		"database": `User "system:serviceaccount:` + ns + `:oplab-code" cannot create resource "databases"`,
	} {
		if got := attempts.Data[what]; !strings.Contains(got, words) {
			t.Errorf("learner code's %s write answered %q; want it refused, saying %q", what, got, words)
		}
	}
	// And none of it reached the cluster.
	var sets appsv1.StatefulSetList
	if err := e.client.List(t.Context(), &sets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		if strings.HasPrefix(s.Name, "evil-") {
			t.Errorf("StatefulSet %s exists", s.Name)
		}
	}
	var svcs corev1.ServiceList
	if err := e.client.List(t.Context(), &svcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		if strings.HasPrefix(s.Name, "evil-") {
			t.Errorf("Service %s exists (%s)", s.Name, s.Spec.Type)
		}
	}
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "evil"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap default/evil: %v; want it never made", err)
	}
}

// codeStatus is the code page's poll.
func codeStatus(t *testing.T, e *testEnv, c *http.Client) (int, string) {
	t.Helper()
	resp, body := get(t, c, e.http.URL+"/code/status")
	return resp.StatusCode, body
}

// Learner code has budgets of its own: writes at CodeWriteRate a second,
// each wait a throttled step on the timeline; MaxCalls API calls per
// reconcile; and its words cut to a few KiB before they reach the page.
func TestLearnerCodeKeepsToItsBudgets(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	const head = `package controller

import (
	"context"
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

var _ = errors.New
var _ = strings.Repeat
var _ = metav1.ObjectMeta{}
var _ corev1.ConfigMap

type DatabaseReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var db dbv1.Database
	if err := r.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
`
	run := func(t *testing.T, body string) (*http.Client, string) {
		c, ns := e.learner(t)
		runCode(t, e, c, head+body+"\n}\n")
		if err := e.client.Create(t.Context(), &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "busy"}}); err != nil {
			t.Fatal(err)
		}
		return c, ns
	}
	t.Run("writes are paced, each wait on the timeline", func(t *testing.T) {
		t.Parallel()
		_, ns := run(t, `	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: "counter"}, Data: map[string]string{}}
	if err := r.Create(ctx, cm); err != nil {
		// Made by an earlier reconcile (one a loaded machine stopped
		// midway): written to all the same.
		if err := r.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return ctrl.Result{}, err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
	}
	for i := 0; i < 25; i++ {
		cm.Data["n"] = strings.Repeat("x", i)
		if err := r.Update(ctx, cm); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil`)
		polltest.Until(t, testDeadline, "throttled steps on the timeline", func() (bool, error) {
			n := 0
			for _, s := range e.trace(ns, "busy") {
				if s.Type == controller.StepThrottled && s.YourCode && s.Duration > 0 && strings.Contains(s.Message, "limited to 10 a second") {
					n++
				}
			}
			// 26 writes at 10 a second with 10 at once: about 16 waited.
			return n >= 10, nil
		})
	})
	t.Run("a hundred calls, and no more", func(t *testing.T) {
		t.Parallel()
		c, _ := run(t, `	for i := 0; i < 1000; i++ {
		_ = r.Get(ctx, req.NamespacedName, &db)
	}
	return ctrl.Result{}, nil`)
		polltest.Until(t, deadline, "the budget's error on /code/status", func() (bool, error) {
			_, body := codeStatus(t, e, c)
			return strings.Contains(body, `"kind":"budget"`) && strings.Contains(body, "more than 100 API calls in one reconcile"), nil
		})
	})
	t.Run("a 7 MiB error is cut short", func(t *testing.T) {
		t.Parallel()
		c, _ := run(t, `	return ctrl.Result{}, errors.New(strings.Repeat("x", 7<<20))`)
		var body string
		polltest.Until(t, deadline, "the error on /code/status", func() (bool, error) {
			_, body = codeStatus(t, e, c)
			return strings.Contains(body, "cut: the message was"), nil
		})
		if len(body) > 4<<10 {
			t.Errorf("/code/status is %d bytes with a 7 MiB error; want it cut to a few KiB", len(body))
		}
		if !strings.Contains(body, "cut: the message was "+strconv.Itoa(7<<20)+" bytes") {
			t.Errorf("/code/status does not say how long the error was: %.200s…", body)
		}
	})
}
