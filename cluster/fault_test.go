package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/oplab-dev/oplab/internal/polltest"
)

// TestEtcdRefusesClientsWithoutCertificate checks that etcd's client port
// serves only kube-apiserver: neither plain HTTP nor TLS without the
// cluster's client certificate reads a key, while the apiserver's own
// certificate does (so the test speaks to the right port). Every cluster
// serves etcd the same way, so the shared one does.
func TestEtcdRefusesClientsWithoutCertificate(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	cs := clientset(t, c)
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "learner-password", Namespace: "default"},
		StringData: map[string]string{"password": "hunter2-in-etcd"},
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// etcd's JSON gateway: a range over the Secret's key.
	key := base64.StdEncoding.EncodeToString([]byte("/registry/secrets/default/learner-password"))
	body := `{"key":"` + key + `"}`
	get := func(hc *http.Client, base string) (int, string, error) {
		resp, err := hc.Post(base+"/v3/kv/range", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String(), nil
	}
	ca, err := os.ReadFile(c.etcdTLS.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	tlsClient := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs},
		}}
	}

	plain := "http://" + strings.TrimPrefix(c.etcdURL, "https://")
	if code, b, err := get(&http.Client{Timeout: 10 * time.Second}, plain); err == nil && (code == http.StatusOK || strings.Contains(b, "kvs")) {
		t.Errorf("plain HTTP to etcd's client port answered %d %q", code, b)
	}
	if code, b, err := get(tlsClient(), c.etcdURL); err == nil {
		t.Errorf("TLS without a client certificate answered %d %q, want the handshake refused", code, b)
	}
	pair, err := tls.LoadX509KeyPair(c.etcdTLS.ClientCert, c.etcdTLS.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	code, b, err := get(tlsClient(pair), c.etcdURL)
	if err != nil || code != http.StatusOK || !strings.Contains(b, `"kvs"`) {
		t.Errorf("with kube-apiserver's certificate etcd answered %d %q (%v), want the Secret's key", code, b, err)
	}
}

// TestAPIServerRefusesAnonymousSecretReads checks that a request without
// credentials cannot read Secrets, while the admin can.
func TestAPIServerRefusesAnonymousSecretReads(t *testing.T) {
	c := sharedCluster(t)
	anon := rest.AnonymousClientConfig(c.Config())
	hc, err := rest.HTTPClientFor(anon)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) int {
		resp, err := hc.Get(anon.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Anonymous requests exist (envtest's readiness probe is one), and
	// RBAC gives them the health and version endpoints only.
	for _, path := range []string{"/api/v1/secrets", "/api/v1/namespaces/default/secrets", "/api/v1/namespaces/kube-system/secrets"} {
		if code := get(path); code != http.StatusForbidden && code != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s = %d, want 401 or 403", path, code)
		}
	}
	if _, err := clientset(t, c).CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("the admin cannot list Secrets: %v", err)
	}
}

// TestSupervisorRestartsKilledProcesses kills kube-apiserver, then etcd,
// and expects each exit said in words (with its status) and the process
// restarted on the same data and port: the same client keeps working.
func TestSupervisorRestartsKilledProcesses(t *testing.T) {
	t.Parallel()
	needAssets(t)
	events := make(chan Event, 16)
	c, err := Start(context.Background(), Options{Mode: ModeMinimal, Log: &testLog{t: t}, OnEvent: func(e Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	cs := clientset(t, c)
	ctx := context.Background()

	for _, name := range []string{nameAPIServer, nameEtcd} {
		t.Run(name, func(t *testing.T) {
			old := pidOf(t, c, name)
			killed := time.Now()
			if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			down := nextEvent(t, events)
			noticed := time.Since(killed)
			t.Logf("%s noticed %s after the kill: %s", down.Phase, noticed.Round(time.Millisecond), down.Message)
			// A correctness bound, not a speed target: "within seconds"
			// rather than never, as before the supervisor.
			if noticed > 10*time.Second {
				t.Errorf("the exit was noticed after %s, want within seconds", noticed)
			}
			if down.Phase != PhaseDown || down.Process != name || down.PID != old || !strings.Contains(down.Status, "signal 9") {
				t.Errorf("first event = %+v, want %s down, pid %d, killed by signal 9", down, name, old)
			}
			up := nextEvent(t, events)
			t.Logf("%s after %s", up.Phase, time.Since(killed).Round(time.Millisecond))
			if up.Phase != PhaseRestarted || up.Process != name || up.PID == old || !running(up.PID) {
				t.Errorf("second event = %+v, want %s restarted as a new, running process", up, name)
			}
			if err := c.Healthy(); err != nil {
				t.Errorf("Healthy() after the restart = %v", err)
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after-" + name}}
			polltest.Until(t, deadline, "the API usable again", func() (bool, error) {
				_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
				return err == nil, err
			})
		})
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err() = %v after restarts", err)
	}
}

// TestSupervisorGivesUp checks that a process that cannot be restarted
// fails the cluster, with the reason, instead of being retried forever.
func TestSupervisorGivesUp(t *testing.T) {
	t.Parallel()
	needAssets(t)
	events := make(chan Event, 16)
	c, err := Start(context.Background(), Options{Mode: ModeMinimal, Log: &testLog{t: t}, OnEvent: func(e Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	// Without its wrapper, etcd cannot start again.
	if err := os.Remove(c.env.ControlPlane.Etcd.Path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pidOf(t, c, nameEtcd), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, events); e.Phase != PhaseDown {
		t.Errorf("first event %+v, want %s", e, PhaseDown)
	}
	if e := nextEvent(t, events); e.Phase != PhaseFailed || e.Process != nameEtcd {
		t.Errorf("second event %+v, want etcd %s", e, PhaseFailed)
	}
	select {
	case <-c.Failed():
	case <-time.After(deadline):
		t.Fatal("Failed not closed")
	}
	if err := c.Err(); !errors.Is(err, ErrControlPlaneFailed) || !strings.Contains(err.Error(), nameEtcd) {
		t.Errorf("Err() = %v, want ErrControlPlaneFailed naming etcd", err)
	}
	if err := c.Healthy(); !errors.Is(err, ErrControlPlaneFailed) {
		t.Errorf("Healthy() = %v, want ErrControlPlaneFailed", err)
	}
}

// TestDataSurvivesRestart starts a cluster on a data folder, creates
// objects, stops it and starts another on the same folder: the objects are
// there. While the first runs, a second cannot open the folder. The
// restart's first try finds etcd's metrics port taken, which it binds after
// opening the member on the folder: the next try must keep that member,
// not start over on an empty folder as a new cluster's retry does.
func TestDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	needAssets(t)
	data := t.TempDir()
	ctx := context.Background()
	first, err := Start(ctx, Options{Mode: ModeMinimal, Log: &testLog{t: t}, DataDir: data, CRDs: widgetCRD})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Stop() })
	if first.DataDir() != data {
		t.Errorf("DataDir() = %q, want %q", first.DataDir(), data)
	}
	// Reclaim finds a killed oplab's processes by its runtime dir on their
	// command lines: with the data elsewhere, they must still name it.
	expectChildren(t, first, nameEtcd, nameAPIServer)
	cs := clientset(t, first)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "snapshot", Namespace: "kept"}, Data: map[string]string{"rows": "42"}}
	if _, err := cs.CoreV1().ConfigMaps("kept").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := Start(ctx, Options{Mode: ModeMinimal, DataDir: data}); !errors.Is(err, ErrDataDirInUse) {
		t.Errorf("a second cluster on the same data folder: %v, want ErrDataDirInUse", err)
	}

	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	opts := Options{Mode: ModeMinimal, Log: &log, DataDir: data, CRDs: widgetCRD}
	opts.ports.etcd = takenPortForEtcd(t, func(call int) bool { return call == 3 })
	second, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("restart with etcd's metrics port taken: %v", err)
	}
	t.Cleanup(func() { _ = second.Stop() })
	if !strings.Contains(log.String(), "etcd could not bind its ports (try 1 of 3)") {
		t.Errorf("the restart's log does not say its first ports were taken:\n%s", log.String())
	}
	got, err := clientset(t, second).CoreV1().ConfigMaps("kept").Get(ctx, "snapshot", metav1.GetOptions{})
	if err != nil || got.Data["rows"] != "42" {
		t.Errorf("after the restart the ConfigMap is %v (%v), want rows=42", got, err)
	}
	expectWidgetsServed(t, second)
}

func startClusterOn(t *testing.T, data string) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), Options{Mode: ModeMinimal, Log: &testLog{t: t}, DataDir: data, CRDs: widgetCRD})
	if err != nil {
		t.Fatalf("Start on %s: %v", data, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

func pidOf(t *testing.T, c *Cluster, name string) int {
	t.Helper()
	for _, p := range c.processes() {
		if p.Name == name {
			return p.PID
		}
	}
	t.Fatalf("no %s among %v", name, c.processes())
	return 0
}

func nextEvent(t *testing.T, events <-chan Event) Event {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(deadline):
		t.Fatalf("no event after %s", deadline)
		return Event{}
	}
}

// TestSupervisorRestartsKilledChild kills kube-scheduler in a full cluster
// and expects a new one in its place.
func TestSupervisorRestartsKilledChild(t *testing.T) {
	c := sharedCluster(t)
	old := pidOf(t, c, nameScheduler)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, deadline, "a new kube-scheduler", func() (bool, error) {
		pid := pidOf(t, c, nameScheduler)
		return pid != old && running(pid) && mentions(pid, c.dir), nil
	})
	if err := c.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

// TestKubeconfigSurvivesRestart writes the admin kubeconfig and a
// ServiceAccount token kubeconfig (as a learner downloads), stops the
// cluster and starts another on the same data folder: both still work,
// since the port and the CAs are kept. Then, with the old port taken by
// someone else, a start moves to a new port and says so.
func TestKubeconfigSurvivesRestart(t *testing.T) {
	needAssets(t)
	data := t.TempDir()
	ctx := context.Background()
	first, err := Start(ctx, Options{Mode: ModeMinimal, Log: &testLog{t: t}, DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Stop() })
	if from, to := first.PortMoved(); from != 0 || to != 0 {
		t.Errorf("PortMoved() on a new data folder = %d, %d, want 0, 0", from, to)
	}
	admin := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := first.WriteKubeconfig(admin); err != nil {
		t.Fatal(err)
	}
	learner := filepath.Join(t.TempDir(), "learner.kubeconfig")
	writeTokenKubeconfig(t, first, learner)
	for _, path := range []string{admin, learner} {
		if err := kubeconfigWorks(path); err != nil {
			t.Fatalf("before the restart, %s: %v", filepath.Base(path), err)
		}
	}
	oldHost := first.Config().Host
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := startClusterOn(t, data)
	if second.Config().Host != oldHost {
		t.Errorf("after the restart the API server is at %s, want %s", second.Config().Host, oldHost)
	}
	for _, path := range []string{admin, learner} {
		if err := kubeconfigWorks(path); err != nil {
			t.Errorf("after the restart, %s: %v", filepath.Base(path), err)
		}
	}
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}

	// Someone takes the old port while oplab is down.
	u, err := url.Parse(oldHost)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("taking the old port %s: %v", u.Host, err)
	}
	defer ln.Close()
	third := startClusterOn(t, data)
	from, to := third.PortMoved()
	if strconv.Itoa(from) != u.Port() || to == 0 || strings.TrimSuffix(third.Config().Host, "/") != fmt.Sprintf("https://127.0.0.1:%d", to) {
		t.Errorf("with the old port taken, PortMoved() = %d, %d and the host %s, want from %s to the new host's port", from, to, third.Config().Host, u.Port())
	}
	if _, err := clientset(t, third).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the moved API server does not serve: %v", err)
	}
}

// writeTokenKubeconfig writes a kubeconfig as a learner's: the cluster's
// server and CA, and a ServiceAccount token (bound, in default only, to
// cluster-admin: view is aggregated by kcm, which minimal mode lacks).
func writeTokenKubeconfig(t *testing.T, c *Cluster, path string) {
	t.Helper()
	ctx := context.Background()
	cs := clientset(t, c)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "learner", Namespace: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "learner", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "learner", Namespace: "default"}},
	}
	if _, err := cs.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secs := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "learner", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config())
	cfg.CertData, cfg.KeyData = nil, nil
	cfg.BearerToken = tr.Status.Token
	if err := writeKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
}

// kubeconfigWorks loads the kubeconfig as kubectl does and lists the
// ConfigMaps of default through it.
func kubeconfigWorks(path string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	return err
}
