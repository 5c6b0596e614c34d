package class

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/cmd/oplab/app"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/stream"
	"github.com/oplab-dev/oplab/web/stream/streamtest"
)

var (
	benchLearners  = flag.Int("learners", 30, "how many learner sessions BenchmarkClass runs, each creating and deleting Databases")
	benchFollowers = flag.Int("followers", 30, "how many followers watch the instructor's namespace")
	benchRounds    = flag.Int("rounds", 5, "how many create → Ready → delete → gone cycles each learner runs")
	benchDeadline  = flag.Duration("deadline", 4*time.Minute, "hard limit on the class's activity; cycles not done by then count as errors")
	benchNice      = flag.Int("viewer-nice", 0, "niceness of the class's child process (19: as the fan-out tools run their thousands of viewers)")
	benchWorst     = flag.Bool("worst", false, "run worst learners instead (issue 19 §4): each does the worst its own kubeconfig allows for -worst-for; a class of ordinary learners of the same size (-learners, 10 unless given), without followers, runs first as the baseline")
	benchWorstFor  = flag.Duration("worst-for", time.Minute, "how long each worst learner acts")
	benchRealRate  = flag.Float64("real-rate", 1.5, "Database cycles (a create and a delete) per learner-minute a real learner does, for the scaled learners-per-core figure: a few clicks a minute, each at most half a cycle")
)

// Windows of the measure. idleWindow is oplab with no session; quietWindow
// is the class joined (sessions started, streams open) but doing nothing,
// so what only being there costs is known apart from what acting costs.
const (
	settle      = 5 * time.Second
	idleWindow  = 10 * time.Second
	quietWindow = 5 * time.Second
)

// BenchmarkClass measures one oplab serving a class, issue 11 §5: -learners
// sessions each running -rounds Database cycles (create, wait until their
// stream shows it Ready, delete, wait until it shows it gone), and one
// instructor cycling Databases the same way in their own namespace,
// presented to -followers followers, until the learners are done.
//
// oplab is the real thing, as cmd/oplab wires it: the embedded control
// plane (full mode), the recorder and hub, the controller with its shipped
// options, and the web server with its sessions, served on 127.0.0.1. The
// class runs in a child process (this test binary again, as TestClassChild):
// its browsers stand for machines of their own, and its CPU must not count
// as oplab's. Unlike the fan-out tools' thousands of viewers, it runs at
// oplab's priority by default (-viewer-nice 0): its 61 sockets cost it
// under a tenth of a core, and at nice 19 on a shared, loaded machine its
// reads wait behind every other process, so the delays it notes would be
// the scheduler's rather than oplab's.
//
// It prints the followers' delay from each message's time (the recorder's
// step time) to its receipt, on the machine's one clock; oplab's CPU and
// RSS idle, with the class joined but quiet, and while it acts, per
// learner; the control plane's processes apart, from /proc; and the
// learners one core holds, at the benchmark's activity rate and scaled to
// -real-rate. It asserts nothing about time.
func BenchmarkClass(b *testing.B) {
	clustertest.Assets(b)
	if *benchLearners < 1 || *benchRounds < 1 || *benchFollowers < 0 {
		b.Fatalf("-learners %d, -rounds %d, -followers %d: want at least one learner and one round, and no negative followers", *benchLearners, *benchRounds, *benchFollowers)
	}
	if followPresenter && *benchFollowers > 0 && *benchLearners == 0 {
		b.Fatal("followers follow with a learner's cookie: want at least one learner")
	}
	if *benchWorst {
		// A finer sample than the default 512 KiB, so that the heap
		// profile written with the worst learners connected says what
		// holds their memory; set before oplab allocates.
		runtime.MemProfileRate = 16 << 10
	}
	lab := startOplab(b)
	defer lab.stop()
	if *benchWorst {
		for range b.N {
			m := lab.measureWorst(b)
			m.print(os.Stdout)
			m.check(b)
			m.report(b)
		}
		return
	}
	for range b.N {
		m := lab.measure(b)
		m.print(os.Stdout)
		m.report(b)
	}
}

// oplab is the system measured, in this process but for the control plane.
type oplab struct {
	cancel  context.CancelFunc
	cluster *cluster.Cluster
	rec     *trace.Recorder
	hub     *stream.Hub
	// reconciles counts the controller's reconciles, by namespace.
	reconciles *reconcileCounter
	runner     *controller.Runner
	http       *http.Server
	url        string
	token      string
	done       []chan struct{}
}

// startOplab starts what cmd/oplab's run starts, in the same order.
func startOplab(b *testing.B) *oplab {
	cluster.TuneGC() // as oplab's main does
	ctx, cancel := context.WithCancel(context.Background())
	o := &oplab{cancel: cancel, token: randomToken()}
	fail := func(what string, err error) {
		o.stop()
		b.Fatalf("%s: %v", what, err)
	}
	logFile, err := os.Create(filepath.Join(artifactsDir(), "class-cluster.log"))
	if err != nil {
		fail("create the cluster log", err)
	}
	rec := trace.NewRecorder(trace.RecorderOptions{})
	hub := stream.NewHub(rec, stream.HubOptions{})
	o.rec, o.hub = rec, hub
	o.goRun(func() { rec.Run(ctx) })
	o.goRun(func() { hub.Run(ctx) })
	crds, err := controller.CRDs()
	if err != nil {
		fail("load the CRDs", err)
	}
	if o.cluster, err = cluster.Start(ctx, cluster.Options{Mode: cluster.ModeFull, CRDs: crds, Log: logFile}); err != nil {
		fail("start the cluster", err)
	}
	opts := controller.DefaultOptions()
	o.reconciles = &reconcileCounter{next: rec, by: map[string]int{}}
	opts.Sink = o.reconciles
	o.runner = controller.NewRunner(o.cluster.Config(), opts)
	if err := o.runner.Start(ctx); err != nil {
		fail("start the controller", err)
	}
	content, err := learn.LoadContent()
	if err != nil {
		fail("load the course", err)
	}
	srv, err := app.NewWeb(ctx, app.Options{
		Config: o.cluster.Config(), Recorder: rec, Hub: hub, Controller: o.runner,
		InstructorToken: o.token, MaxSessions: 200,
		MaxSessionsPerClient: 0, // the whole class comes from 127.0.0.1
		Logger:               testLogger(logFile),
		Content:              content,
	})
	if err != nil {
		fail("start the web server", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen", err)
	}
	o.url = "http://" + ln.Addr().String()
	o.http = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	o.goRun(func() { _ = srv.Run(ctx) })
	o.goRun(func() { _ = o.http.Serve(ln) })
	return o
}

func (o *oplab) goRun(f func()) {
	done := make(chan struct{})
	o.done = append(o.done, done)
	go func() { defer close(done); f() }()
}

// stop stops the web server, the controller and the cluster, in reverse
// order of their start.
func (o *oplab) stop() {
	if o.http != nil {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = o.http.Shutdown(shut)
		cancel()
	}
	if o.runner != nil {
		if err := o.runner.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the benchmark's controller:", err)
		}
	}
	o.cancel()
	for _, d := range o.done {
		<-d
	}
	if o.cluster != nil {
		if err := o.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the benchmark cluster:", err)
		}
	}
}

func randomToken() string {
	buf := make([]byte, 16)
	_, _ = rand.Read(buf) // never fails
	return hex.EncodeToString(buf)
}

// window is what one stretch of the measure cost.
type window struct {
	took    time.Duration
	oplab   time.Duration // this process's CPU
	cluster map[string]time.Duration
	rss     rssStats // this process's
	cpRSS   rssStats // the control plane's, summed
}

// cores is CPU over wall time.
func cores(cpu, took time.Duration) float64 { return cpu.Seconds() / took.Seconds() }

func (w window) clusterCPU() time.Duration {
	var sum time.Duration
	for _, d := range w.cluster {
		sum += d
	}
	return sum
}

// measuring is a window being measured.
type measuring struct {
	began    time.Time
	cpu0     time.Duration
	cluster0 map[int]procCPU
	sampler  *sampler
	skip     int
}

func startWindow(skip int) *measuring {
	cluster0 := childCPU(skip)
	return &measuring{began: time.Now(), cpu0: cpuTime(), cluster0: cluster0, sampler: startSampling(cluster0), skip: skip}
}

func (m *measuring) end() window {
	w := window{took: time.Since(m.began), oplab: cpuTime() - m.cpu0, cluster: map[string]time.Duration{}}
	for pid, c := range childCPU(m.skip) {
		// A process restarted meanwhile has a new pid: counted from 0.
		w.cluster[c.name] += c.cpu - m.cluster0[pid].cpu
	}
	w.rss, w.cpRSS = m.sampler.stop()
	return w
}

// measurement is one run of the class.
type measurement struct {
	learners, followers int
	join                time.Duration // starting every session and opening every stream
	idle, quiet, active window
	class               classResult
}

// measure runs the class once: oplab idle, the class joined and quiet, then
// acting.
func (o *oplab) measure(b *testing.B) measurement {
	m := measurement{learners: *benchLearners, followers: *benchFollowers}
	time.Sleep(settle)
	w := startWindow(0)
	time.Sleep(idleWindow)
	m.idle = w.end()

	began := time.Now()
	child, err := startClass(b.Context(), classConfig{
		URL: o.url, Learners: m.learners, Followers: m.followers, Rounds: *benchRounds,
		Deadline: *benchDeadline, InstructorToken: o.token,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer child.close()
	m.join = time.Since(began)
	pid := child.cmd.Process.Pid
	w = startWindow(pid)
	time.Sleep(quietWindow)
	m.quiet = w.end()

	w = startWindow(pid)
	if m.class, err = child.run(*benchDeadline + time.Minute); err != nil {
		b.Fatal(err)
	}
	m.active = w.end()
	if m.class.Errors > 0 {
		b.Logf("%d learner or instructor cycles failed; the first: %s", m.class.Errors, m.class.FirstError)
	}
	return m
}

// classProc is the class's child process, driven over its stdin and stdout.
type classProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startClass starts this test binary again as TestClassChild and waits
// until the class has joined.
func startClass(ctx context.Context, cfg classConfig) (*classProc, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := streamtest.Command(ctx, *benchNice, os.Args[0], "-test.run=^TestClassChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("class process stdin: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("class process stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the class process: %w", err)
	}
	p := &classProc{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	p.out.Buffer(make([]byte, 64<<10), 1<<20)
	line, err := p.reply()
	if err == nil && line != "connected" {
		err = fmt.Errorf("the class process said %q; want connected", line)
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("join the class: %w", err)
	}
	return p, nil
}

// reply returns the child's next protocol line, skipping the test
// framework's own output.
func (p *classProc) reply() (string, error) {
	for p.out.Scan() {
		if line, ok := strings.CutPrefix(p.out.Text(), childPrefix); ok {
			if msg, failed := strings.CutPrefix(line, "error "); failed {
				return "", errors.New(msg)
			}
			return line, nil
		}
	}
	return "", fmt.Errorf("the class process ended: %v", p.out.Err())
}

// run says go and waits, at most limit, for the class's result.
func (p *classProc) run(limit time.Duration) (classResult, error) {
	var r classResult
	err := p.goAndWait(limit, &r)
	return r, err
}

// goAndWait says go and waits, at most limit, for the class's result,
// which it decodes into r.
func (p *classProc) goAndWait(limit time.Duration, r any) error {
	if _, err := fmt.Fprintln(p.in, "go"); err != nil {
		return fmt.Errorf("class process: go: %w", err)
	}
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := p.reply()
		got <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(limit):
		p.close() // ends reply too
		return fmt.Errorf("the class did not finish within %v", limit)
	}
	if a.err != nil {
		return a.err
	}
	raw, ok := strings.CutPrefix(a.line, "done ")
	if !ok {
		return fmt.Errorf("the class process said %q; want done", a.line)
	}
	if err := json.Unmarshal([]byte(raw), r); err != nil {
		return fmt.Errorf("the class's result: %w", err)
	}
	return nil
}

func (p *classProc) close() {
	_ = p.in.Close()
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	_ = p.cmd.Wait()
}
