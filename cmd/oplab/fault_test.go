package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// TestReadyzAnswersWhileAPIServerFrozen freezes kube-apiserver (SIGSTOP)
// and expects /readyz to say 503 at once rather than hang on the API
// server, then to recover after SIGCONT.
func TestReadyzAnswersWhileAPIServerFrozen(t *testing.T) {
	t.Parallel()
	p := startOplab(t, "--mode", "minimal", "--ephemeral", "--write-kubeconfig", "")
	apiserver := descendantNamed(t, p, "kube-apiserver")
	freeze(t, apiserver)

	hc := &http.Client{Timeout: time.Minute}
	began := time.Now()
	resp, err := hc.Get(p.url + "/readyz")
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("/readyz with kube-apiserver frozen: %d after %s", resp.StatusCode, took.Round(time.Millisecond))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz with kube-apiserver frozen = %d, want 503", resp.StatusCode)
	}
	// A correctness bound, far above the 1 s check timeout: before,
	// /readyz hung for 32 s.
	if took > 10*time.Second {
		t.Errorf("/readyz took %s with kube-apiserver frozen, want an answer within seconds", took)
	}

	if err := syscall.Kill(apiserver, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, time.Minute, "/readyz to answer 200 after SIGCONT", func() bool { return readyz(p) == http.StatusOK })
}

// TestOplabNoticesKilledAPIServer kills kube-apiserver under a running
// oplab and expects it said in the log and to viewers, then restarted.
func TestOplabNoticesKilledAPIServer(t *testing.T) {
	t.Parallel()
	p := startOplab(t, "--mode", "minimal", "--ephemeral", "--write-kubeconfig", "")
	ws := dialViewer(t, p)
	steps := make(chan controller.Step, 64)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				close(steps)
				return
			}
			var batch []controller.Step
			if json.Unmarshal(data, &batch) == nil {
				for _, s := range batch {
					if s.Object.Kind == "ControlPlane" {
						steps <- s
					}
				}
			}
		}
	}()

	apiserver := descendantNamed(t, p, "kube-apiserver")
	killed := time.Now()
	if err := syscall.Kill(apiserver, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, "the log to say kube-apiserver died", func() bool {
		return strings.Contains(p.out.String(), fmt.Sprintf("kube-apiserver (pid %d) exited unexpectedly: killed by signal 9", apiserver))
	})
	t.Logf("logged %s after the kill", time.Since(killed).Round(time.Millisecond))

	var phases []string
	for len(phases) < 2 {
		select {
		case s, ok := <-steps:
			if !ok {
				t.Fatalf("the viewer's socket closed; phases so far %v", phases)
			}
			if s.Type != controller.StepController || s.Object.Name != "kube-apiserver" || s.Message == "" {
				t.Errorf("control-plane step %+v, want a controller step naming kube-apiserver, with a message", s)
			}
			phases = append(phases, s.Phase)
		case <-time.After(time.Minute):
			t.Fatalf("viewer got phases %v, want control-plane-down then control-plane-restarted", phases)
		}
	}
	if strings.Join(phases, ",") != "control-plane-down,control-plane-restarted" {
		t.Errorf("viewer got phases %v, want control-plane-down then control-plane-restarted", phases)
	}
	polltest.Until(t, time.Minute, "/readyz to answer 200 after the restart", func() bool { return readyz(p) == http.StatusOK })
	if p.cmd.ProcessState != nil {
		t.Errorf("oplab exited: %v", p.cmd.ProcessState)
	}
}

// The fault soak deletes 20 Databases while killing oplab (SIGKILL) at
// random points and restarting it on its data, and 20 more while killing
// kube-apiserver under a running oplab, and counts what went wrong: lost
// snapshots, orphaned children and Databases stuck in deletion. All must
// be zero. The two rounds are two tests, each on an oplab and a cluster of
// its own, so that they run side by side: one soak of both was the
// package's longest test by four times, and ended its run alone.

// TestFaultSoakOplabKilled is the soak's first round: oplab itself killed
// while deletions are under way, and restarted on its data.
func TestFaultSoakOplabKilled(t *testing.T) {
	t.Parallel()
	rng, began := soakRand(t)
	data := t.TempDir()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	args := []string{"--mode", "full", "--data-dir", data, "--write-kubeconfig", kubeconfig}
	p := startOplab(t, args...)
	cl := soakClient(t, kubeconfig)
	names := createDatabases(t, cl, "soak-oplab", 20)
	waitDatabasesReady(t, cl, "soak-oplab", 20)
	for batch := range 4 {
		deleteDatabases(t, cl, "soak-oplab", names[batch*5:batch*5+5])
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = p.cmd.Wait()
		p = startOplab(t, args...)
		cl = soakClient(t, kubeconfig)
	}
	expectCleanDeletes(t, cl, "soak-oplab", names)
	t.Logf("soak took %s", time.Since(began).Round(time.Second))
}

// TestFaultSoakAPIServerKilled is the soak's second round: kube-apiserver
// killed under a running oplab while deletions are under way.
func TestFaultSoakAPIServerKilled(t *testing.T) {
	t.Parallel()
	rng, began := soakRand(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	p := startOplab(t, "--mode", "full", "--data-dir", t.TempDir(), "--write-kubeconfig", kubeconfig)
	cl := soakClient(t, kubeconfig)
	names := createDatabases(t, cl, "soak-apiserver", 20)
	waitDatabasesReady(t, cl, "soak-apiserver", 20)
	restarts := strings.Count(p.out.String(), "Restarted kube-apiserver")
	for batch := range 4 {
		deleteDatabases(t, cl, "soak-apiserver", names[batch*5:batch*5+5])
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if err := syscall.Kill(descendantNamed(t, p, "kube-apiserver"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitReady(t, p)
	}
	expectCleanDeletes(t, cl, "soak-apiserver", names)
	if got := strings.Count(p.out.String(), "Restarted kube-apiserver") - restarts; got != 4 {
		t.Errorf("oplab restarted kube-apiserver %d times, want 4 (one per kill)", got)
	}
	t.Logf("soak took %s", time.Since(began).Round(time.Second))
}

// soakRand skips the soak in -short runs and returns the random source
// for its kill points (its seed logged) and the time the round began.
func soakRand(t *testing.T) (*rand.Rand, time.Time) {
	t.Helper()
	if testing.Short() {
		t.Skip("a round of the soak runs for about a minute")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0)), time.Now()
}

// runOplab runs the binary to its end (bounded) and returns its output.
func runOplab(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, oplabBinary(t), args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func soakClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = dbv1.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// createDatabases creates n Databases in a new namespace.
func createDatabases(t *testing.T, cl client.Client, ns string, n int) []string {
	t.Helper()
	ctx := context.Background()
	// Labelled with the default instance: oplab's controller reconciles
	// only its instance's namespaces (not a lab session's: no oplab.dev/lab).
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{labns.InstanceLabel: labns.Instance(labns.NamespacePrefix)}}}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range n {
		db := &dbv1.Database{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%02d", i), Namespace: ns},
			Spec:       dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 1},
		}
		if err := cl.Create(ctx, db); err != nil {
			t.Fatal(err)
		}
		names = append(names, db.Name)
	}
	return names
}

// waitDatabasesReady waits until n Databases in ns are Ready, so that every
// delete goes through the whole finalizer.
func waitDatabasesReady(t *testing.T, cl client.Client, ns string, n int) {
	t.Helper()
	polltest.Until(t, 2*time.Minute, "every Database in "+ns+" Ready", func() bool {
		var list dbv1.DatabaseList
		if err := cl.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false
		}
		ready := 0
		for _, db := range list.Items {
			if meta.IsStatusConditionTrue(db.Status.Conditions, controller.ConditionReady) {
				ready++
			}
		}
		return ready == n
	})
}

func deleteDatabases(t *testing.T, cl client.Client, ns string, names []string) {
	t.Helper()
	for _, name := range names {
		db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if err := cl.Delete(context.Background(), db); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// expectCleanDeletes waits (bounded) for the deleted Databases to be gone,
// then counts lost snapshots, orphaned children and stuck Databases.
func expectCleanDeletes(t *testing.T, cl client.Client, ns string, names []string) {
	t.Helper()
	ctx := context.Background()
	var stuck, lost, orphans int
	until := time.Now().Add(90 * time.Second)
	for {
		var list dbv1.DatabaseList
		err := cl.List(ctx, &list, client.InNamespace(ns))
		stuck = len(list.Items)
		if err == nil && stuck == 0 || time.Now().After(until) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, name := range names {
		var cm corev1.ConfigMap
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.SnapshotName(name)}, &cm); err != nil {
			lost++
			t.Logf("snapshot of %s: %v", name, err)
		}
	}
	// Children are garbage-collected once their Database is gone: allow
	// the collector its time, then count what it left.
	countOrphans := func() int {
		n := 0
		var sts appsv1.StatefulSetList
		var svcs corev1.ServiceList
		var secrets corev1.SecretList
		var pods corev1.PodList
		for _, l := range []client.ObjectList{&sts, &svcs, &secrets, &pods} {
			if err := cl.List(ctx, l, client.InNamespace(ns)); err != nil {
				return -1
			}
		}
		n += len(sts.Items) + len(svcs.Items) + len(pods.Items)
		for _, s := range secrets.Items {
			if len(s.OwnerReferences) > 0 {
				n++
			}
		}
		return n
	}
	for until := time.Now().Add(time.Minute); ; {
		orphans = countOrphans()
		if orphans == 0 || time.Now().After(until) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%s: %d deletes, %d lost snapshots, %d orphaned children, %d Databases stuck", ns, len(names), lost, orphans, stuck)
	if lost != 0 || orphans != 0 || stuck != 0 {
		t.Errorf("%d lost snapshots, %d orphaned children, %d Databases stuck; want 0 of each", lost, orphans, stuck)
	}
}

// deleteCRD deletes the Database CRD from the cluster of kubeconfig, if it
// is there, and waits until it is gone.
func deleteCRD(t *testing.T, kubeconfig string) error {
	t.Helper()
	cl := soakClient(t, kubeconfig)
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: databasesCRD}}
	if err := cl.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	polltest.Until(t, time.Minute, "the Database CRD to be gone", func() bool {
		return apierrors.IsNotFound(cl.Get(context.Background(), client.ObjectKeyFromObject(crd), crd))
	})
	return nil
}

// descendantNamed returns the pid of the one process below oplab whose
// executable is name.
func descendantNamed(t *testing.T, p *oplabProc, name string) int {
	t.Helper()
	for _, pid := range descendants(p.cmd.Process.Pid) {
		if procExe(pid) == name {
			return pid
		}
	}
	t.Fatalf("no %s below oplab", name)
	return 0
}

// freeze stops pid (SIGSTOP) and returns once every one of its threads
// is stopped. kill returns before that: the thread that takes the signal
// must first be scheduled to stop the others, and on a loaded machine the
// threads already running went on answering for a few milliseconds (a
// /readyz of 200 after 5 ms with kube-apiserver "frozen", in CI).
func freeze(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	polltest.Until(t, 30*time.Second, fmt.Sprintf("every thread of %d stopped", pid), func() bool {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil || len(tasks) == 0 {
			return false
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				return false
			}
			// The state follows the command name in parentheses: T is stopped.
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i < 0 || !strings.HasPrefix(s[i+1:], " T") {
				return false
			}
		}
		return true
	})
}

// procExe is the base name of pid's executable as its command line gives it.
func procExe(pid int) string {
	b, err := readProc(pid, "cmdline")
	if err != nil {
		return ""
	}
	arg0, _, _ := strings.Cut(string(b), "\x00")
	return filepath.Base(arg0)
}

// waitReady waits for /readyz to answer 200, and says why not on timeout.
func waitReady(t *testing.T, p *oplabProc) {
	t.Helper()
	until := time.Now().Add(time.Minute)
	for readyz(p) != http.StatusOK {
		if time.Now().After(until) {
			resp, err := http.Get(p.url + "/readyz")
			var body strings.Builder
			if err == nil {
				_, _ = io.Copy(&body, resp.Body)
				resp.Body.Close()
			}
			t.Fatalf("oplab not ready after a minute: %v %s\nstdout:\n%s\nstderr (tail):\n%s", err, body.String(), p.out.String(), tail(p.logs.String(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func readyz(p *oplabProc) int {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(p.url + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// dialViewer opens a lab session and its /ws stream, as a browser does.
func dialViewer(t *testing.T, p *oplabProc) *websocket.Conn {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	resp, err := hc.Get(p.url + "/lab")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(p.url)
	h := http.Header{"Origin": {p.url}}
	for _, c := range jar.Cookies(u) {
		h.Add("Cookie", c.String())
	}
	ws, resp, err := websocket.DefaultDialer.Dial("ws://"+u.Host+"/ws", h)
	if err != nil {
		t.Fatalf("dialing /ws: %v (%v)", err, resp)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// TestRestartKeepsTheClusterAndTheLearnersLab stops oplab (SIGTERM) and
// starts it again on its data folder. While the first runs, a second oplab
// on the same folder refuses, naming it. After the restart the namespace,
// the Database and a snapshot made before are all there, and, as a learner
// sees it, the browser's cookie opens the same lab, whose timeline says
// that oplab restarted. One restart serves all three: each start is a
// control plane's.
func TestRestartKeepsTheClusterAndTheLearnersLab(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	args := []string{"--mode", "minimal", "--data-dir", data, "--write-kubeconfig", kubeconfig}
	jar, _ := cookiejar.New(nil) // cookies are per host, not per port: the restarted oplab's new port gets them too
	labNamespace := func(p *oplabProc) string {
		t.Helper()
		resp, err := (&http.Client{Jar: jar}).Get(p.url + "/lab")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`data-namespace="([a-z0-9-]+)"`).FindSubmatch(b)
		if resp.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("GET /lab = %d with no namespace on the page:\n%s", resp.StatusCode, tail(string(b), 2000))
		}
		return string(m[1])
	}

	p := startOplab(t, args...)
	if !strings.Contains(p.out.String(), "Cluster data is kept in "+data) {
		t.Errorf("oplab did not say where the data is kept:\n%s", p.out.String())
	}
	out, err := runOplab(t, "--addr", "127.0.0.1:0", "--mode", "minimal", "--data-dir", data, "--write-kubeconfig", "")
	if err == nil {
		t.Fatalf("a second oplab on the same --data-dir ran:\n%s", out)
	}
	if !strings.Contains(out, "in use") || !strings.Contains(out, data) {
		t.Errorf("the second oplab's error does not say the data folder is in use:\n%s", out)
	}
	before := labNamespace(p)
	cl := soakClient(t, kubeconfig)
	names := createDatabases(t, cl, "kept", 1)
	ctx := context.Background()
	snap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: controller.SnapshotName("gone"), Namespace: "kept"}, Data: map[string]string{"rows": "7"}}
	if err := cl.Create(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("oplab after SIGTERM: %v\n%s", err, p.logs.String())
	}

	p = startOplab(t, args...)
	cl = soakClient(t, kubeconfig)
	var db dbv1.Database
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "kept", Name: names[0]}, &db); err != nil {
		t.Errorf("the Database after the restart: %v", err)
	}
	var cm corev1.ConfigMap
	if err := cl.Get(ctx, client.ObjectKeyFromObject(snap), &cm); err != nil || cm.Data["rows"] != "7" {
		t.Errorf("the snapshot after the restart: %v %v", cm.Data, err)
	}
	if after := labNamespace(p); after != before {
		t.Fatalf("after the restart the learner's cookie opens %s; want their namespace %s", after, before)
	}

	u, _ := url.Parse(p.url)
	h := http.Header{"Origin": {p.url}}
	for _, c := range jar.Cookies(u) {
		h.Add("Cookie", c.String())
	}
	ws, resp, err := websocket.DefaultDialer.Dial("ws://"+u.Host+"/ws", h)
	if err != nil {
		t.Fatalf("dialing /ws: %v (%v)", err, resp)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
	var seen []string
	for {
		var frame []struct {
			Type    string `json:"type"`
			Phase   string `json:"phase"`
			Message string `json:"message"`
			Object  struct {
				Namespace string `json:"namespace"`
			} `json:"object"`
		}
		if err := ws.ReadJSON(&frame); err != nil {
			t.Fatalf("no 'oplab restarted' step on the learner's stream (%v); saw %v", err, seen)
		}
		for _, m := range frame {
			if m.Type == "controller" && m.Phase == "restarted" && m.Object.Namespace == before && strings.Contains(m.Message, "oplab restarted") {
				return
			}
			seen = append(seen, m.Type+"/"+m.Phase)
		}
	}
}

// TestFrozenEtcdGivesTheLearnerATimeout freezes etcd (SIGSTOP) under a
// running lab: a create from the lab's form answers 504 with a message
// that says the cluster did not answer, rather than hanging. After SIGCONT
// the lab creates again.
func TestFrozenEtcdGivesTheLearnerATimeout(t *testing.T) {
	t.Parallel()
	p := startOplab(t, "--mode", "minimal", "--ephemeral", "--write-kubeconfig", "")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: time.Minute}
	resp, err := hc.Get(p.url + "/lab")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	create := func(name string) (int, string, time.Duration) {
		t.Helper()
		req, err := http.NewRequest("POST", p.url+"/lab/databases", strings.NewReader(url.Values{"name": {name}, "engine": {"postgres"}, "replicas": {"1"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		began := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res struct{ Message string }
		_ = json.NewDecoder(resp.Body).Decode(&res)
		return resp.StatusCode, res.Message, time.Since(began)
	}
	if code, msg, _ := create("before"); code != http.StatusOK {
		t.Fatalf("creating before the freeze: %d %s", code, msg)
	}

	etcd := descendantNamed(t, p, "etcd")
	freeze(t, etcd)
	code, msg, took := create("frozen")
	t.Logf("figure: a lab create with etcd frozen answered %d after %s: %s", code, took.Round(time.Millisecond), msg)
	if code != http.StatusGatewayTimeout || !strings.Contains(msg, "did not answer within") {
		t.Errorf("a create with etcd frozen = %d %q, want 504 saying the cluster did not answer", code, msg)
	}
	if err := syscall.Kill(etcd, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, time.Minute, "a create to work again after SIGCONT", func() bool {
		code, _, _ := create("after")
		// 409: the create made while frozen may have landed since.
		return code == http.StatusOK || code == http.StatusConflict
	})
}

// TestDeletedCRDIsInstalledAgain deletes the Database CRD under a running
// embedded oplab, as an administrator might: oplab installs it again, and
// the controller reconciles a Database made afterwards (its finalizer).
func TestDeletedCRDIsInstalledAgain(t *testing.T) {
	t.Parallel()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	p := startOplab(t, "--mode", "minimal", "--ephemeral", "--write-kubeconfig", kubeconfig)
	cl := soakClient(t, kubeconfig)
	createDatabases(t, cl, "crd", 1)
	ctx := context.Background()
	var before apiextensionsv1.CustomResourceDefinition
	if err := cl.Get(ctx, client.ObjectKey{Name: databasesCRD}, &before); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := cl.Delete(ctx, &before); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 2*time.Minute, "the CRD to be installed again", func() bool {
		var crd apiextensionsv1.CustomResourceDefinition
		err := cl.Get(ctx, client.ObjectKey{Name: databasesCRD}, &crd)
		return err == nil && crd.UID != before.UID && crdEstablished(&crd)
	})
	t.Logf("figure: the deleted CRD was established again %s after the delete", time.Since(deleted).Round(time.Millisecond))
	// The log line follows the install, so it may come a moment after the
	// CRD is established.
	polltest.Until(t, time.Minute, "oplab's log to say it installed the CRD again", func() bool {
		return strings.Contains(p.logs.String(), "installed it again")
	})
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "after", Namespace: "crd"}, Spec: dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 1}}
	polltest.Until(t, 2*time.Minute, "a Database to be created after the reinstall", func() bool {
		err := cl.Create(ctx, db.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	polltest.Until(t, 2*time.Minute, "the controller to reconcile a Database made after the reinstall", func() bool {
		return cl.Get(ctx, client.ObjectKeyFromObject(db), db) == nil && slices.Contains(db.Finalizers, controller.Finalizer)
	})
	polltest.Until(t, time.Minute, "/readyz to answer 200", func() bool { return readyz(p) == http.StatusOK })
}

// testDeletedCRDNamedWhenOplabMayNotInstall runs oplab with
// --install-crds=false against a cluster it did not start and deletes the
// CRD there: /readyz says it is missing and names the kubectl line to run.
func testDeletedCRDNamedWhenOplabMayNotInstall(t *testing.T) {
	ext, kubeconfig := externalCluster(t)
	// The CRD in place first, as an admin installs it for an oplab that
	// may not (an earlier test may have left it gone).
	if err := controller.InstallCRDs(context.Background(), ext.Config()); err != nil {
		t.Fatal(err)
	}
	p := startOplab(t, "--kubeconfig", kubeconfig, "--install-crds=false")
	cl := soakClient(t, kubeconfig)
	ctx := context.Background()
	if err := cl.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: databasesCRD}}); err != nil {
		t.Fatal(err)
	}
	var body string
	polltest.Until(t, time.Minute, "/readyz to name the missing CRD and the line to run", func() bool {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, crdApplyLine)
	})
	t.Logf("/readyz: %s", strings.TrimSpace(body))
	polltest.Until(t, time.Minute, "oplab's log to say what to run", func() bool { return strings.Contains(p.logs.String(), crdApplyLine) })
	var crd apiextensionsv1.CustomResourceDefinition
	if err := cl.Get(ctx, client.ObjectKey{Name: databasesCRD}, &crd); !apierrors.IsNotFound(err) {
		t.Errorf("with --install-crds=false oplab put the CRD back (%v)", err)
	}
}
