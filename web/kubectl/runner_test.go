package kubectl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/oplab-dev/oplab/controller/labns"
)

// runFake is a stand-in child, for the Runner's bounds: it reads its
// request and does what its name says.
func runFake(what string) int {
	f := os.NewFile(requestFD, "request")
	var req request
	_ = json.NewDecoder(f).Decode(&req)
	switch what {
	case "fake-flood":
		line := strings.Repeat("x", 1023) + "\n"
		for {
			if _, err := os.Stdout.WriteString(line); err != nil {
				return 1
			}
		}
	case "fake-sleep":
		fmt.Println("watching…")
		time.Sleep(time.Hour)
	case "fake-echo":
		// What the child was given: its environment, its request.
		stdin, _ := io.ReadAll(os.Stdin)
		cfg, _ := clientcmd.Load(req.Kubeconfig)
		var server string
		for _, c := range cfg.Clusters {
			server = c.Server
		}
		fmt.Printf("env=%q args=%q server=%s port=%d stdin=%q\n", os.Environ(), req.Args, server, req.Port, stdin)
		return 3
	}
	return 0
}

// fakeMinter mints a kubeconfig naming the address learners use, as the
// lab's issuer does, and counts its mints.
type fakeMinter struct {
	mu    sync.Mutex
	mints int
}

func (m *fakeMinter) Issue(_ context.Context, ns string, until time.Time) (labns.Credentials, error) {
	m.mu.Lock()
	m.mints++
	m.mu.Unlock()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://learners.example:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "learner-token"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: ns}
	cfg.CurrentContext = "x"
	data, err := clientcmd.Write(*cfg)
	return labns.Credentials{Kubeconfig: data, Expires: until}, err
}

func fakeRunner(what string) (*Runner, *fakeMinter) {
	m := &fakeMinter{}
	return &Runner{
		Minter:  m,
		Cluster: Cluster{Server: "https://10.96.0.1:443"},
		Command: func() *exec.Cmd { return exec.Command(os.Args[0], "fake-"+what) },
	}, m
}

// TestRunnerGivesTheChildNothingButItsRequest: the child gets an empty
// environment (oplab's KUBECONFIG, tokens and proxies stay with oplab),
// the learner's token with oplab's own route to the API server, its port
// for the fence, and the editor's text on stdin; kubectl's exit status is
// the result's. The kubeconfig is minted once for several commands.
func TestRunnerGivesTheChildNothingButItsRequest(t *testing.T) {
	t.Setenv("KUBECONFIG", "/root/.kube/admin")
	r, m := fakeRunner("echo")
	var out bytes.Buffer
	for range 2 {
		out.Reset()
		res, err := r.Run(context.Background(), "lab-x", time.Now().Add(time.Hour), Command{Args: []string{"apply", "-f", "-"}, Stdin: true}, "kind: Database\n", &out, nil)
		if err != nil || res.Exit != 3 {
			t.Fatalf("Run = %+v, %v, want exit 3", res, err)
		}
	}
	want := `env=[] args=["apply" "-f" "-"] server=https://10.96.0.1:443 port=443 stdin="kind: Database\n"`
	if got := strings.TrimSpace(out.String()); got != want {
		t.Errorf("the child saw %s\nwant %s", got, want)
	}
	if m.mints != 1 {
		t.Errorf("%d kubeconfigs minted for two commands, want 1", m.mints)
	}
}

// TestRunnerBoundsEachCommand: a command that floods is stopped at the
// output limit, one that never ends at the time limit, each saying so;
// a second command of the same learner while one runs is refused, another
// learner's is not.
func TestRunnerBoundsEachCommand(t *testing.T) {
	r, _ := fakeRunner("flood")
	r.MaxOutput = 64 << 10
	var out bytes.Buffer
	res, err := r.Run(context.Background(), "lab-x", time.Now().Add(time.Hour), Command{Args: []string{"get", "pods"}}, "", &out, nil)
	if err != nil || res.Exit != -1 || !strings.Contains(res.Note, "64 KiB") || out.Len() != 64<<10 {
		t.Errorf("flood: %+v, %v, %d bytes; want stopped at 64 KiB, saying so", res, err, out.Len())
	}

	r, _ = fakeRunner("sleep")
	r.Timeout = 500 * time.Millisecond
	started := make(chan struct{})
	done := make(chan Result)
	go func() {
		res, err := r.Run(context.Background(), "lab-x", time.Now().Add(time.Hour), Command{Args: []string{"get", "pods", "-w"}, Long: true}, "", io.Discard, func() { close(started) })
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	if _, err := r.Run(context.Background(), "lab-x", time.Now().Add(time.Hour), Command{Args: []string{"get", "pods"}}, "", io.Discard, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("a second command while one runs: %v, want ErrBusy", err)
	}
	if _, err := r.Run(context.Background(), "lab-y", time.Now().Add(time.Hour), Command{Args: []string{"get", "pods"}}, "", io.Discard, nil); errors.Is(err, ErrBusy) {
		t.Errorf("another learner's command was refused as busy")
	}
	if res := <-done; res.Exit != -1 || !strings.Contains(res.Note, "stopped after 500ms") || !strings.Contains(res.Note, "a watch ends there") {
		t.Errorf("a watch past the time limit: %+v, want stopped, saying so", res)
	}
	// The class's slots: with one, another learner's command waits for
	// it, and is refused past the wait.
	full, _ := fakeRunner("sleep")
	full.MaxRunning, full.Timeout = 1, 300*time.Millisecond
	held := make(chan struct{})
	go func() {
		_, _ = full.Run(context.Background(), "lab-a", time.Now().Add(time.Hour), Command{Args: []string{"get", "pods", "-w"}}, "", io.Discard, func() { close(held) })
	}()
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := full.Run(ctx, "lab-b", time.Now().Add(time.Hour), Command{Args: []string{"get", "pods"}}, "", io.Discard, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a command while the class's one slot is taken: %v, want it waiting (here, until its deadline)", err)
	}
	cancel()
	// Free again once it ended.
	r.Command = fakeRunner0("echo")
	if _, err := r.Run(context.Background(), "lab-x", time.Now().Add(time.Hour), Command{Args: []string{"get", "pods"}}, "", io.Discard, nil); err != nil {
		t.Errorf("after the first ended: %v", err)
	}
}

func fakeRunner0(what string) func() *exec.Cmd {
	return func() *exec.Cmd { return exec.Command(os.Args[0], "fake-"+what) }
}
