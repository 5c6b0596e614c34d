package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/instructor"
)

// The oplab binary the process tests run is built at the first test that
// needs it (oplabBinary), so that listing or running only the unit tests
// builds nothing; TestMain removes it.
var (
	oplabOnce sync.Once
	oplabDir  string
	oplabPath string
	oplabErr  error
)

// The process tests call t.Parallel: each runs its own oplab, with its own
// control plane and data folder (or, with --kubeconfig, on the one external
// cluster, where they take turns as subtests), and spends most of its time
// waiting on them (a start, a restart, a kill noticed). Those that set the
// environment stay serial.
func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// The soak's clients log through controller-runtime, which complains
	// (with a stack trace) when nobody ever sets a logger.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if oplabDir != "" {
		os.RemoveAll(oplabDir)
	}
	if err := external.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// external is the cluster oplab did not start that the tests of
// --kubeconfig share (TestOnAnExternalCluster): a minimal one, started by
// the first that asks. Each first makes it as it needs.
var external = &clustertest.Shared{Options: func() (cluster.Options, error) {
	return cluster.Options{Mode: cluster.ModeMinimal}, nil
}}

// externalCluster returns the external cluster with an admin kubeconfig
// written for it.
func externalCluster(t *testing.T) (*cluster.Cluster, string) {
	t.Helper()
	cl := external.Get(t)
	kubeconfig := filepath.Join(t.TempDir(), "external.kubeconfig")
	if err := cl.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return cl, kubeconfig
}

// oplabBinary builds oplab once for the package and returns its path.
func oplabBinary(t testing.TB) string {
	t.Helper()
	oplabOnce.Do(func() {
		oplabDir, oplabErr = os.MkdirTemp("", "oplab-cmd-test-")
		if oplabErr != nil {
			return
		}
		oplabPath = filepath.Join(oplabDir, "oplab")
		if out, err := exec.Command("go", "build", "-o", oplabPath, ".").CombinedOutput(); err != nil {
			oplabErr = fmt.Errorf("building oplab: %w\n%s", err, out)
		}
	})
	if oplabErr != nil {
		t.Fatal(oplabErr)
	}
	return oplabPath
}

func TestParseFlagsRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string // the error must name what was wrong
	}{
		{[]string{"--addr", "8080"}, "--addr"},
		{[]string{"--mode", "huge"}, "--mode"},
		{[]string{"--resync", "0s"}, "--resync"},
		{[]string{"--max-databases", "0"}, "--max-databases"},
		{[]string{"--session-idle", "1s"}, "--session-idle"},
		{[]string{"--public-url", "lab.example.com"}, "--public-url"},
		{[]string{"--public-url", "https://lab.example.com/x?y"}, "--public-url"},
		{[]string{"--keep-ended", "1s"}, "--keep-ended"},
		{[]string{"--session-idle-new", "3h"}, "--session-idle-new"},
		{[]string{"--session-idle", "5m", "--session-idle-new", "6m"}, "--session-idle-new"},
		{[]string{"--max-sessions", "0"}, "--max-sessions"},
		{[]string{"--trusted-proxies", "10.0.0.0/8,ingress-nginx"}, "trusted-proxies"},
		{[]string{"--max-sessions-per-client", "-1"}, "--max-sessions-per-client"},
		{[]string{"--max-sessions", "10", "--max-sessions-per-client", "11"}, "--max-sessions-per-client"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig"},
		{[]string{"--data-dir", ""}, "--data-dir"},
		{[]string{"--namespace-prefix", "Lab_"}, "--namespace-prefix"},
		{[]string{"--namespace-prefix", "lab"}, "--namespace-prefix"},
		{[]string{"--kubeconfig-server", "k8s.example.com:6443"}, "--kubeconfig-server"},
		{[]string{"--kubeconfig-server", "ftp://k8s.example.com"}, "--kubeconfig-server"},
		{[]string{"--replicas", "3"}, "replicas"},
		{[]string{"--instructor-token", "short"}, "--instructor-token"},
		{[]string{"--join-code", " padded "}, "--join-code"},
		{[]string{"--join-code", "line\nbreak"}, "--join-code"},
		{[]string{"extra"}, `"extra"`},
		{[]string{"--demos", "/nonexistent/demos"}, "--demos /nonexistent/demos"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out strings.Builder
			_, err := parseFlags(tt.args, &out)
			if err == nil {
				t.Fatalf("parseFlags(%q) succeeded, want an error naming %s", tt.args, tt.want)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("output %q does not name %s", out.String(), tt.want)
			}
		})
	}
}

// A demo file with a mistake stops oplab before it starts anything, naming
// the file, the step and the field (web/demo tests every such mistake).
func TestParseFlagsRefusesABadDemo(t *testing.T) {
	dir := t.TempDir()
	bad := "---\nid: mine\ntitle: Mine\nsummary: Mine.\ndatabases: [cart]\nsteps:\n  - title: Make\n    say: We make cart.\n    do: make cart\n---\n"
	if err := os.WriteFile(filepath.Join(dir, "mine.md"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := parseFlags([]string{"--demos", dir}, &out); err == nil {
		t.Fatal("parseFlags accepted a demo with an unknown action")
	}
	if want := filepath.Join(dir, "mine.md") + `: steps[0] (Make): do: unknown action "make"`; !strings.Contains(out.String(), want) {
		t.Errorf("output %q does not name %s", out.String(), want)
	}
}

func TestParseFlagsDefaults(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:8080" || c.mode != cluster.ModeFull || !c.installCRDs || c.resync != 30*time.Second || c.kubeconfig != "" {
		t.Errorf("defaults = %+v", c)
	}
	if c.maxSessions != 200 || c.maxPerClient != 20 || c.sessionIdleNew != 10*time.Minute || c.sessionIdle != 2*time.Hour {
		t.Errorf("session defaults = %d sessions, %d per client, idle %s / %s new", c.maxSessions, c.maxPerClient, c.sessionIdle, c.sessionIdleNew)
	}
	// Without the flag the instructor token is random: never empty, never
	// the same twice.
	again, _ := parseFlags(nil, io.Discard)
	if len(c.instructorToken) < 16 || c.instructorToken == again.instructorToken {
		t.Errorf("generated instructor tokens %q and %q; want two different random ones", c.instructorToken, again.instructorToken)
	}
	given, err := parseFlags([]string{"--instructor-token", "0123456789abcdef-mine"}, io.Discard)
	if err != nil || given.instructorToken != "0123456789abcdef-mine" {
		t.Errorf("--instructor-token given: %q %v", given.instructorToken, err)
	}
	if short, err := parseFlags([]string{"--session-idle", "2m"}, io.Discard); err != nil || short.sessionIdleNew != 2*time.Minute {
		t.Errorf("--session-idle 2m: unused sessions live %s (%v); want the default shortened to 2m", short.sessionIdleNew, err)
	}
	if c.namespacePrefix != "lab-" || c.kubeconfigHost != "" {
		t.Errorf("namespace prefix %q, kubeconfig server %q; want lab- and none", c.namespacePrefix, c.kubeconfigHost)
	}
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	out, err := exec.Command(oplabBinary(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("oplab --help: %v\n%s", err, out)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Every flag the program defines must be in --help and in the README's table.
	fs := flag.NewFlagSet("oplab", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, _ = parseFlagsInto(fs, nil)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(string(out), "-"+f.Name+" ") && !strings.Contains(string(out), "-"+f.Name+"\n") {
			t.Errorf("--help does not document -%s:\n%s", f.Name, out)
		}
		if !strings.Contains(string(readme), "`--"+f.Name+"`") {
			t.Errorf("README's flag table lacks --%s", f.Name)
		}
	})
	if n < 9 {
		t.Errorf("only %d flags defined; the flag set was not built", n)
	}
}

// oplabProc is a running oplab binary.
type oplabProc struct {
	cmd  *exec.Cmd
	url  string
	logs *syncWriter // stderr
	out  *syncWriter // stdout: progress and the control plane's own notes
	// instructorURL is the instructor link oplab printed.
	instructorURL string
}

var (
	servingRe    = regexp.MustCompile(`serving on (http://\S+)`)
	instructorRe = regexp.MustCompile(`Instructor page .*: (http://\S+/instructor\?token=\S+)`)
)

// startOplab runs the binary and waits until it prints its URL and /readyz answers 200.
func startOplab(t *testing.T, args ...string) *oplabProc {
	t.Helper()
	clustertest.Assets(t)
	cmd := exec.Command(oplabBinary(t), append([]string{"--addr", "127.0.0.1:0"}, args...)...)
	// A developer's KUBECONFIG would turn these runs into external mode
	// against a real cluster; tests that want external mode pass --kubeconfig.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
	logs := &syncWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &oplabProc{cmd: cmd, logs: logs, out: &syncWriter{w: &strings.Builder{}}}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	urlc, instructorc := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(p.out, sc.Text())
			if m := servingRe.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
			if m := instructorRe.FindStringSubmatch(sc.Text()); m != nil {
				instructorc <- m[1]
			}
		}
	}()
	for _, got := range []struct {
		c    chan string
		into *string
	}{{urlc, &p.url}, {instructorc, &p.instructorURL}} {
		select {
		case *got.into = <-got.c:
		case <-time.After(3 * time.Minute):
			t.Fatalf("oplab printed no URL and instructor URL; stdout:\n%s\nstderr:\n%s", p.out.String(), logs.String())
		}
	}
	polltest.Until(t, 2*time.Minute, "/readyz to answer 200", func() bool {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	p := startOplab(t, "--mode", "minimal", "--ephemeral", "--write-kubeconfig", "")
	resp, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %d %s", resp.StatusCode, body)
	}

	// A learner's Stop pauses only their namespace: oplab stays ready.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	post := func(c *http.Client, path string, form ...string) {
		t.Helper()
		resp, err := c.Post(p.url+path, "application/x-www-form-urlencoded", strings.NewReader(strings.Join(form, "&")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			t.Fatalf("POST %s = %d", path, resp.StatusCode)
		}
	}
	readyz := func() (int, string) {
		t.Helper()
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if resp, err := hc.Get(p.url + "/lab"); err == nil {
		resp.Body.Close()
	}
	post(hc, "/lab/controller/stop")
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("/readyz with a learner's namespace paused = %d %q, want 200", code, body)
	}
	post(hc, "/lab/controller/start")

	// Without the instructor token the whole controller cannot be stopped.
	if resp, err := http.Post(p.url+"/instructor/controller/stop", "application/x-www-form-urlencoded", nil); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /instructor/controller/stop without the token = %d, want 401", resp.StatusCode)
	}
	// The printed instructor URL sets the instructor's cookie. Stopping the
	// controller for everyone is a lesson, not an outage: oplab stays ready
	// (a readiness probe would otherwise take the site down, issue 19 f),
	// and the lab page says the controller is stopped.
	ijar, _ := cookiejar.New(nil)
	ic := &http.Client{Jar: ijar}
	resp, err = ic.Get(p.instructorURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.RawQuery != "" {
		t.Fatalf("GET the instructor URL = %d at %s, want 200 at /instructor without the token", resp.StatusCode, resp.Request.URL)
	}
	post(ic, "/instructor/controller/stop", "confirm="+instructor.ConfirmStop)
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("/readyz with the controller stopped on purpose = %d %q, want 200", code, body)
	}
	if resp, err := hc.Get(p.url + "/lab"); err != nil {
		t.Fatal(err)
	} else {
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "stopped") {
			t.Errorf("GET /lab with the controller stopped = %d, want 200 saying it is stopped", resp.StatusCode)
		}
	}
	post(ic, "/instructor/controller/start")
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("/readyz after the controller started again = %d %q, want 200", code, body)
	}
}

// TestChildrenStopWithOplab checks that no process of the control plane
// outlives oplab, whether it is asked to stop or killed outright.
func TestChildrenStopWithOplab(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			p := startOplab(t, "--mode", "full", "--ephemeral", "--write-kubeconfig", kubeconfig)
			if _, err := os.Stat(kubeconfig); err != nil {
				t.Errorf("--write-kubeconfig: %v", err)
			}
			kids := descendants(p.cmd.Process.Pid)
			// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok.
			if len(kids) < 5 {
				t.Fatalf("oplab has %d descendant processes %v, want the 5 of the control plane", len(kids), kids)
			}
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = p.cmd.Wait()
			polltest.Until(t, 30*time.Second, "every control-plane process to exit", func() bool {
				return len(alive(kids)) == 0
			})
			if sig == syscall.SIGTERM && !p.cmd.ProcessState.Success() {
				t.Errorf("oplab exited with %v after SIGTERM; stderr:\n%s", p.cmd.ProcessState, p.logs.String())
			}
		})
	}
}

// TestOnAnExternalCluster runs the tests of oplab on a cluster it did not
// start, one after another. They share that cluster, and each changes what
// the whole cluster holds (the Database CRD), so they take turns; as the
// subtests of one parallel test they take one of the package's -parallel
// slots, where three parallel tests waiting for their turn held three.
func TestOnAnExternalCluster(t *testing.T) {
	t.Parallel()
	t.Run("ExternalMode", testExternalMode)
	t.Run("LearnerKubeconfigFlags", testLearnerKubeconfigFlags)
	t.Run("DeletedCRDNamedWhenOplabMayNotInstall", testDeletedCRDNamedWhenOplabMayNotInstall)
}

// testExternalMode runs oplab against a cluster it did not start, through a
// kubeconfig file, and checks that it installed the CRD there.
func testExternalMode(t *testing.T) {
	cl, kubeconfig := externalCluster(t)
	// The cluster starts without the CRD, or as an earlier test left it.
	if err := deleteCRD(t, kubeconfig); err != nil {
		t.Fatal(err)
	}
	// With --install-crds=false oplab must not install the CRD, and must say
	// clearly that it is missing instead of serving a lab that cannot work.
	out, err := exec.Command(oplabBinary(t), "--addr", "127.0.0.1:0", "--kubeconfig", kubeconfig, "--install-crds=false").CombinedOutput()
	if err == nil {
		t.Fatalf("oplab ran against a cluster without the CRD and --install-crds=false:\n%s", out)
	}
	if !strings.Contains(string(out), "CRD") && !strings.Contains(string(out), "databases.db.oplab.dev") {
		t.Errorf("the failure does not name the missing CRD:\n%s", out)
	}

	// Like KUBECONFIG, --kubeconfig may list files; a missing one is skipped.
	p := startOplab(t, "--kubeconfig", "/nonexistent/first.kubeconfig:"+kubeconfig)
	if kids := descendants(p.cmd.Process.Pid); len(kids) != 0 {
		t.Errorf("external mode started processes %v; it must use the given cluster", kids)
	}
	out, err = exec.Command(cl.KubectlPath(), "--kubeconfig", kubeconfig, "get", "crd", "databases.db.oplab.dev",
		"-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "True" {
		t.Errorf("CRD not established in the external cluster: %v %s", err, out)
	}
}

// descendants lists every process below pid, read from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/PID/stat; the command name may
// hold spaces, so the fields are read after its closing parenthesis.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// alive returns the pids that still run (zombies count as gone).
func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z") {
			continue
		}
		out = append(out, p)
	}
	return out
}
