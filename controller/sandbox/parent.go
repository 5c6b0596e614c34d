package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/oplab-dev/oplab/controller"
)

// Defaults for a Sandbox.
const (
	// DefaultDeadline is how long learner code may run in one reconcile,
	// not counting the time the parent spends on its API calls.
	DefaultDeadline = 2 * time.Second
	// DefaultCompileCPUBudget bounds a compile, which also runs the code's
	// package initialisers, by the child's CPU time: a wall-clock bound of
	// 5 s stopped the reference solution on a machine at load 25, where the
	// child got a small share of a core. compileDeadline is the wall-clock
	// backstop, for initialisers that block rather than spin.
	DefaultCompileCPUBudget = 5 * time.Second
	compileDeadline         = 30 * time.Second
	// DefaultCPUBudget is the CPU time learner code may use in one
	// reconcile. A reconcile's own work is a few milliseconds of it
	// (BenchmarkReconcileRoundTrip), interpreted code that builds a large
	// object a few hundred; without it a loop that never ends would hold
	// a core until the wall-clock deadline, taking it from the other
	// learners' children (BenchmarkNeighbours).
	DefaultCPUBudget = 500 * time.Millisecond
	// cpuPoll is how often the parent reads a running child's CPU time.
	cpuPoll = 20 * time.Millisecond
)

// Sandbox runs one learner's reconciler in a child process. The parent
// (this side) never interprets the code: it starts `oplab sandbox` with an
// empty environment and nothing but two pipes, sends it the source, and for
// each reconcile executes the API calls the child asks for, through the
// client it is given, with the namespace enforced. A child that overruns
// its deadline, crashes or runs out of memory is killed (its whole process
// group) and the next reconcile starts a fresh one.
//
// A Sandbox runs one reconcile at a time: a learner's reconciles queue
// behind each other, never beside anyone else's.
type Sandbox struct {
	// Command starts the child; nil means the running binary with ChildArg.
	Command func() *exec.Cmd
	// Deadline is the time learner code may run per reconcile; zero means
	// DefaultDeadline.
	Deadline time.Duration
	// CPUBudget is the CPU time learner code may use per reconcile, the
	// child's own (its waits for the parent's API calls use none); zero
	// means DefaultCPUBudget.
	CPUBudget time.Duration
	// CompileCPUBudget is the CPU time a compile, the code's package
	// initialisers included, may use; zero means DefaultCompileCPUBudget.
	CompileCPUBudget time.Duration
	// IdleTimeout stops the child after this long without a reconcile (a
	// learner who left, or whose Databases are all settled); the next
	// reconcile starts a fresh one. Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration

	mu     sync.Mutex
	source string
	p      *proc
	// live is p, for Kill, which must not wait for mu (a reconcile holds
	// it throughout).
	live atomic.Pointer[proc]
	idle *time.Timer
	used time.Time // the last compile or reconcile
	// fence names the layers of the kernel fence the last child raised
	// (fence_linux.go) and the namespaces it was started in. Not under mu,
	// which a reconcile holds for its whole length: the page reads it.
	fence atomic.Pointer[[]string]
	// overran is set when a reconcile was killed (deadline, CPU budget,
	// crash) and cleared by one that returns: while it is set, the
	// learner's children run at the lowest priority, so code that keeps
	// overrunning, retried by the controller, costs the other learners'
	// children little (BenchmarkNeighbours).
	overran bool
}

// DefaultIdleTimeout is how long an unused child is kept.
const DefaultIdleTimeout = 5 * time.Minute

func (s *Sandbox) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return DefaultIdleTimeout
}

// touch restarts the idle clock; s.mu is held.
func (s *Sandbox) touch() {
	s.used = time.Now()
	if s.idle != nil {
		s.idle.Stop()
	}
	s.idle = time.AfterFunc(s.idleTimeout(), s.stopIdle)
}

// stopIdle stops the child; the code is kept for the next reconcile. A
// timer that fired while a reconcile ran finds the child used since, and
// leaves it to the next timer.
func (s *Sandbox) stopIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.used) < s.idleTimeout() {
		return
	}
	if s.p != nil {
		s.p.close()
		s.setProc(nil)
	}
}

// setProc makes p the running child; s.mu is held.
func (s *Sandbox) setProc(p *proc) {
	s.p = p
	s.live.Store(p)
}

// Kill ends the running child at once, its process group with it, as a
// crash would: a reconcile running in it fails, and the next one starts a
// fresh child and compiles the code again. The code is kept. Kill does not
// wait for a running reconcile (the reconciler tester calls it from within
// one, right after one of the code's writes returns).
func (s *Sandbox) Kill() {
	if p := s.live.Load(); p != nil {
		p.kill()
	}
}

// Alive reports whether a child process runs.
func (s *Sandbox) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p != nil
}

// proc is one running child.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	enc   *json.Encoder
	out   *bufio.Reader
	// tooBig is set when the child sent a message over maxMessage.
	tooBig bool
	stderr *bytes.Buffer
	killed bool // the parent killed it (deadline); read after a decode fails
	// overCPU is the CPU budget the child was killed for using up; zero:
	// not killed for that.
	overCPU time.Duration
	// spaces names the namespaces it was started in ("" for none).
	spaces string
	mu     sync.Mutex
}

// SelfCommand starts the running binary as the sandbox child.
func SelfCommand() *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	return exec.Command(exe, ChildArg)
}

func (s *Sandbox) cpuBudget() time.Duration {
	if s.CPUBudget > 0 {
		return s.CPUBudget
	}
	return DefaultCPUBudget
}

func (s *Sandbox) compileCPUBudget() time.Duration {
	if s.CompileCPUBudget > 0 {
		return s.CompileCPUBudget
	}
	return DefaultCompileCPUBudget
}

func (s *Sandbox) deadline() time.Duration {
	if s.Deadline > 0 {
		return s.Deadline
	}
	return DefaultDeadline
}

// Limits says, in a learner's words, what one reconcile of the code may
// use before it is stopped: its CPU time and its time in all, the API
// calls the parent makes for it not counted.
func (s *Sandbox) Limits() string {
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s" }
	return secs(s.cpuBudget()) + " of CPU time and " + secs(s.deadline()) + " in all per reconcile (its API calls not counted), " +
		strconv.Itoa(MaxCalls) + " API calls (writes at " + strconv.Itoa(controller.CodeWriteRate) + " a second) and " + secs(MaxReconcileTime) + " with them"
}

// start starts a fresh child.
func (s *Sandbox) start() (*proc, error) {
	mk := s.Command
	if mk == nil {
		mk = SelfCommand
	}
	for {
		p, retry, err := s.startOnce(mk())
		if !retry {
			return p, err
		}
	}
}

// startOnce starts cmd as a child; retry says the namespaces it asked for
// were refused, and the next try asks for fewer (spaces_linux.go).
func (s *Sandbox) startOnce(cmd *exec.Cmd) (p *proc, retry bool, err error) {
	// An empty environment (not nil, which would inherit oplab's), the
	// root directory, no extra files, its own process group so that a kill
	// reaches anything it might have become, and death with its parent.
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.ExtraFiles = nil
	stderr := &bytes.Buffer{}
	cmd.Stderr = limitedWriter{stderr, 16 << 10}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, false, fmt.Errorf("starting the sandbox: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, fmt.Errorf("starting the sandbox: %w", err)
	}
	spaces, retry, err := startIn(cmd)
	if err != nil {
		return nil, retry, fmt.Errorf("starting the sandbox: %w", err)
	}
	return &proc{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin),
		out: bufio.NewReaderSize(stdout, 64<<10), stderr: stderr, spaces: spaces}, false, nil
}

// read decodes the child's next message, a line of at most maxMessage
// bytes: the child is not trusted, and a line without an end must not make
// the parent hold it all. A longer one kills the child.
func (p *proc) read(m *message) error {
	var line []byte
	for {
		chunk, err := p.out.ReadSlice('\n')
		if len(line)+len(chunk) > maxMessage {
			p.tooBig = true
			p.kill()
			return fmt.Errorf("the sandbox sent more than %d bytes at once", maxMessage)
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
	return json.Unmarshal(line, m)
}

// kill ends the child's whole process group and reaps it.
func (p *proc) kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Process.Kill()
	}
}

// watchCPU kills p once it has used budget of CPU time after the call;
// stop ends the watch. Without /proc the wall-clock deadline alone holds.
func (p *proc) watchCPU(budget time.Duration) (stop func()) {
	pid := p.cmd.Process.Pid
	start, err := cpuTime(pid)
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	// stopped, under mu, makes stop and a kill exclusive: once stop has
	// returned, the watch kills nothing (a reconcile that returned in
	// time keeps its child).
	var mu sync.Mutex
	stopped := false
	go func() {
		tick := time.NewTicker(cpuPoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			used, err := cpuTime(pid)
			if err != nil {
				return
			}
			if used-start > budget {
				mu.Lock()
				defer mu.Unlock()
				if stopped {
					return
				}
				p.mu.Lock()
				p.overCPU = budget
				p.mu.Unlock()
				p.kill()
				return
			}
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		close(done)
	}
}

// usedCPU is the budget watchCPU killed p for, or zero.
func (p *proc) usedCPU() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.overCPU
}

func (p *proc) wasKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// close kills the child and waits for it.
func (p *proc) close() {
	_ = p.stdin.Close()
	p.kill()
	_ = p.cmd.Wait()
}

// died describes a child that stopped answering.
// ownClock measures a child's own time from now: the wall clock less the
// time the child's threads waited for a CPU. A deadline on it blames the
// learner's code for its code alone: on a machine whose load starves the
// child (nice 10 behind a busy oplab, or a test suite on two cores) a
// plain wall clock stopped correct code, a verdict that hung on the load,
// while code that blocks or spins still spends its own time.
type ownClock struct {
	pid     int
	began   time.Time
	waited0 time.Duration
	known   bool
}

func (p *proc) ownClock() ownClock {
	c := ownClock{pid: p.cmd.Process.Pid, began: time.Now()}
	// Where the kernel keeps no schedstat, the clock is the wall's.
	w, err := waited(c.pid)
	c.waited0, c.known = w, err == nil
	return c
}

func (c ownClock) elapsed() time.Duration {
	wall := time.Since(c.began)
	if !c.known {
		return wall
	}
	w, err := waited(c.pid)
	// A thread that ended takes its waits with it: never count back.
	if err != nil || w < c.waited0 {
		return wall
	}
	return wall - (w - c.waited0)
}

// afterOwn calls f once the child has had d of its own time (ownClock),
// unless stop comes first.
func (p *proc) afterOwn(d time.Duration, f func()) (stop func()) {
	c := p.ownClock()
	done := make(chan struct{})
	go func() {
		for {
			left := d - c.elapsed()
			if left <= 0 {
				f()
				return
			}
			select {
			case <-done:
				return
			case <-time.After(left):
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

func (p *proc) died(d time.Duration) *SourceError {
	if p.tooBig {
		return &SourceError{Kind: "crash", Message: fmt.Sprintf("your code sent an object larger than %d MiB to the API and was stopped", maxMessage>>20)}
	}
	if p.wasKilled() {
		if over := p.usedCPU(); over > 0 {
			return &SourceError{Kind: "deadline", Message: fmt.Sprintf("your code used more than %s of CPU in one reconcile (a loop that never ends?) and was stopped", over)}
		}
		return &SourceError{Kind: "deadline", Message: fmt.Sprintf("your code ran past %s and was stopped", d)}
	}
	_ = p.cmd.Wait()
	msg := "the sandbox running your code died"
	if st := p.cmd.ProcessState; st != nil {
		msg += " (" + st.String() + ")"
	}
	if out := bytes.TrimSpace(p.stderr.Bytes()); len(out) > 0 {
		first, _, _ := bytes.Cut(out, []byte("\n"))
		msg += ": " + string(first)
	}
	return clipped(&SourceError{Kind: "crash", Message: msg})
}

// Close stops the child, if one runs, and forgets the code: a reconcile
// that comes after fails rather than starting a new child.
func (s *Sandbox) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.source = ""
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.p != nil {
		s.p.close()
		s.setProc(nil)
	}
}

// Compile starts a fresh child and compiles src in it. On success the
// Sandbox keeps src for the reconciles to come; on failure it keeps what it
// had, and the error says where (SourceError.Line).
func (s *Sandbox) Compile(ctx context.Context, src string) *SourceError {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Refuse what Check refuses without starting anything.
	if _, serr := Check(src); serr != nil {
		return serr
	}
	// New code starts afresh, at the children's usual priority.
	s.overran = false
	p, serr := s.compileIn(ctx, src)
	if serr != nil {
		return serr
	}
	if s.p != nil {
		s.p.close()
	}
	s.setProc(p)
	s.source = src
	s.touch()
	return nil
}

// Fence names the layers of the kernel fence around the last child that
// compiled code: seccomp, no_new_privs, Landlock and namespaces, as the
// kernel allowed them. Nil before the first compile.
func (s *Sandbox) Fence() []string {
	if f := s.fence.Load(); f != nil {
		return slices.Clone(*f)
	}
	return nil
}

// fenceWords lists the child's layers and then its namespaces.
func fenceWords(layers []string, spaces string) []string {
	out := slices.Clone(layers)
	if spaces == "" {
		spaces = "no namespaces of its own (the kernel or the container refused them)"
	}
	return append(out, spaces)
}

// Compiled reports whether code has compiled and is kept.
func (s *Sandbox) Compiled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.source != ""
}

func (s *Sandbox) compileIn(ctx context.Context, src string) (*proc, *SourceError) {
	p, err := s.start()
	if err != nil {
		return nil, &SourceError{Kind: "crash", Message: err.Error()}
	}
	s.lowerIfOverran(p)
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()
	stopGuard := p.afterOwn(compileDeadline, p.kill)
	defer stopGuard()
	stopWatch := p.watchCPU(s.compileCPUBudget())
	defer stopWatch()
	var m message
	if err := p.enc.Encode(message{Op: opCompile, Source: src}); err != nil {
		se := p.died(compileDeadline)
		p.close()
		return nil, se
	}
	if err := p.read(&m); err != nil || m.Op != opCompiled {
		se := p.died(compileDeadline)
		if se.Kind == "deadline" {
			se.Message = fmt.Sprintf("your code's package initialisation ran past %s and was stopped", compileDeadline)
			if p.usedCPU() > 0 {
				se.Message = fmt.Sprintf("your code's package initialisation used more than %s of CPU (a loop that never ends?) and was stopped", s.compileCPUBudget())
			}
		}
		p.close()
		return nil, se
	}
	if m.Error != nil {
		p.close()
		return nil, clipped(m.Error)
	}
	fence := fenceWords(m.Fence, p.spaces)
	s.fence.Store(&fence)
	// Again, now that the child's own limitSelf has surely run: as root it
	// may have raised the priority the first call lowered.
	s.lowerIfOverran(p)
	return p, nil
}

// lowerIfOverran runs p at the lowest priority if the learner's last
// reconcile was killed: nice 19 for the whole process group, every thread
// of it (a priority set for a process is its calling thread's alone), and
// SCHED_IDLE for each thread, so it runs only on a CPU no one else wants.
func (s *Sandbox) lowerIfOverran(p *proc) {
	if s.overran {
		_ = syscall.Setpriority(syscall.PRIO_PGRP, p.cmd.Process.Pid, overranNice)
		_ = idleAll(p.cmd.Process.Pid)
	}
}

// Reconcile runs the learner's Reconcile for req in the child, executing
// its API calls with c, confined to req.Namespace. A compile error, a
// panic, an overrun or a crash comes back as a *SourceError, which the
// controller treats as a failed reconcile (and retries with backoff).
func (s *Sandbox) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.source == "" {
		return ctrl.Result{}, &SourceError{Kind: "compile", Message: "no code to run"}
	}
	if s.p == nil {
		p, serr := s.compileIn(ctx, s.source)
		if serr != nil {
			return ctrl.Result{}, serr
		}
		s.setProc(p)
	}
	p := s.p
	defer s.touch()
	res, serr := s.run(ctx, p, c, req)
	s.overran = serr != nil && (serr.Kind == "deadline" || serr.Kind == "crash" || serr.Kind == "budget")
	if s.overran || p.wasKilled() {
		// The child is gone or in an unknown state (or was killed for its
		// CPU just as its result came): the next reconcile starts a
		// fresh one.
		p.close()
		s.setProc(nil)
	}
	if serr != nil {
		return res, serr
	}
	return res, nil
}

// run is one reconcile in p. The deadline counts the child's time only: the
// clock stops while the parent makes an API call for it. The calls have
// budgets of their own: at most MaxCalls, and MaxReconcileTime for the
// whole reconcile, calls and their waits for the write rate included.
func (s *Sandbox) run(ctx context.Context, p *proc, c client.Client, req reconcile.Request) (ctrl.Result, *SourceError) {
	budget := s.deadline()
	wall, cancel := context.WithTimeout(ctx, MaxReconcileTime)
	defer cancel()
	stopCtx := context.AfterFunc(wall, p.kill)
	defer stopCtx()
	stopWatch := p.watchCPU(s.cpuBudget())
	defer stopWatch()
	// died says why p stopped answering, the whole reconcile's time
	// first: p.died knows only the child's own.
	died := func() *SourceError {
		if errors.Is(wall.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return &SourceError{Kind: "deadline", Message: fmt.Sprintf("your code's reconcile, its API calls included, ran past %s and was stopped", MaxReconcileTime)}
		}
		return p.died(s.deadline())
	}
	if err := p.enc.Encode(message{Op: opReconcile, Namespace: req.Namespace, Name: req.Name}); err != nil {
		return ctrl.Result{}, died()
	}
	calls := 0
	for {
		own := p.ownClock()
		stopTimer := p.afterOwn(budget, p.kill)
		var m message
		err := p.read(&m)
		stopTimer()
		budget -= own.elapsed()
		if err != nil {
			return ctrl.Result{}, died()
		}
		switch m.Op {
		case opCall:
			if m.Call == nil {
				return ctrl.Result{}, &SourceError{Kind: "crash", Message: "the sandbox sent an empty call"}
			}
			if calls++; calls > MaxCalls {
				p.kill()
				return ctrl.Result{}, &SourceError{Kind: "budget", Message: fmt.Sprintf("your code made more than %d API calls in one reconcile and was stopped: "+
					"a reconcile reads its Database, creates or corrects its few children and writes its status once", MaxCalls)}
			}
			r := Execute(wall, c, req, *m.Call)
			if err := p.enc.Encode(message{Op: opReply, Reply: &r}); err != nil {
				return ctrl.Result{}, died()
			}
		case opResult:
			res := ctrl.Result{Requeue: m.Requeue, RequeueAfter: m.RequeueAfter} //nolint:staticcheck // the learner may set Requeue.
			if m.Error != nil {
				return res, clipped(m.Error)
			}
			return res, nil
		default:
			return ctrl.Result{}, &SourceError{Kind: "crash", Message: fmt.Sprintf("the sandbox sent %q during a reconcile", m.Op)}
		}
	}
}

// MaxCalls is how many API calls learner code may make in one reconcile.
// oplab's own reconciler makes about ten; a loop that makes thousands
// (each a request the API server serves and etcd may store) is stopped
// at this many.
const MaxCalls = 100

// MaxReconcileTime bounds one reconcile of learner code from end to end,
// its API calls and the waits for its write rate included (the deadline
// counts the child's own time only). MaxCalls writes at the write rate
// take about ten seconds.
const MaxReconcileTime = 30 * time.Second

// maxText bounds what of a child's words (an error it returned, a panic, a
// compile error) oplab keeps, shows and exports: the child is not trusted,
// and a megabyte-long error string would otherwise cross to every page that
// polls for it.
const maxText = 2 << 10

// clipped cuts se's message to maxText bytes, on a character boundary,
// saying how long it was.
func clipped(se *SourceError) *SourceError {
	if len(se.Message) <= maxText {
		return se
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(se.Message[cut]) {
		cut--
	}
	se.Message = se.Message[:cut] + fmt.Sprintf("… (cut: the message was %d bytes)", len(se.Message))
	return se
}

// AsSourceError finds the SourceError in err, if there is one.
func AsSourceError(err error) (*SourceError, bool) {
	var se *SourceError
	ok := errors.As(err, &se)
	return se, ok
}
