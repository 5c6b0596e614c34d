package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// TestCoursePagesServedWhileTheControlPlaneIsBuilt runs oplab as `make run`
// does on a machine whose control plane is not all built: here the kwok
// stages file is missing (the one file cheap to make for real; the
// binaries are linked from the real cache). oplab serves the course pages
// at once, the lab says what it builds, oplab builds the file (the same
// bytes `make controlplane` wrote), starts the cluster, and the same
// address then serves the lab.
func TestCoursePagesServedWhileTheControlPlaneIsBuilt(t *testing.T) {
	clustertest.Assets(t)
	real, err := cluster.FindAssets()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	dir, err := cluster.DefaultAssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range cluster.Binaries {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if m := cluster.MissingBinaries(dir); !slices.Equal(m, []string{cluster.KwokStagesFile}) {
		t.Fatalf("the prepared assets miss %v; want only %s", m, cluster.KwokStagesFile)
	}

	cmd := exec.Command(oplabBinary(t), "--addr", "127.0.0.1:0", "--mode", "minimal", "--ephemeral", "--write-kubeconfig", "")
	cmd.Dir = "../.." // the repository, where `make run` runs it: the module to build from is there
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=")
	})
	logs := &syncWriter{w: &strings.Builder{}}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	out := &syncWriter{w: &strings.Builder{}}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(re *regexp.Regexp) []string {
		t.Helper()
		timeout := time.After(3 * time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("oplab ended before printing %s; stdout:\n%s\nstderr:\n%s", re, out.String(), logs.String())
				}
				if m := re.FindStringSubmatch(l); m != nil {
					return m
				}
			case <-timeout:
				t.Fatalf("oplab printed no %s; stdout:\n%s\nstderr:\n%s", re, out.String(), logs.String())
			}
		}
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	base := next(regexp.MustCompile(`course pages are up at (http://\S+)`))[1]
	// The cluster is not up: building the file and starting the cluster
	// take seconds, and oplab says "serving on" only once it is.
	for _, path := range []string{"/", "/lessons", "/quiz", "/flashcards"} {
		if code, _ := get(base + path); code != http.StatusOK {
			t.Errorf("GET %s before the cluster is up = %d, want 200", path, code)
		}
	}
	if code, body := get(base + "/lab"); code != http.StatusServiceUnavailable || !strings.Contains(body, "The lab is getting ready") {
		t.Errorf("GET /lab before the cluster is up = %d %.300q; want 503, the lab getting ready", code, body)
	}
	if code, body := get(base + "/readyz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: ") {
		t.Errorf("GET /readyz before the cluster is up = %d %q; want 503 saying why", code, body)
	}
	if strings.Contains(out.String(), "serving on") {
		t.Fatalf("oplab was up before the checks above ran, so they proved nothing; stdout:\n%s", out.String())
	}
	next(regexp.MustCompile(`\[1/1\] building ` + regexp.QuoteMeta(cluster.KwokStagesFile)))
	served := next(servingRe)[1]
	if served != base {
		t.Errorf("the lab is served on %s, the course pages were on %s; want one address", served, base)
	}
	made, err := os.ReadFile(filepath.Join(dir, cluster.KwokStagesFile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(real, cluster.KwokStagesFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(made, want) {
		t.Errorf("the %s oplab built differs from make controlplane's (%d and %d bytes)", cluster.KwokStagesFile, len(made), len(want))
	}
	polltest.Until(t, 2*time.Minute, "/readyz to answer 200", func() bool { code, _ := get(base + "/readyz"); return code == http.StatusOK })
	_, body := get(base + "/starting")
	var st struct{ Phase string }
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Phase != "ready" {
		t.Errorf("GET /starting once up = %q (%v); want phase ready, which turns a waiting page into the lab", body, err)
	}
	if code, body := get(base + "/lab"); code != http.StatusOK || strings.Contains(body, "getting ready") {
		t.Errorf("GET /lab once up = %d; want 200, the lab", code)
	}
}
