package kubectl

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/kubeconfig"
)

// Cluster is how oplab itself reaches the API server (labns.ClusterOf
// with no --kubeconfig-server): the kubeconfig the learner downloads names
// the address they reach it by, which oplab, in a Pod, may not.
type Cluster = labns.Cluster

// The terminal's bounds, for each learner: one command at a time, each
// stopped after Timeout or once it has printed MaxOutput.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxOutput = 256 << 10
)

// Runner runs learners' kubectl commands, one at a time per namespace,
// each in a child process of oplab's binary (RunChild).
type Runner struct {
	// Minter mints the learner of a namespace the kubeconfig the lab
	// hands out: their ServiceAccount's token, their RBAC.
	Minter kubeconfig.Minter
	// Cluster is oplab's own route to the API server.
	Cluster Cluster
	// Command starts the child; nil is the running binary with ChildArg.
	Command func() *exec.Cmd
	// Timeout and MaxOutput bound each command; zero: the defaults.
	Timeout   time.Duration
	MaxOutput int
	// MaxRunning bounds the commands running at once, the whole class's
	// (each child takes about 100 MiB at its peak); zero: DefaultMaxRunning.
	MaxRunning int

	slotsOnce sync.Once
	slots     chan struct{}

	// busy holds the namespaces with a command running: a learner's
	// second command waits for their first, whoever else runs one.
	busy sync.Map
	// keys keeps each namespace's kubeconfig while its token lasts, so a
	// command costs no TokenRequest.
	mu   sync.Mutex
	keys map[string]labns.Credentials
}

// ErrBusy refuses a second command while the learner's first runs.
var ErrBusy = errors.New("one command at a time: your last one is still running (press Stop, or wait: it ends within a minute)")

// ErrFull refuses a command while the class's commands fill every slot
// for longer than slotWait.
var ErrFull = errors.New("the terminal is busy with the class's commands: try again in a moment")

// DefaultMaxRunning is how many commands run at once across the class, and
// slotWait how long a command waits for a slot before it is refused.
const (
	DefaultMaxRunning = 8
	slotWait          = 10 * time.Second
)

// Result is how a command ended, as the terminal says it after kubectl's
// own output.
type Result struct {
	// Exit is kubectl's exit status; -1 when it was stopped.
	Exit int `json:"exit"`
	// Note says what the terminal did: stopped it, and why.
	Note string `json:"note,omitempty"`
}

// Run runs cmd for the learner of ns, whose session lasts until until, with
// stdin as kubectl's input (the editor's text, for -f -), writing what
// kubectl prints to out as it prints it. started, when set, is called once
// the command is sure to run, before kubectl starts: the caller may answer
// then (a watch may print nothing for a while).
func (r *Runner) Run(ctx context.Context, ns string, until time.Time, cmd Command, stdin string, out io.Writer, started func()) (Result, error) {
	if _, running := r.busy.LoadOrStore(ns, struct{}{}); running {
		return Result{}, ErrBusy
	}
	defer r.busy.Delete(ns)
	r.slotsOnce.Do(func() { r.slots = make(chan struct{}, cmp.Or(r.MaxRunning, DefaultMaxRunning)) })
	wait := time.NewTimer(slotWait)
	defer wait.Stop()
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-wait.C:
		return Result{}, ErrFull
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	kc, port, err := r.kubeconfig(ctx, ns, until)
	if err != nil {
		return Result{}, err
	}
	req, err := json.Marshal(request{Kubeconfig: kc, Args: cmd.Args, Port: port})
	if err != nil {
		return Result{}, err
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := r.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	c := r.command()
	// Nothing of oplab's environment (a KUBECONFIG, a token, a proxy)
	// reaches kubectl.
	c.Env = []string{}
	c.Stdin = bytes.NewReader([]byte(stdin))
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return Result{}, err
	}
	c.ExtraFiles = []*os.File{reqR}
	c.Stdout, c.Stderr = outW, outW
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if started != nil {
		started()
	}
	if err := c.Start(); err != nil {
		reqR.Close()
		reqW.Close()
		outR.Close()
		outW.Close()
		return Result{}, fmt.Errorf("starting kubectl: %w", err)
	}
	reqR.Close()
	outW.Close()
	go func() {
		reqW.Write(req)
		reqW.Close()
	}()
	kill := func() {
		// The child and the diff it may have started.
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	stop := context.AfterFunc(ctx, kill)
	defer stop()

	// Copy what kubectl prints, up to the limit.
	buf := make([]byte, 32<<10)
	written, over := 0, false
	for {
		n, rerr := outR.Read(buf)
		if n > 0 {
			keep := min(n, limit-written)
			if keep > 0 {
				if _, werr := out.Write(buf[:keep]); werr != nil {
					kill()
				}
				written += keep
			}
			if keep < n {
				over = true
				kill()
			}
		}
		if rerr != nil {
			break
		}
	}
	outR.Close()
	werr := c.Wait()
	res := Result{Exit: c.ProcessState.ExitCode()}
	switch {
	case over:
		res.Exit, res.Note = -1, fmt.Sprintf("stopped: the output passed the terminal's %d KiB", limit>>10)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Exit, res.Note = -1, fmt.Sprintf("stopped after %s, the terminal's limit", timeout)
		if cmd.Long {
			res.Note += ": a watch ends there; run it again to go on"
		}
	case ctx.Err() != nil:
		res.Exit, res.Note = -1, "stopped"
	case werr != nil && res.Exit < 0:
		res.Note = "kubectl ended: " + werr.Error()
	}
	return res, nil
}

func (r *Runner) command() *exec.Cmd {
	if r.Command != nil {
		return r.Command()
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	return exec.Command(exe, ChildArg)
}

// kubeconfigRenew is how long before its token expires a kubeconfig is
// minted again.
const kubeconfigRenew = 2 * time.Minute

// kubeconfig is the learner's kubeconfig as the child uses it: their
// token, and oplab's own route to the API server; and that server's port.
func (r *Runner) kubeconfig(ctx context.Context, ns string, until time.Time) ([]byte, uint16, error) {
	r.mu.Lock()
	kc, ok := r.keys[ns]
	r.mu.Unlock()
	if !ok || time.Until(kc.Expires) < kubeconfigRenew {
		var err error
		kc, err = r.Minter.Issue(ctx, ns, until)
		if err != nil {
			return nil, 0, fmt.Errorf("making your kubectl identity: %w", err)
		}
		r.mu.Lock()
		if r.keys == nil {
			r.keys = map[string]labns.Credentials{}
		}
		r.keys[ns] = kc
		r.mu.Unlock()
	}
	cfg, err := clientcmd.Load(kc.Kubeconfig)
	if err != nil {
		return nil, 0, fmt.Errorf("reading your kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		c.Server, c.CertificateAuthorityData, c.CertificateAuthority = r.Cluster.Server, r.Cluster.CAData, ""
		c.TLSServerName, c.InsecureSkipTLSVerify = r.Cluster.TLSServerName, r.Cluster.Insecure
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, 0, err
	}
	return data, portOf(r.Cluster.Server), nil
}

// Forget drops the kubeconfig kept for ns (its session ended).
func (r *Runner) Forget(ns string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.keys, ns)
}

// portOf is the TCP port of an API server URL, 443 when it names none.
func portOf(server string) uint16 {
	u, err := url.Parse(server)
	if err != nil {
		return 0
	}
	_, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		if u.Scheme == "http" {
			return 80
		}
		return 443
	}
	n, _ := strconv.ParseUint(p, 10, 16)
	return uint16(n)
}
