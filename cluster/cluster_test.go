package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/internal/polltest"
)

// deadline bounds every wait in these tests. It is generous on purpose: the
// tests check that things happen, never how fast.
const deadline = 2 * time.Minute

// helperEnv switches the test binary into a helper that starts a cluster of
// the mode it names, prints its dir and child pids, and waits to be killed.
const helperEnv = "OPLAB_CLUSTER_TEST_HELPER"

// helperDataEnv, when set, names the helper cluster's data folder.
const helperDataEnv = "OPLAB_CLUSTER_TEST_HELPER_DATA"

// The tests that start a cluster of their own call t.Parallel: a start is
// mostly waiting on etcd and kube-apiserver, and two overlap well. A test
// that hands a start a taken port does it through that start's Options,
// so it runs side by side too. Those that change the environment, that
// count what Reclaim finds, that stop the shared cluster's processes, or
// that need the port a stopped cluster freed to stay free until it starts
// again, stay serial, and Go runs them first.
func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger, which complains
	// (with a stack trace) when nobody ever sets one.
	ctrllog.SetLogger(logr.Discard())
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(Mode(mode)))
	}
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared cluster:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runHelper is the helper process of TestChildrenDieWithKilledParent.
func runHelper(mode Mode) int {
	c, err := Start(context.Background(), Options{Mode: mode, DataDir: os.Getenv(helperDataEnv)})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	var pids []string
	for _, p := range c.pids() {
		pids = append(pids, strconv.Itoa(p.PID))
	}
	fmt.Println("DIR", c.dir)
	fmt.Println("CERTS", c.env.WebhookInstallOptions.LocalServingCertDir)
	fmt.Println("PIDS", strings.Join(pids, " "))
	select {} // until the test kills us
}

// needAssets skips the test when the control plane is not provisioned,
// unless on CI, where a missing control plane is a failure.
func needAssets(t testing.TB) {
	t.Helper()
	if _, err := FindAssets(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI=%s and %v", os.Getenv("CI"), err)
		}
		t.Skipf("skipping: %v (unset CI allows the skip)", err)
	}
}

var (
	shared     *Cluster
	sharedErr  error
	sharedOnce sync.Once
)

// sharedCluster returns the full-mode cluster the tests share, starting it
// on first use; TestMain stops it.
func sharedCluster(t *testing.T) *Cluster {
	t.Helper()
	needAssets(t)
	sharedOnce.Do(func() {
		var log *os.File
		if os.Getenv("OPLAB_CLUSTER_LOG") != "" {
			log = os.Stderr
		}
		opts := Options{Mode: ModeFull, CRDs: widgetCRD}
		if log != nil {
			opts.Log = log
		}
		shared, sharedErr = Start(context.Background(), opts)
	})
	if sharedErr != nil {
		t.Fatalf("starting the shared cluster: %v", sharedErr)
	}
	return shared
}

// widgetCRD is a minimal CRD every test cluster installs, the same objects
// each time, as callers of Start do.
var widgetCRD = []*apiextensionsv1.CustomResourceDefinition{{
	ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.oplab.dev"},
	Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "test.oplab.dev",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList", Singular: "widget"},
		Scope: apiextensionsv1.NamespaceScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: ptr.To(true),
			}},
		}},
	},
}}

// expectWidgetsServed checks that Start returned with widgetCRD installed.
func expectWidgetsServed(t *testing.T, c *Cluster) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "test.oplab.dev", Version: "v1", Resource: "widgets"}
	if _, err := dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing Widgets right after Start: %v", err)
	}
}

// startCluster starts a cluster for one test and stops it when the test
// ends (the test may stop it earlier).
func startCluster(t *testing.T, ctx context.Context, mode Mode) *Cluster {
	t.Helper()
	needAssets(t)
	c, err := Start(ctx, Options{Mode: mode, Log: &testLog{t: t}, CRDs: widgetCRD})
	if err != nil {
		t.Fatalf("Start(%s): %v", mode, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

// testLog passes progress lines to t.Log and, unless OPLAB_CLUSTER_LOG is
// set, drops the children's output, which would bury them.
type testLog struct {
	t   *testing.T
	buf []byte
}

func (l *testLog) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		if !strings.HasPrefix(line, "[") || os.Getenv("OPLAB_CLUSTER_LOG") != "" {
			l.t.Log(line)
		}
	}
}

func clientset(t *testing.T, c *Cluster) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	return cs
}

// pids returns the cluster's child processes, for tests.
func (c *Cluster) pids() []procRef {
	return c.processes()
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	return alive(pid, 0)
}

// expectChildren checks that c runs exactly the named processes, each one
// live and with the cluster's dir on its command line.
func expectChildren(t *testing.T, c *Cluster, names ...string) []procRef {
	t.Helper()
	refs := c.pids()
	var got []string
	for _, r := range refs {
		got = append(got, r.Name)
		if !running(r.PID) || !mentions(r.PID, c.dir) {
			t.Errorf("%s (pid %d) is not running as a child of %s", r.Name, r.PID, c.dir)
		}
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("children = %v, want %v", got, names)
	}
	return refs
}

// expectGone waits until none of refs runs and, unless dir is "", dir does
// not exist.
func expectGone(t *testing.T, refs []procRef, dir string) {
	t.Helper()
	until := time.Now().Add(deadline)
	for {
		var left []string
		for _, r := range refs {
			if running(r.PID) {
				left = append(left, fmt.Sprintf("%s (pid %d)", r.Name, r.PID))
			}
		}
		var statErr error
		if dir != "" {
			_, statErr = os.Stat(dir)
		}
		if len(left) == 0 && (dir == "" || os.IsNotExist(statErr)) {
			return
		}
		if time.Now().After(until) {
			t.Fatalf("still running after %s: %v; dir %s stat: %v", deadline, left, dir, statErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMinimalStartsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	c := startCluster(t, context.Background(), ModeMinimal)
	if c.Mode() != ModeMinimal {
		t.Errorf("Mode() = %q, want %q", c.Mode(), ModeMinimal)
	}
	u, err := url.Parse(c.Config().Host)
	if err != nil {
		t.Fatalf("parsing host: %v", err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Errorf("API server at %s, want a loopback address", u.Host)
	}

	expectWidgetsServed(t, c)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "minimal"}}
	if _, err := clientset(t, c).CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}

	refs := expectChildren(t, c, nameEtcd, nameAPIServer)
	expectStopLeavesNothing(t, c, refs)
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// takenPortForEtcd returns a port source for Options.ports.etcd that hands
// out a port held by this test at the calls taken picks (counted from 1;
// each try asks for etcd's client, peer and metrics ports in that order),
// as when a busy machine's connection takes a port between its check and
// etcd's bind.
func takenPortForEtcd(t *testing.T, taken func(call int) bool) func() (int, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	calls := 0
	return func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if taken(calls) {
			return port, nil
		}
		return freePort()
	}
}

// TestStartTriesOtherPortsWhenEtcdsAreTaken: a start whose etcd cannot bind
// a port tries others. Where the bind fails matters: etcd binds its client
// port before it writes anything, and its metrics port only after it has
// written a new member to the data folder, which a retry on other ports
// may never elect (before the folder was emptied between tries, two starts
// in seven here waited out envtest's minute, twice, and failed).
// TestDataSurvivesRestart takes the metrics port of a restart.
func TestStartTriesOtherPortsWhenEtcdsAreTaken(t *testing.T) {
	t.Parallel()
	needAssets(t)
	var log bytes.Buffer
	opts := Options{Mode: ModeMinimal, Log: &log, CRDs: widgetCRD}
	// The first try's client port, then the second try's metrics port.
	opts.ports.etcd = takenPortForEtcd(t, func(call int) bool { return call == 1 || call == 6 })
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start with etcd's client port, then its metrics port, taken: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	for _, want := range []string{"etcd could not bind its ports (try 1 of 3)", "etcd could not bind its ports (try 2 of 3)"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	expectWidgetsServed(t, c)
}

// takenPortForAPIServer makes apiserverPort hand out a port held by this
// test the first time, as when another cluster's start or a busy machine's
// connection takes it between its check and kube-apiserver's bind.
func takenPortForAPIServer(t *testing.T) (pick func() (int, error), taken int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	taken = ln.Addr().(*net.TCPAddr).Port
	var once sync.Once
	pick = func() (int, error) {
		port := 0
		once.Do(func() { port = taken })
		if port != 0 {
			return port, nil
		}
		return freePort()
	}
	return pick, taken
}

// TestStartTriesAnotherPortWhenKubeAPIServersIsTaken: a new data folder's
// API server port, taken before kube-apiserver binds it, is replaced by
// another, and the cluster serves; nothing claims that kubeconfigs written
// before moved, as there were none.
func TestStartTriesAnotherPortWhenKubeAPIServersIsTaken(t *testing.T) {
	t.Parallel()
	needAssets(t)
	var log bytes.Buffer
	opts := Options{Mode: ModeMinimal, Log: &log, CRDs: widgetCRD}
	var taken int
	opts.ports.apiserver, taken = takenPortForAPIServer(t)
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start with kube-apiserver's first port taken: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	if want := fmt.Sprintf("kube-apiserver could not bind port %d (try 1 of 3)", taken); !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log.String())
	}
	if from, to := c.PortMoved(); from != 0 {
		t.Errorf("a new data folder reports its port moved from %d to %d", from, to)
	}
	if strings.Contains(c.Config().Host, fmt.Sprint(taken)) {
		t.Errorf("the cluster's address %s is the taken port", c.Config().Host)
	}
	expectWidgetsServed(t, c)
}

func TestStartNamesEtcdsReasonWhenItCannotStart(t *testing.T) {
	t.Parallel()
	needAssets(t)
	opts := Options{Mode: ModeMinimal}
	opts.ports.etcd = takenPortForEtcd(t, func(int) bool { return true })
	opts.ports.attempts = 1
	c, err := Start(context.Background(), opts)
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start succeeded with etcd's every port taken")
	}
	if !strings.Contains(err.Error(), "etcd said:") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Start's error does not give etcd's reason: %v", err)
	}
	t.Log(err)
}

func TestFullStopEndsEveryProcess(t *testing.T) {
	t.Parallel()
	c := startCluster(t, context.Background(), ModeFull)
	refs := expectChildren(t, c, nameEtcd, nameAPIServer, nameScheduler, nameKwok, nameKCM)
	expectWidgetsServed(t, c)
	expectLoopbackListenersOnly(t, refs)
	var total int
	for _, r := range refs {
		rss := rssKiB(r.PID)
		total += rss
		t.Logf("RSS %-24s %6d MiB", r.Name, rss/1024)
	}
	t.Logf("RSS %-24s %6d MiB", "total", total/1024)

	expectStopLeavesNothing(t, c, refs)
}

// expectLoopbackListenersOnly checks that every socket the processes listen
// on (TCP or UDP, IPv4 or IPv6) is bound to a loopback address. It maps the
// processes' socket inodes (from /proc/<pid>/fd) to /proc/net's tables.
func expectLoopbackListenersOnly(t *testing.T, refs []procRef) {
	t.Helper()
	owner := map[string]string{} // socket inode → process name
	for _, r := range refs {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", r.PID))
		if err != nil {
			t.Fatalf("listing %s's fds: %v", r.Name, err)
		}
		for _, fd := range fds {
			link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", r.PID, fd.Name()))
			if inode, ok := strings.CutPrefix(link, "socket:["); ok {
				owner[strings.TrimSuffix(inode, "]")] = r.Name
			}
		}
	}
	listeners := 0
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		data, err := os.ReadFile("/proc/net/" + table)
		if err != nil {
			continue // no IPv6, say
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// local_address is f[1], st f[3] (0A: TCP LISTEN; 07: UDP unconnected), inode f[9].
			if len(f) < 10 || owner[f[9]] == "" || (f[3] != "0A" && !(strings.HasPrefix(table, "udp") && f[3] == "07")) {
				continue
			}
			listeners++
			if ip := procNetIP(f[1]); !ip.IsLoopback() {
				t.Errorf("%s listens on %s (%s), want loopback only", owner[f[9]], ip, table)
			}
		}
	}
	if listeners == 0 {
		t.Errorf("found no listening sockets at all; is /proc/net readable?")
	}
}

// procNetIP decodes the address part of /proc/net/tcp's "0100007F:83DD":
// 32-bit words in host (little-endian) byte order.
func procNetIP(hexAddr string) net.IP {
	h, _, _ := strings.Cut(hexAddr, ":")
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw)%4 != 0 {
		return nil
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	return net.IP(raw)
}

// rssKiB reads a process's resident set size from /proc.
func rssKiB(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

func TestCancelledContextStopsCluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startCluster(t, ctx, ModeMinimal)
	refs := expectChildren(t, c, nameEtcd, nameAPIServer)
	cancel()
	expectGone(t, refs, c.dir)
}

func TestChildrenDieWithKilledParent(t *testing.T) {
	t.Parallel()
	needAssets(t)
	for _, tc := range []struct {
		mode       Mode
		persistent bool
	}{{ModeMinimal, false}, {ModeFull, false}, {ModeFull, true}} {
		mode := tc.mode
		name := string(mode)
		var data string
		if tc.persistent {
			name += "-persistent"
			data = t.TempDir()
		}
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+string(mode), helperDataEnv+"="+data)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatalf("starting the helper: %v", err)
			}
			// Kill the helper however the test ends.
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

			var dir, certs string
			var refs []procRef
			sc := bufio.NewScanner(out)
			for refs == nil && sc.Scan() {
				fields := strings.Fields(sc.Text())
				switch {
				case len(fields) == 0:
				case fields[0] == "ERROR":
					t.Fatalf("helper: %s", sc.Text())
				case fields[0] == "DIR" && len(fields) == 2:
					dir = fields[1]
				case fields[0] == "CERTS" && len(fields) == 2:
					certs = fields[1]
				case fields[0] == "PIDS":
					for _, f := range fields[1:] {
						pid, _ := strconv.Atoi(f)
						refs = append(refs, procRef{Name: procName(pid), PID: pid})
					}
				}
			}
			want := map[Mode]int{ModeMinimal: 2, ModeFull: 5}[mode]
			if dir == "" || certs == "" || len(refs) != want {
				t.Fatalf("helper printed dir %q, certs %q and %d pids, want %d (scan: %v)", dir, certs, len(refs), want, sc.Err())
			}
			for _, r := range refs {
				if !running(r.PID) {
					t.Fatalf("%s (pid %d) not running before the kill", r.Name, r.PID)
				}
			}

			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("killing the helper: %v", err)
			}
			_ = cmd.Wait()
			// The parent-death signal ends the children; Reclaim then
			// finds the dead owner's dir and removes it.
			expectGone(t, refs, "")
			if _, err := Reclaim(); err != nil {
				t.Errorf("Reclaim: %v", err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("Reclaim left %s (stat: %v)", dir, err)
			}
			// envtest's webhook certificate folder, made in the system's
			// temporary folder at every start, is not left behind either.
			if _, err := os.Stat(certs); !os.IsNotExist(err) {
				t.Errorf("a killed oplab left envtest's %s (stat: %v)", certs, err)
			}
			if data != "" {
				// The dead owner's lock went with it, and its etcd left
				// the data in a state the next one opens.
				startClusterOn(t, data)
			}
		})
	}
}

func TestReclaimKillsLeftoversOfDeadOwnersOnly(t *testing.T) {
	// A pid that certainly belongs to no live process: a child that exited.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadDir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-*", dirPrefix, dead.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	liveDir, err := newStateDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(deadDir); os.RemoveAll(liveDir) })

	// Stand-ins for a dead oplab's etcd and for a live cluster's: each
	// names its dir on its command line, as the real children do.
	leftover := exec.Command("sh", "-c", "while :; do sleep 0.1; done", filepath.Join(deadDir, "etcd"))
	keep := exec.Command("sh", "-c", "while :; do sleep 0.1; done", filepath.Join(liveDir, "etcd"))
	for _, cmd := range []*exec.Cmd{leftover, keep} {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	// The dead dir's state file lists the leftover; leave the pid unchecked
	// otherwise, as Reclaim must verify it.
	data := fmt.Sprintf(`{"pid":%d,"startTime":1,"children":[{"name":"etcd","pid":%d}]}`, dead.Process.Pid, leftover.Process.Pid)
	if err := os.WriteFile(filepath.Join(deadDir, stateFile), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}

	removed, err := Reclaim()
	if err != nil {
		t.Errorf("Reclaim: %v", err)
	}
	// Leftovers of earlier, killed test runs may be removed as well.
	if !slices.Contains(removed, deadDir) || slices.Contains(removed, liveDir) {
		t.Errorf("Reclaim removed %v, want %s and not %s", removed, deadDir, liveDir)
	}
	// Reclaim sent SIGKILL; Wait returns once the process is gone.
	waitErr := make(chan error, 1)
	go func() { waitErr <- leftover.Wait() }()
	select {
	case <-waitErr:
	case <-time.After(deadline):
		t.Errorf("leftover process %d survived Reclaim", leftover.Process.Pid)
	}
	if !running(keep.Process.Pid) {
		t.Errorf("Reclaim killed a live cluster's process")
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("Reclaim removed a live cluster's dir: %v", err)
	}
}

func TestFullRunsStatefulSetAndCollectsGarbage(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	cs := clientset(t, c)
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sts"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns.Name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "postgres", Image: "postgres:16"}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns.Name).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the StatefulSet: %v", err)
	}

	// The scheduler binds both Pods to the kwok Node, kwok marks them
	// Ready, and the StatefulSet controller counts them.
	polltest.Until(t, deadline, "readyReplicas=2", func() (bool, error) {
		got, err := cs.AppsV1().StatefulSets(ns.Name).Get(ctx, sts.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.ReadyReplicas == 2, nil
	})
	pods, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
	if err != nil {
		t.Fatalf("listing Pods: %v", err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != NodeName {
			t.Errorf("Pod %s on node %q, want %s", p.Name, p.Spec.NodeName, NodeName)
		}
	}

	// Background propagation deletes the StatefulSet at once and leaves its
	// Pods to the garbage collector, which follows their ownerReferences.
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().StatefulSets(ns.Name).Delete(ctx, sts.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatalf("deleting the StatefulSet: %v", err)
	}
	polltest.Until(t, deadline, "the Pods garbage-collected", func() (bool, error) {
		pods, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if _, err := cs.AppsV1().StatefulSets(ns.Name).Get(ctx, sts.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet still there after delete: %v", err)
	}
}

func TestWriteKubeconfigWorksWithKubectl(t *testing.T) {
	c := sharedCluster(t)
	path := filepath.Join(t.TempDir(), "nested", "dir", "kubeconfig")
	if err := c.WriteKubeconfig(path); err != nil {
		t.Fatalf("WriteKubeconfig: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600", fi.Mode().Perm())
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("loading the kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Get(context.Background(), NodeName, metav1.GetOptions{}); err != nil {
		t.Errorf("getting the node through the kubeconfig: %v", err)
	}

	out, err := exec.Command(c.KubectlPath(), "--kubeconfig="+path, "get", "node", NodeName, "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "node/"+NodeName {
		t.Errorf("kubectl get node: %v: %s", err, out)
	}
}

func TestDefaultKubeconfigPath(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1234")
	if got, want := DefaultKubeconfigPath(), "/run/user/1234/oplab/kubeconfig"; got != want {
		t.Errorf("DefaultKubeconfigPath() = %q, want %q", got, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "/cache")
	if got, want := DefaultKubeconfigPath(), "/cache/oplab/kubeconfig"; got != want {
		t.Errorf("DefaultKubeconfigPath() = %q, want %q", got, want)
	}
}

// expectStopLeavesNothing stops c and checks that none of refs still runs
// and that the cluster's temp dir is gone. Stop waits for every child to
// exit, so no polling is needed.
func expectStopLeavesNothing(t *testing.T, c *Cluster, refs []procRef) {
	t.Helper()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, r := range refs {
		if running(r.PID) {
			t.Errorf("%s (pid %d) still runs after Stop", r.Name, r.PID)
		}
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still there after Stop (stat: %v)", c.dir, err)
	}
}
