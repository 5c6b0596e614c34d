package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// TestInClusterModeAsItsServiceAccount runs oplab as it runs in its Pod:
// the manifests applied with kubectl, no --kubeconfig, the Pod's
// environment and a service-account folder holding a token minted for
// oplab's ServiceAccount. oplab must choose in-cluster mode, start no
// control plane, and serve a learner's round — session namespace, create →
// Ready, edit, a pitfall, drift, a controller restart, delete with the
// final snapshot — with only that identity.
func TestInClusterModeAsItsServiceAccount(t *testing.T) {
	clustertest.Assets(t)
	ctx := context.Background()
	// The CRD goes in before kube-controller-manager starts, so its quota
	// controller counts the learners' Databases from the start (see
	// controller/config's tests); kubectl apply -k then finds it in place.
	crds, err := controller.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.Start(ctx, cluster.Options{Mode: cluster.ModeFull, CRDs: crds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cl.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cl.KubectlPath(), "--kubeconfig", kubeconfig, "apply", "-k", "../../controller/config/default").CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	}

	// The Pod's service-account folder and environment, as the kubelet makes them.
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = dbv1.AddToScheme(scheme)
	admin, err := client.New(cl.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "oplab-system", Name: "oplab"}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("minting oplab's token: %v", err)
	}
	saDir := t.TempDir()
	for name, body := range map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": cl.Config().CAData, "namespace": []byte("oplab-system")} {
		if err := os.WriteFile(filepath.Join(saDir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api, err := url.Parse(cl.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", api.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", api.Port())
	old := serviceAccountDir
	serviceAccountDir = saDir
	t.Cleanup(func() { serviceAccountDir = old })

	// The Deployment's arguments, but on loopback.
	c, err := parseFlags([]string{"--addr", "127.0.0.1:0", "--install-crds=false", "--namespace-roles", "oplab-controller,oplab-web", "--session-idle", "1m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	before := len(alive(descendants(os.Getpid())))
	runCtx, stop := context.WithCancel(ctx)
	out := &syncWriter{w: &strings.Builder{}}
	done := make(chan error, 1)
	go func() { done <- run(runCtx, c, out) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("oplab: %v", err)
		}
	})
	var base string
	polltest.Until(t, 2*time.Minute, "oplab to serve", func() bool {
		select {
		case err := <-done:
			t.Fatalf("oplab stopped: %v\n%s", err, out.String())
		default:
		}
		m := servingRe.FindStringSubmatch(out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	if !strings.Contains(out.String(), "Chose the in-cluster API server") || !strings.Contains(out.String(), "namespace oplab-system") {
		t.Errorf("oplab did not say it chose in-cluster mode:\n%s", out.String())
	}
	if strings.Contains(out.String(), "Installed the Database CRD") {
		t.Errorf("oplab installed the CRD despite --install-crds=false:\n%s", out.String())
	}
	polltest.Until(t, time.Minute, "/readyz to answer 200", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// A learner creates a Database through the lab's form (which makes the
	// session's namespace), waits for Ready, and deletes it.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	page := func() string {
		resp, err := hc.Get(base + "/lab")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post := func(path string, form url.Values) {
		t.Helper()
		resp, err := hc.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			t.Fatalf("POST %s = %d", path, resp.StatusCode)
		}
	}
	page()
	post("/lab/databases", url.Values{"name": {"shop"}, "engine": {"postgres"}, "replicas": {"1"}})
	var labNS string
	polltest.Until(t, time.Minute, "the session's namespace", func() bool {
		var l corev1.NamespaceList
		if err := admin.List(ctx, &l, client.MatchingLabels{"oplab.dev/lab": "true"}); err != nil || len(l.Items) != 1 {
			return false
		}
		labNS = l.Items[0].Name
		return true
	})
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: labNS, Name: "shop"}}
	waitForErr(t, time.Minute, "Database shop to be Ready", page, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(db.Status.Conditions, controller.ConditionReady) {
			return fmt.Errorf("conditions %+v", db.Status.Conditions)
		}
		return nil
	})

	// The lab's other actions, each a call oplab's roles must allow: edit
	// (patch the Database), a pitfall (patch its annotations), drift (delete
	// a child behind the controller's back, which it recreates), and
	// stopping and starting the controller (a fresh manager, fresh caches).
	post("/lab/databases/shop/edit", url.Values{"replicas": {"2"}})
	waitForErr(t, time.Minute, "the edit to be Ready", page, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(db.Status.Conditions, controller.ConditionReady)
		if db.Spec.Replicas != 2 || ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != db.Generation {
			return fmt.Errorf("replicas %d, generation %d, Ready %+v", db.Spec.Replicas, db.Generation, ready)
		}
		return nil
	})
	post("/lab/databases/shop/pitfall", url.Values{"pitfall": {"drop-events"}})
	waitForErr(t, time.Minute, "the pitfall annotation", page, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		if got := db.Annotations[controller.PitfallAnnotation]; got != "drop-events" {
			return fmt.Errorf("annotation %q", got)
		}
		return nil
	})
	post("/lab/databases/shop/pitfall", url.Values{"pitfall": {""}})
	var secret corev1.Secret
	if err := admin.Get(ctx, client.ObjectKey{Namespace: labNS, Name: db.Status.SecretName}, &secret); err != nil {
		t.Fatal(err)
	}
	post("/lab/databases/shop/children/secret/delete", nil)
	waitForErr(t, time.Minute, "the controller to recreate the deleted Secret", page, func() error {
		var now corev1.Secret
		if err := admin.Get(ctx, client.ObjectKeyFromObject(&secret), &now); err != nil {
			return err
		}
		if now.UID == secret.UID {
			return fmt.Errorf("still the first Secret %s", now.UID)
		}
		return nil
	})
	post("/lab/controller/stop", nil)
	post("/lab/controller/start", nil)
	polltest.Until(t, time.Minute, "/readyz to answer 200 after a restart of the controller", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	post("/lab/databases/shop/delete", nil)
	waitForErr(t, time.Minute, "the final snapshot", page, func() error {
		return admin.Get(ctx, client.ObjectKey{Namespace: labNS, Name: controller.SnapshotName("shop")}, &corev1.ConfigMap{})
	})
	if n := len(alive(descendants(os.Getpid()))); n != before {
		t.Errorf("this process had %d descendants before oplab started, %d while it served: in-cluster mode must start no control plane", before, n)
	}
}

// waitForErr is polltest.Until for a condition that says why it is not met
// yet; the failure shows that reason and what the lab page says.
func waitForErr(t *testing.T, d time.Duration, what string, page func() string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := polltest.Wait(ctx, cond); err != nil {
		t.Fatalf("timed out after %s waiting for %s: %v\nthe lab page says:\n%s", d, what, err, page())
	}
}
