package kubectl

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// probeEnv asks this test binary to be a fenced child and try one escape.
const probeEnv = "OPLAB_KUBECTL_PROBE"

// runProbe limits and fences itself as the child does, with a scratch
// folder and one allowed port, then tries what the probe names and prints
// what happened.
func runProbe(probe string) int {
	if err := limitSelf(); err != nil {
		fmt.Println("limit:", err)
		return 2
	}
	scratch, _ := os.MkdirTemp("", "probe-")
	port, _ := strconv.ParseUint(os.Getenv("OPLAB_KUBECTL_PORT"), 10, 16)
	if err := fenceSelf(scratch, uint16(port)); err != nil {
		fmt.Println("fence:", err)
		return 2
	}
	switch probe {
	case "read-file":
		_, err := os.ReadFile("/etc/passwd")
		fmt.Println("read /etc/passwd:", err)
	case "listen":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			l.Close()
		}
		fmt.Println("listen:", err)
	case "connect-other":
		c, err := net.Dial("tcp", os.Getenv("OPLAB_KUBECTL_OTHER"))
		if err == nil {
			c.Close()
		}
		fmt.Println("connect other:", err)
	case "connect-api":
		c, err := net.Dial("tcp", "127.0.0.1:"+os.Getenv("OPLAB_KUBECTL_PORT"))
		if err == nil {
			c.Close()
		}
		fmt.Println("connect api:", err)
	case "exec-shell":
		err := exec.Command("/bin/sh", "-c", "true").Run()
		fmt.Println("exec /bin/sh:", err)
	case "diff":
		a, b := filepath.Join(scratch, "a"), filepath.Join(scratch, "b")
		os.Mkdir(a, 0o700)
		os.Mkdir(b, 0o700)
		os.WriteFile(filepath.Join(a, "x"), []byte("replicas: 1\n"), 0o600)
		os.WriteFile(filepath.Join(b, "x"), []byte("replicas: 2\n"), 0o600)
		var out bytes.Buffer
		cmd := exec.Command(selfPath(), a, b, DiffArg)
		cmd.Stdout = &out
		err := cmd.Run()
		fmt.Printf("diff: %v\n%s", err, out.String())
	}
	return 0
}

// TestTheFenceHoldsTheChild runs this binary fenced, as the terminal's
// child is, and tries each way out: a file of the server's, a listener, a
// connection to any port but the API server's, a shell. Each is refused by
// the kernel; the API server's port and the diff kubectl diff starts still
// work. Where the kernel has no Landlock the file, TCP and exec checks are
// skipped: Parse is then the one fence.
func TestTheFenceHoldsTheChild(t *testing.T) {
	api, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := strconv.Itoa(api.Addr().(*net.TCPAddr).Port)
	run := func(probe string) string {
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{probeEnv + "=" + probe, "OPLAB_KUBECTL_PORT=" + port, "OPLAB_KUBECTL_OTHER=" + other.Addr().String()}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("probe %s: %v\n%s", probe, err, out)
		}
		return string(out)
	}
	if !landlockOn() {
		t.Skip("no Landlock in this kernel: the fence is Parse's alone")
	}
	for probe, want := range map[string]string{
		"read-file":     "read /etc/passwd: open /etc/passwd: permission denied",
		"listen":        "listen: listen tcp 127.0.0.1:0: ", // refused: bind by Landlock, or listen by seccomp
		"connect-other": "permission denied",
		"connect-api":   "connect api: <nil>",
		"exec-shell":    "exec /bin/sh: fork/exec /bin/sh: permission denied",
		"diff":          "+replicas: 2",
	} {
		if got := run(probe); !strings.Contains(got, want) || strings.Contains(got, "<nil>") && probe != "connect-api" {
			t.Errorf("probe %s printed %q, want %q", probe, got, want)
		}
	}
}
