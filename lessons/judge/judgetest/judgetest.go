// Package judgetest self-tests challenges the way Instruqt tests its
// tracks: on the real embedded cluster, with the real controller and trace
// recorder, each challenge is started in a fresh namespace, every check must
// be not done, the challenge's solve script does what a learner would, and
// then every check must turn done.
//
// A package with challenge tests shares one cluster across them; its
// TestMain calls Main:
//
//	func TestMain(m *testing.M) { os.Exit(judgetest.Main(m)) }
//
// and each test calls Run:
//
//	func TestDriftRepair(t *testing.T) {
//		judgetest.Run(t, "drift-repair", func(ctx context.Context, env judgetest.SolveEnv) error {
//			...
//		})
//	}
package judgetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/controller/tester"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
)

// Deadline bounds the wait for the checks to turn done after the solve:
// generous, because the self-test checks that things happen, not how fast
// (write-your-own runs the tester's whole battery twice, the skeleton and
// the reference, on a machine the suite keeps at load 50 and more).
const Deadline = 12 * time.Minute

// pollEvery is how often the checks are evaluated while the solve runs, as
// the challenge page asks the server.
const pollEvery = 300 * time.Millisecond

// SolveEnv is what a solve script may use: what a learner has (their
// namespace, a client for it, the lab's pause and resume), and a way to
// wait until a task turns done, as a learner watches the page.
type SolveEnv struct {
	Namespace string
	// Client is oplab's own (admin) client; Learner is the learner's own
	// kubectl identity (the ServiceAccount and Role /lab/kubeconfig hands
	// out), so a solve that uses it proves a learner may do each step.
	Client  client.Client
	Learner client.Client
	Pause   func(ctx context.Context) error
	Resume  func(ctx context.Context) error
	// WaitDone blocks until the task with this id has been seen done (or
	// ctx ends, or Deadline passes).
	WaitDone func(ctx context.Context, task string) error
	// Trace returns the namespace's steps since the start.
	Trace func() []controller.Step
	// Answer answers a question task as the page does: graded by the
	// challenge, and, when right, remembered as done, as the learner's
	// browser remembers it.
	Answer func(task string, picked []int) (judge.Answered, error)
	// Input types answer into input task's field and submits it, as the
	// page does: it waits until the task is unlocked (the page keeps the
	// field disabled before), refuses a task already done (the field is
	// disabled then too), is judged against the namespace and trace as
	// they are now, and, when right, remembered as done.
	Input func(ctx context.Context, task, answer string) (judge.Answered, error)
	// RunCode compiles src in a sandbox and hands the namespace to it, as
	// the code page's Run my code does; BackToOplab takes it back.
	RunCode     func(ctx context.Context, src string) error
	BackToOplab func()
	// TestCode tests src with the tester, in scratch namespaces of its
	// own, as the code page's Test my code does; its verdict is the one
	// the checks see from then on.
	TestCode func(ctx context.Context, src string) (judge.Tested, error)
}

// Env is the shared cluster, controller and recorder.
type Env struct {
	Cluster  *cluster.Cluster
	Runner   *controller.Runner
	Recorder *trace.Recorder
	Client   client.Client
	Set      *judge.Set
	cancel   context.CancelFunc

	// verdicts keeps the tester's verdict on each source tested: the
	// tester finds the same on the same code every time (controller/
	// tester's TestALostSnapshotIsFoundTheSameWayTwice), and the
	// challenges' self-tests ask it of the same reference solution, a
	// battery of about a minute of CPU each. The first asks; the others
	// wait for its answer.
	verdictsMu sync.Mutex
	verdicts   map[string]*verdict
}

// verdict is one source's test, done once.
type verdict struct {
	once   sync.Once
	tested judge.Tested
	err    error
}

var (
	shared     *Env
	sharedErr  error
	sharedOnce sync.Once
)

// Main runs the package's tests and stops the shared cluster afterwards; it
// returns the exit code for os.Exit.
func Main(m *testing.M) int {
	// The test binary is also the sandbox child learner code runs in
	// (SolveEnv.RunCode), as oplab is.
	if len(os.Args) == 2 && os.Args[1] == sandbox.ChildArg {
		return sandbox.RunChild(os.Stdin, os.Stdout)
	}
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared challenge cluster:", err)
			code = 1
		}
	}
	return code
}

// Shared returns the shared environment, started on first use. Without a
// provisioned control plane it skips the test, unless CI is set.
func Shared(t testing.TB) *Env {
	t.Helper()
	clustertest.Assets(t)
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		t.Fatalf("starting the challenge test environment: %v", sharedErr)
	}
	return shared
}

// LoadSet loads the embedded challenges against the embedded course.
func LoadSet() (*judge.Set, error) {
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		return nil, fmt.Errorf("load the course: %w", err)
	}
	return judge.LoadEmbedded(course)
}

func start() (_ *Env, err error) {
	set, err := LoadSet()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Env{Set: set, cancel: cancel}
	defer func() {
		if err != nil {
			_ = e.stop()
		}
	}()
	crds, err := controller.CRDs()
	if err != nil {
		return e, err
	}
	opts := cluster.Options{Mode: cluster.ModeFull, CRDs: crds}
	if os.Getenv("OPLAB_CLUSTER_LOG") != "" {
		opts.Log = os.Stderr
	}
	if e.Cluster, err = cluster.Start(ctx, opts); err != nil {
		return e, err
	}
	// As `make run` does: the learner's kubectl may patch a StatefulSet's
	// metadata (owner-gc), not its spec.
	if err := controller.InstallLearnerPolicies(ctx, e.Cluster.Config()); err != nil {
		return e, err
	}
	e.Recorder = trace.NewRecorder(trace.RecorderOptions{})
	go e.Recorder.Run(ctx)
	copts := controller.DefaultOptions()
	copts.Sink, copts.ResyncPeriod = e.Recorder, 10*time.Second
	e.Runner = controller.NewRunner(e.Cluster.Config(), copts)
	if err := e.Runner.Start(ctx); err != nil {
		return e, err
	}
	cfg := rest.CopyConfig(e.Cluster.Config())
	cfg.QPS, cfg.Burst = 100, 200
	e.Client, err = client.New(cfg, client.Options{Scheme: scheme()})
	return e, err
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := dbv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func (e *Env) stop() error {
	if e.Runner != nil {
		_ = e.Runner.Stop()
	}
	e.cancel()
	if e.Cluster != nil {
		return e.Cluster.Stop()
	}
	return nil
}

// Namespace creates a fresh namespace for one test, deleted when it ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	// Labelled as a learner's lab namespace, so the learner policy holds
	// there as it does in the lab.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ch-", Labels: map[string]string{labns.LabLabel: "true"}}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		e.Runner.ResumeNamespace(ns.Name)
		_ = e.Client.Delete(context.Background(), ns)
	})
	return ns.Name
}

// Learner returns a client with the learner's own kubeconfig for ns, as
// GET /lab/kubeconfig issues it.
func (e *Env) Learner(ctx context.Context, ns string) (client.Client, error) {
	cs, err := kubernetes.NewForConfig(e.Cluster.Config())
	if err != nil {
		return nil, err
	}
	cl, err := labns.ClusterOf(e.Cluster.Config(), "")
	if err != nil {
		return nil, err
	}
	creds, err := (&labns.Issuer{Client: cs, Cluster: cl}).Issue(ctx, ns, time.Now().Add(time.Hour))
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(creds.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read the learner's kubeconfig: %w", err)
	}
	return client.New(cfg, client.Options{Scheme: scheme()})
}

// PrepareEnv is the PrepareEnv of namespace ns, as the page's Start builds it.
func (e *Env) PrepareEnv(ns string) judge.PrepareEnv {
	return judge.PrepareEnv{
		Namespace: ns, Client: e.Client,
		Pause:  func(context.Context) error { e.Runner.PauseNamespace(ns); return nil },
		Resume: func(context.Context) error { e.Runner.ResumeNamespace(ns); return nil },
	}
}

// CheckEnv is the Env the checks see for namespace ns since started.
func (e *Env) CheckEnv(t testing.TB, ns string, started time.Time) judge.Env {
	t.Helper()
	trace, err := judge.Trace(e.Recorder.Export(ns), started)
	if err != nil {
		t.Fatalf("decode the trace of %s: %v", ns, err)
	}
	return judge.Env{Namespace: ns, Client: e.Client, Trace: trace, Paused: e.Runner.NamespacePaused(ns)}
}

// Run self-tests challenge id: Start in a fresh namespace, every check not
// done, solve (while the checks are evaluated as the page would, tasks
// done once seen done), every task done within Deadline.
func Run(t *testing.T, id string, solve func(ctx context.Context, env SolveEnv) error) {
	t.Helper()
	e := Shared(t)
	c, ok := e.Set.Get(id)
	if !ok {
		t.Fatalf("no challenge %q (have %v)", id, ids(e.Set))
	}
	ns := e.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	started, err := c.Start(ctx, e.PrepareEnv(ns))
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}

	// Instruqt's "check fails before solve": every task's own check, locked
	// or not, says not done on the prepared start.
	startEnv := e.CheckEnv(t, ns, started)
	for _, task := range c.Tasks {
		if task.Question != nil || task.Input != "" { // answered, not checked: nothing to run on the start
			continue
		}
		check, _ := judge.LookupCheck(task.Check)
		r, err := check(ctx, startEnv)
		if err != nil {
			t.Fatalf("task %s: check %s on the prepared start: %v", task.ID, task.Check, err)
		}
		if r.Done {
			t.Errorf("task %s: check %s is done on the prepared start (%s); it must fail before the solve", task.ID, task.Check, r.Detail)
		}
	}
	if t.Failed() {
		return
	}

	w := newWatcher(e, t, c, ns, started)
	go w.run(ctx)
	learner, err := e.Learner(ctx, ns)
	if err != nil {
		t.Fatalf("the learner's kubectl identity in %s: %v", ns, err)
	}
	senv := SolveEnv{
		Namespace: ns, Client: e.Client, Learner: learner,
		Pause:    func(context.Context) error { e.Runner.PauseNamespace(ns); return nil },
		Resume:   func(context.Context) error { e.Runner.ResumeNamespace(ns); return nil },
		WaitDone: w.waitDone,
		Trace: func() []controller.Step {
			steps, _ := judge.Trace(e.Recorder.Export(ns), started)
			return steps
		},
		Answer: func(task string, picked []int) (judge.Answered, error) {
			if st, ok := w.state(task); ok && st.State == judge.StateLocked {
				return judge.Answered{}, fmt.Errorf("task %s is locked (%s): the page would not let it be answered", task, st.Detail)
			}
			a, err := c.Answer(task, picked)
			if err == nil && a.Correct {
				w.markDone(task)
			}
			return a, err
		},
	}
	senv.Input = func(ctx context.Context, task, answer string) (judge.Answered, error) {
		st, err := w.waitUnlocked(ctx, task)
		if err != nil {
			return judge.Answered{}, err
		}
		if st.State == judge.StateDone {
			return judge.Answered{}, fmt.Errorf("task %s is already done (%s): the page would not let it be answered again", task, st.Detail)
		}
		a, err := c.Submit(ctx, w.env(), task, answer)
		if err == nil && a.Correct {
			w.markDone(task)
		}
		return a, err
	}
	sb := &sandbox.Sandbox{Command: func() *exec.Cmd { return exec.Command(os.Args[0], sandbox.ChildArg) }}
	defer sb.Close()
	defer e.Runner.TakeBack(ns)
	senv.RunCode = func(ctx context.Context, src string) error {
		if serr := sb.Compile(ctx, src); serr != nil {
			return serr
		}
		e.Runner.HandOver(ns, sb)
		return nil
	}
	senv.BackToOplab = func() { e.Runner.TakeBack(ns) }
	senv.TestCode = func(ctx context.Context, src string) (judge.Tested, error) {
		tested, err := e.test(ctx, ns, src)
		if err == nil {
			w.setTested(tested)
		}
		return tested, err
	}
	if err := solve(ctx, senv); err != nil {
		t.Fatalf("solve %s: %v\n%s", id, err, w.report())
	}
	if err := w.waitAll(ctx); err != nil {
		t.Fatalf("%s: not every task turned done after the solve: %v\n%s", id, err, w.report())
	}
}

// test runs the tester on src in scratch namespaces of ns, left alone by
// the shared controller as the server's are, once for each source.
func (e *Env) test(ctx context.Context, ns, src string) (judge.Tested, error) {
	e.verdictsMu.Lock()
	if e.verdicts == nil {
		e.verdicts = map[string]*verdict{}
	}
	v := e.verdicts[src]
	if v == nil {
		v = &verdict{}
		e.verdicts[src] = v
	}
	e.verdictsMu.Unlock()
	v.once.Do(func() { v.tested, v.err = e.testOnce(ctx, ns, src) })
	return v.tested, v.err
}

func (e *Env) testOnce(ctx context.Context, ns, src string) (judge.Tested, error) {
	res, err := tester.Run(ctx, tester.Options{
		Config:  e.Cluster.Config(),
		Scratch: scratch{e: e, of: ns},
		Compile: func(ctx context.Context) (tester.Code, error) {
			s := &sandbox.Sandbox{Command: func() *exec.Cmd { return exec.Command(os.Args[0], sandbox.ChildArg) }}
			if serr := s.Compile(ctx, src); serr != nil {
				return nil, serr
			}
			return s, nil
		},
	})
	if err != nil {
		return judge.Tested{}, err
	}
	t := judge.Tested{Passed: res.Passed, Schedules: res.Schedules}
	for _, f := range res.Findings {
		t.Findings = append(t.Findings, f.Pattern+": "+f.Message)
	}
	return t, nil
}

// scratch is tester.Scratch on the shared cluster.
type scratch struct {
	e  *Env
	of string
}

func (s scratch) Make(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.of + "-t" + strings.ToLower(rand.Text()[:6]), Labels: map[string]string{labns.LabLabel: "true"}}}
	// Ignored before it exists: the shared controller never races the
	// tester's driver there.
	s.e.Runner.Ignore(ns.Name)
	if err := s.e.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, s.e.Runner.GrantCode(ctx, ns.Name)
}

func (s scratch) Remove(ns string) {
	_ = s.e.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

func ids(s *judge.Set) []string {
	var out []string
	for _, c := range s.Challenges {
		out = append(out, c.ID)
	}
	return out
}

// watcher evaluates the challenge repeatedly, as the open page does, and
// remembers the tasks seen done. One goroutine (run) writes; the mutex
// guards what the waiters read.
type watcher struct {
	e       *Env
	t       testing.TB
	c       *judge.Challenge
	ns      string
	started time.Time

	mu      sync.Mutex
	done    map[string]bool
	tested  *judge.Tested
	last    []judge.TaskState
	lastErr error
	changed chan struct{} // closed and replaced at each evaluation
}

func newWatcher(e *Env, t testing.TB, c *judge.Challenge, ns string, started time.Time) *watcher {
	return &watcher{e: e, t: t, c: c, ns: ns, started: started, done: map[string]bool{}, changed: make(chan struct{})}
}

func (w *watcher) run(ctx context.Context) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		w.evaluate(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (w *watcher) evaluate(ctx context.Context) {
	w.mu.Lock()
	already := make(map[string]bool, len(w.done))
	for k, v := range w.done {
		already[k] = v
	}
	w.mu.Unlock()
	env, err := w.envErr()
	var states []judge.TaskState
	if err == nil {
		states, err = w.c.Evaluate(ctx, env, already)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.lastErr = states, err
	for _, s := range states {
		if s.State == judge.StateDone {
			w.done[s.ID] = true
		}
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// envErr is the Env the page's server builds for the namespace now.
func (w *watcher) envErr() (judge.Env, error) {
	trace, err := judge.Trace(w.e.Recorder.Export(w.ns), w.started)
	if err != nil {
		return judge.Env{}, err
	}
	w.mu.Lock()
	tested := w.tested
	w.mu.Unlock()
	return judge.Env{Namespace: w.ns, Client: w.e.Client, Trace: trace, Paused: w.e.Runner.NamespacePaused(w.ns), Tested: tested}, nil
}

func (w *watcher) setTested(t judge.Tested) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tested = &t
}

// env is envErr failing the test on an undecodable trace.
func (w *watcher) env() judge.Env {
	env, err := w.envErr()
	if err != nil {
		w.t.Errorf("decode the trace of %s: %v", w.ns, err)
	}
	return env
}

// waitUnlocked blocks until an evaluation finds task not locked, and
// returns its state then.
func (w *watcher) waitUnlocked(ctx context.Context, task string) (judge.TaskState, error) {
	if !hasTask(w.c, task) {
		return judge.TaskState{}, fmt.Errorf("challenge %s has no task %q", w.c.ID, task)
	}
	for {
		w.mu.Lock()
		changed, done := w.changed, w.done[task]
		w.mu.Unlock()
		st, ok := w.state(task)
		switch {
		case done:
			return judge.TaskState{ID: task, State: judge.StateDone, Detail: st.Detail}, nil
		case ok && st.State != judge.StateLocked:
			return st, nil
		}
		select {
		case <-ctx.Done():
			return judge.TaskState{}, fmt.Errorf("task %s still locked: %w\n%s", task, ctx.Err(), w.report())
		case <-changed:
		}
	}
}

// state is where task stood at the last evaluation.
func (w *watcher) state(task string) (judge.TaskState, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.last {
		if s.ID == task {
			return s, true
		}
	}
	return judge.TaskState{}, false
}

// markDone remembers task as done, as the page does once its question is
// answered right.
func (w *watcher) markDone(task string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done[task] = true
	close(w.changed)
	w.changed = make(chan struct{})
}

// waitDone blocks until task has been seen done.
func (w *watcher) waitDone(ctx context.Context, task string) error {
	if !hasTask(w.c, task) {
		return fmt.Errorf("challenge %s has no task %q", w.c.ID, task)
	}
	for {
		w.mu.Lock()
		done, changed := w.done[task], w.changed
		w.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("task %s not done: %w\n%s", task, ctx.Err(), w.report())
		case <-changed:
		}
	}
}

func (w *watcher) waitAll(ctx context.Context) error {
	for _, task := range w.c.Tasks {
		if err := w.waitDone(ctx, task.ID); err != nil {
			return err
		}
	}
	return nil
}

// report says where every task stood at the last evaluation.
func (w *watcher) report() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, s := range w.last {
		fmt.Fprintf(&b, "  %s: %s %s\n", s.ID, s.State, s.Detail)
	}
	if w.lastErr != nil {
		fmt.Fprintf(&b, "  last error: %v\n", w.lastErr)
	}
	return b.String()
}

func hasTask(c *judge.Challenge, id string) bool {
	for _, t := range c.Tasks {
		if t.ID == id {
			return true
		}
	}
	return false
}

// SolveInput plays input task as a learner who first gets it wrong: the
// task is not done before its answer (Input refuses a done task), wrong is
// refused with a detail that says what to look at and does not contain
// right, and right, which the solve read from the cluster or the trace as
// a learner would, is accepted.
func SolveInput(ctx context.Context, env SolveEnv, task, wrong, right string) error {
	a, err := env.Input(ctx, task, wrong)
	switch {
	case err != nil:
		return fmt.Errorf("task %s, wrong answer %q: %w", task, wrong, err)
	case a.Correct:
		return fmt.Errorf("task %s: wrong answer %q accepted (%s)", task, wrong, a.Detail)
	case a.Detail == "":
		return fmt.Errorf("task %s: wrong answer %q refused with no detail saying what to look at", task, wrong)
	case strings.Contains(strings.ToLower(a.Detail), strings.ToLower(strings.TrimPrefix(right, "#"))):
		return fmt.Errorf("task %s: the refusal of %q gives the answer away: %s", task, wrong, a.Detail)
	}
	a, err = env.Input(ctx, task, right)
	switch {
	case err != nil:
		return fmt.Errorf("task %s, right answer %q: %w", task, right, err)
	case !a.Correct:
		return fmt.Errorf("task %s: right answer %q refused: %s", task, right, a.Detail)
	}
	return nil
}
