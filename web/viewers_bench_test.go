package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/stream"
)

var (
	benchDBs     = flag.Int("dbs", 100, "how many Databases BenchmarkControllerWithViewers creates at once per phase")
	benchViewers = flag.Int("viewers", 2000, "how many websocket viewers BenchmarkControllerWithViewers connects in its with-viewers phase")
	benchInProc  = flag.Bool("inproc", false, "run BenchmarkControllerWithViewers's viewers in the benchmark's own process instead of a child process")
)

// phaseDeadline bounds one phase: creating the Databases, waiting for them
// to turn Ready and for the viewers to drain. Generous; it is a safety net,
// not a measure.
const phaseDeadline = 5 * time.Minute

// BenchmarkControllerWithViewers measures what websocket viewers cost the
// controller, in one run on the real embedded cluster: the real controller
// (DefaultOptions) traces to the real stream.Recorder, whose /ws handler is
// served on 127.0.0.1. Each phase creates -dbs Databases at once in a fresh
// namespace and times until all are Ready: a warm-up phase, then with no
// viewers, with -viewers viewers of that namespace (every step fanned out to
// all of them), and with none again, to show the noise. It prints the throughput ratio,
// the delivery delay from a step's emission (Step.Time) to its receipt, and
// the process's memory. It asserts nothing about time. Run it once:
//
//	go test ./web -run '^$' -bench ControllerWithViewers -benchtime 1x [-dbs 100] [-viewers 2000]
//
// The viewers run in a child process (this test binary again, running
// TestViewersChild), so oplab's CPU and memory figures are its own; the
// child's CPU is printed too, since on one machine the viewers compete with
// oplab and the cluster for the same cores. -inproc keeps them in-process.
func BenchmarkControllerWithViewers(b *testing.B) {
	if _, err := cluster.FindAssets(); err != nil {
		if os.Getenv("CI") != "" {
			b.Fatalf("CI=%s and %v", os.Getenv("CI"), err)
		}
		b.Skipf("skipping: needs the embedded cluster: %v (unset CI allows the skip)", err)
	}
	raiseFileLimit(b, *benchViewers)
	be := startBenchEnv(b)
	defer be.stop()

	var results []phaseResult
	for range b.N {
		results = results[:0]
		// Phase 0 warms the cluster up (the first Databases of a fresh
		// cluster are much slower) and is left out of the ratio.
		for i, viewers := range []int{0, 0, *benchViewers, 0} {
			results = append(results, be.phase(b, i, *benchDBs, viewers))
		}
	}
	printPhases(b, *benchDBs, results)
}

// raiseFileLimit lifts the soft open-files limit to the hard one: every
// viewer holds two descriptors (its client and server ends).
func raiseFileLimit(tb testing.TB, viewers int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatalf("read RLIMIT_NOFILE: %v", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatalf("raise RLIMIT_NOFILE to %d: %v", lim.Max, err)
	}
	if need := uint64(2*viewers + 512); lim.Cur < need {
		tb.Fatalf("RLIMIT_NOFILE hard limit %d is below the %d descriptors %d viewers need; raise it (ulimit -Hn) or pass fewer -viewers", lim.Cur, need, viewers)
	}
}

// benchEnv is one cluster, one recorder and the web server's background
// work (its state watcher publishes the Databases' states to the recorder,
// as in oplab), plus the recorder's /ws handler on a loopback server.
type benchEnv struct {
	ctx      context.Context
	cancel   context.CancelFunc
	cluster  *cluster.Cluster
	recorder *stream.Recorder
	http     *httptest.Server
	client   client.Client
	run      string // names this run's namespaces
}

func startBenchEnv(b *testing.B) *benchEnv {
	ctx, cancel := context.WithCancel(context.Background())
	be := &benchEnv{ctx: ctx, cancel: cancel, run: strconv.FormatInt(time.Now().Unix()%100000, 10)}
	fail := func(what string, err error) {
		be.stop()
		b.Fatalf("%s: %v", what, err)
	}
	logFile, err := os.Create(filepath.Join(artifactsDir(), "bench-cluster.log"))
	if err != nil {
		fail("create the cluster log", err)
	}
	crds, err := controller.CRDs()
	if err != nil {
		fail("load the CRDs", err)
	}
	if be.cluster, err = cluster.Start(ctx, cluster.Options{Mode: cluster.ModeFull, CRDs: crds, Log: logFile}); err != nil {
		fail("start the cluster", err)
	}
	be.recorder = stream.NewRecorder(stream.Options{})
	go be.recorder.Run(ctx)
	// The server is started for its state watcher, which publishes to the
	// recorder as in oplab; the viewers connect to the recorder's handler
	// directly, naming their namespace in the query instead of a session.
	server, err := New(ctx, Options{
		Config: be.cluster.Config(), Recorder: be.recorder, Controller: idleSwitch{}, Logger: testLogger(logFile),
	})
	if err != nil {
		fail("start the web server", err)
	}
	go func() { _ = server.Run(ctx) }()
	be.http = httptest.NewServer(be.recorder.Handler(func(r *http.Request) (string, error) {
		return r.URL.Query().Get("ns"), nil
	}))
	if be.client, err = client.New(be.cluster.Config(), client.Options{Scheme: mustScheme()}); err != nil {
		fail("create a client", err)
	}
	return be
}

func (be *benchEnv) stop() {
	if be.http != nil {
		be.http.Close()
	}
	be.cancel()
	if be.cluster != nil {
		if err := be.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the benchmark cluster:", err)
		}
	}
}

// idleSwitch stands in for the controller switch: each phase runs its own
// controller, and nothing here stops or starts it from the lab page.
type idleSwitch struct{}

func (idleSwitch) Start(context.Context) error { return nil }
func (idleSwitch) Stop() error                 { return nil }
func (idleSwitch) Running() bool               { return true }

// phaseResult is what one phase measured.
type phaseResult struct {
	viewers        int
	took           time.Duration
	drain          time.Duration // from all Ready until every viewer had every step (or gave up)
	steps          int64         // steps the controller emitted until all were Ready
	cpu            time.Duration
	frames, msgs   float64 // received per viewer, on average
	bytes          float64
	lagging        int           // viewers that had not received the last step when the phase ended
	broken         int           // viewers that got a frame they could not decode
	viewerCPU      time.Duration // the viewers' process, from the start of the measure to the end of the drain
	viewerRSS      uint64        // the viewers' process's peak RSS (0 when in-process)
	delays         *histogram
	droppedClients uint64
	droppedSteps   uint64
	heapInuse, sys uint64 // the largest sampled during the phase
	rss            uint64
}

// phase runs one measured phase in a fresh namespace with its own
// controller, restricted to that namespace.
func (be *benchEnv) phase(b *testing.B, i, dbs, viewers int) phaseResult {
	ctx, cancel := context.WithTimeout(be.ctx, phaseDeadline)
	defer cancel()
	ns := fmt.Sprintf("%sbench-%s-%d", session.NamespacePrefix, be.run, i)
	if err := be.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatalf("create namespace %s: %v", ns, err)
	}
	sink := &readySink{next: be.recorder, want: dbs, allReady: make(chan struct{}), seen: map[string]bool{}}
	opts := controller.DefaultOptions()
	opts.Sink, opts.Namespaces = sink, []string{ns}
	runner := controller.NewRunner(be.cluster.Config(), opts)
	if err := runner.Start(ctx); err != nil {
		b.Fatalf("start the controller: %v", err)
	}
	defer func() {
		if err := runner.Stop(); err != nil {
			b.Errorf("stop the controller: %v", err)
		}
	}()

	before := be.recorder.Stats()
	url := "ws" + strings.TrimPrefix(be.http.URL, "http") + "/?ns=" + ns
	var vs viewerPool
	var err error
	if *benchInProc || viewers == 0 {
		vs, err = connectViewers(ctx, url, viewers)
	} else {
		vs, err = startViewerProc(ctx, url, viewers)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer vs.close()
	waitUntil(b, fmt.Sprintf("%d viewers registered", viewers), ctx, func() bool {
		return be.recorder.Stats().Clients >= viewers
	})

	runtime.GC()
	mem := startSampling()
	cpu0, steps0 := cpuTime(), sink.steps.Load()
	began := time.Now()
	if err := vs.start(began); err != nil {
		b.Fatal(err)
	}
	createDatabases(b, ctx, be.client, ns, dbs)
	select {
	case <-sink.allReady:
	case <-ctx.Done():
		b.Fatalf("%d Databases in %s were not all Ready within %s (%d were)", dbs, ns, phaseDeadline, sink.readyCount())
	}
	took := time.Since(began)
	cpu := cpuTime() - cpu0
	steps := sink.steps.Load() - steps0

	// Every step emitted so far must reach every viewer; wait (bounded) for
	// them, then count who is still behind.
	drainBy := time.Now().Add(30 * time.Second)
	lagging := 0
	for {
		if lagging, err = vs.behind(steps); err != nil {
			b.Fatal(err)
		}
		if lagging == 0 || time.Now().After(drainBy) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	drain := time.Since(began) - took
	heap, sys, rss := mem.stop()
	after := be.recorder.Stats()
	t, err := vs.totals()
	if err != nil {
		b.Fatal(err)
	}
	return phaseResult{
		viewers: viewers, took: took, drain: drain, steps: steps, cpu: cpu, lagging: lagging,
		droppedClients: after.DroppedClients - before.DroppedClients, droppedSteps: after.DroppedSteps - before.DroppedSteps,
		heapInuse: heap, sys: sys, rss: rss,
		frames: t.Frames, msgs: t.Msgs, bytes: t.Bytes, delays: t.histogram(), broken: t.Broken, viewerCPU: t.CPU, viewerRSS: t.RSS,
	}
}

// readySink forwards every step to the recorder and notes when the wanted
// number of Databases have first turned Ready. Emit takes a short lock and
// never waits on anything else.
type readySink struct {
	next     controller.Sink
	want     int
	steps    atomic.Int64
	allReady chan struct{}

	mu   sync.Mutex
	seen map[string]bool
}

func (s *readySink) Emit(st controller.Step) {
	if st.Time.IsZero() {
		st.Time = time.Now()
	}
	s.next.Emit(st)
	s.steps.Add(1)
	if st.Type != controller.StepStatus {
		return
	}
	for _, c := range st.Conditions {
		if c.Type == controller.ConditionReady && c.To == string(metav1.ConditionTrue) {
			s.markReady(st.Database)
		}
	}
}

func (s *readySink) markReady(db string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[db] {
		return
	}
	s.seen[db] = true
	if len(s.seen) == s.want {
		close(s.allReady)
	}
}

func (s *readySink) readyCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// createDatabases creates n Databases from 16 goroutines, so creation itself
// is not what is measured.
func createDatabases(b *testing.B, ctx context.Context, c client.Client, ns string, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				db := &dbv1.Database{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%04d", i), Namespace: ns},
					Spec:       dbv1.DatabaseSpec{Replicas: 1},
				}
				if err := c.Create(ctx, db); err != nil {
					errs <- fmt.Errorf("create %s/%s: %w", ns, db.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// viewerSet is the connected viewers of one phase.
type viewerSet struct {
	viewers []*viewer
	wg      sync.WaitGroup
	// from is when the measure began (Unix ns): steps stamped earlier, such
	// as the history sent on connecting, are not counted.
	from atomic.Int64
	cpu0 time.Duration
}

// viewer is one websocket client. Its reader goroutine owns the counters
// and the histogram until close has waited for it; steps is read live.
type viewer struct {
	conn   *websocket.Conn
	steps  atomic.Int64 // controller steps received
	from   *atomic.Int64
	probe  bool // decodes with encoding/json
	broken bool // a frame did not decode; the viewer stopped reading
	frames int64
	bytes  int64
	msgs   int64
	delays histogram
}

// viewerPool is a phase's viewers, in this process or in a child.
type viewerPool interface {
	// start says the measure began at t: steps stamped earlier, such as
	// the history sent on connecting, are not counted.
	start(t time.Time) error
	// behind counts the viewers that have received fewer than steps steps.
	behind(steps int64) (int, error)
	// totals disconnects the viewers and sums what they received.
	totals() (viewerTotals, error)
	close()
}

// viewerTotals is what a pool's viewers received, as the child reports it.
type viewerTotals struct {
	Frames, Msgs, Bytes float64 // per viewer, on average
	Counts              []uint32
	Total               uint64
	CPU                 time.Duration // since start
	RSS                 uint64        // peak, bytes; 0 in-process
	Broken              int           // viewers that got a frame they could not decode
}

func (t viewerTotals) histogram() *histogram {
	h := &histogram{total: t.Total}
	copy(h.counts[:], t.Counts)
	return h
}

// connectViewers dials n viewers at url, 64 at a time, and starts a reader
// per connection that drains it continuously.
func connectViewers(ctx context.Context, url string, n int) (*viewerSet, error) {
	vs := &viewerSet{viewers: make([]*viewer, n)}
	vs.from.Store(math.MaxInt64) // nothing counts until start
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 4096}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range min(64, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				conn, resp, err := dialer.DialContext(ctx, url, nil)
				if resp != nil && resp.Body != nil {
					_ = resp.Body.Close()
				}
				if err != nil {
					errs <- fmt.Errorf("connect viewer %d: %w", i, err)
					return
				}
				v := &viewer{conn: conn, from: &vs.from, probe: i%probeEvery == 0}
				vs.viewers[i] = v
				vs.wg.Go(v.read)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		vs.close()
		return nil, err
	}
	return vs, nil
}

func (vs *viewerSet) start(t time.Time) error {
	vs.cpu0 = cpuTime()
	vs.from.Store(t.UnixNano())
	return nil
}

// wireMessage is the part of a stream message a viewer needs.
type wireMessage struct {
	Time time.Time           `json:"time"`
	Type controller.StepType `json:"type"`
}

// probeEvery picks the viewers that decode frames with encoding/json, as a
// check on the others' scanner; the others scan, so that the benchmark's
// own clients, which a real deployment would not have on its machine, take
// as little CPU as possible from oplab.
const probeEvery = 100

// read decodes every frame (a JSON array of messages) until the connection
// closes, recording each controller step's delay since it was emitted
// (Step.Time, stamped by the controller's tracer as it called Emit).
func (v *viewer) read() {
	var buf bytes.Buffer
	var batch []wireMessage
	for {
		_, r, err := v.conn.NextReader()
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		now := time.Now()
		batch = batch[:0]
		if v.probe {
			err = json.Unmarshal(buf.Bytes(), &batch)
		} else {
			batch, err = scanBatch(buf.Bytes(), batch)
		}
		if err != nil {
			v.broken = true
			return
		}
		v.frames++
		v.bytes += int64(buf.Len())
		v.msgs += int64(len(batch))
		for _, m := range batch {
			if m.Type != stream.TypeState && m.Type != stream.TypeReset && m.Type != stream.TypeDropped && m.Time.UnixNano() >= v.from.Load() {
				v.delays.add(now.Sub(m.Time))
				v.steps.Add(1)
			}
		}
	}
}

// scanBatch reads the time and type of each message of a frame without
// decoding the rest: the stream writes seq, time and type first, so the
// first "time" and "type" keys of each message are its own.
func scanBatch(data []byte, out []wireMessage) ([]wireMessage, error) {
	data = bytes.TrimSpace(data)
	if len(data) < 2 || data[0] != '[' || data[len(data)-1] != ']' {
		return out, errors.New("frame: not a JSON array")
	}
	rest := bytes.TrimSpace(data[1 : len(data)-1])
	for len(rest) > 0 {
		end, err := objectEnd(rest)
		if err != nil {
			return out, err
		}
		m, err := scanMessage(rest[:end])
		if err != nil {
			return out, err
		}
		out = append(out, m)
		rest = bytes.TrimSpace(rest[end:])
		rest = bytes.TrimSpace(bytes.TrimPrefix(rest, []byte(",")))
	}
	return out, nil
}

// objectEnd returns the length of the JSON object data starts with.
func objectEnd(data []byte) (int, error) {
	if data[0] != '{' {
		return 0, fmt.Errorf("frame: want a message object, got %q", data[:min(len(data), 20)])
	}
	depth, inString := 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, errors.New("frame: unterminated message object")
}

func scanMessage(obj []byte) (wireMessage, error) {
	ts, err := stringField(obj, `"time":"`)
	if err != nil {
		return wireMessage{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return wireMessage{}, fmt.Errorf("frame: message time: %w", err)
	}
	typ, err := stringField(obj, `"type":"`)
	if err != nil {
		return wireMessage{}, err
	}
	return wireMessage{Time: t, Type: controller.StepType(typ)}, nil
}

func stringField(obj []byte, key string) ([]byte, error) {
	i := bytes.Index(obj, []byte(key))
	if i < 0 {
		return nil, fmt.Errorf("frame: message without %s", strings.Trim(key, `":`))
	}
	v := obj[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return nil, fmt.Errorf("frame: unterminated %s", strings.Trim(key, `":`))
	}
	return v[:j], nil
}

// behind counts the viewers that have received fewer than steps
// controller steps.
func (vs *viewerSet) behind(steps int64) (int, error) {
	n := 0
	for _, v := range vs.viewers {
		if v != nil && v.steps.Load() < steps {
			n++
		}
	}
	return n, nil
}

// close closes every connection and waits for the readers.
func (vs *viewerSet) close() {
	for _, v := range vs.viewers {
		if v != nil {
			_ = v.conn.Close()
		}
	}
	vs.wg.Wait()
}

// totals closes the viewers and sums what they received: frames and
// messages per viewer, and the merged delays.
func (vs *viewerSet) totals() (viewerTotals, error) {
	vs.close()
	if len(vs.viewers) == 0 {
		return viewerTotals{}, nil
	}
	t := viewerTotals{CPU: cpuTime() - vs.cpu0}
	var h histogram
	for _, v := range vs.viewers {
		t.Frames += float64(v.frames)
		t.Bytes += float64(v.bytes)
		t.Msgs += float64(v.msgs)
		h.merge(&v.delays)
		if v.broken {
			t.Broken++
		}
	}
	n := float64(len(vs.viewers))
	t.Frames, t.Msgs, t.Bytes, t.Counts, t.Total = t.Frames/n, t.Msgs/n, t.Bytes/n, h.counts[:], h.total
	return t, nil
}

// histogram counts durations in logarithmic buckets 5% wide from 10µs up to
// about 20 minutes: quantiles are off by at most 5%, and each viewer keeps
// 3 KiB instead of every sample.
type histogram struct {
	counts [histBuckets]uint32
	total  uint64
}

const (
	histBase    = 10 * time.Microsecond
	histGrowth  = 1.05
	histBuckets = 384
)

func (h *histogram) add(d time.Duration) {
	i := 0
	if d > histBase {
		i = min(histBuckets-1, int(math.Log(float64(d)/float64(histBase))/math.Log(histGrowth))+1)
	}
	h.counts[i]++
	h.total++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// quantile returns the upper bound of the bucket holding the q-quantile.
func (h *histogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	var seen uint64
	for i, c := range h.counts {
		seen += uint64(c)
		if seen >= rank {
			return time.Duration(float64(histBase) * math.Pow(histGrowth, float64(i)))
		}
	}
	return time.Duration(float64(histBase) * math.Pow(histGrowth, histBuckets))
}

// sampler records the process's peak memory every 200ms until stopped.
type sampler struct {
	stopc                chan struct{}
	done                 chan struct{}
	heap, sys, rss, runs uint64 // owned by the sampling goroutine until done
}

func startSampling() *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.heap, s.sys, s.rss = max(s.heap, m.HeapInuse), max(s.sys, m.Sys), max(s.rss, vmRSS())
}

// stop returns the peaks: HeapInuse, Sys and VmRSS, in bytes.
func (s *sampler) stop() (heap, sys, rss uint64) {
	close(s.stopc)
	<-s.done
	return s.heap, s.sys, s.rss
}

// vmRSS reads the resident set size from /proc/self/status (0 if unknown).
func vmRSS() uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitUntil polls cond until it holds, failing the benchmark when ctx ends.
func waitUntil(b *testing.B, what string, ctx context.Context, cond func() bool) {
	b.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			b.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// printPhases prints the table and reports the headline metrics: the
// throughput ratio is against the mean of the two phases without viewers.
func printPhases(b *testing.B, dbs int, rs []phaseResult) {
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\n%d Databases\tviewers\tall Ready\tDB/s\tsteps\tCPU\tframes/viewer\tmsgs/viewer\tMiB/viewer\tcaught up after\tdelay p50\tp99\tmax≤\tlagging\tbroken\tdropped viewers\tdropped steps\theap inuse\tsys\tRSS\tviewers' CPU\tviewers' RSS\t\n", dbs)
	for i, r := range rs {
		name := fmt.Sprintf("phase %d", i)
		if i == 0 {
			name = "warm-up"
		}
		fmt.Fprintf(w, "%s\t%d\t%.2fs\t%.1f\t%d\t%.1fs\t%.0f\t%.0f\t%.2f\t%.2fs\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.0fMiB\t%.0fMiB\t%.0fMiB\t%.1fs\t%.0fMiB\t\n",
			name, r.viewers, r.took.Seconds(), float64(dbs)/r.took.Seconds(), r.steps, r.cpu.Seconds(), r.frames, r.msgs, r.bytes/(1<<20), r.drain.Seconds(),
			fmtDelay(r.delays, 0.5), fmtDelay(r.delays, 0.99), fmtDelay(r.delays, 1), r.lagging, r.broken,
			r.droppedClients, r.droppedSteps, mib(r.heapInuse), mib(r.sys), mib(r.rss), r.viewerCPU.Seconds(), mib(r.viewerRSS))
	}
	_ = w.Flush()
	without := (rs[1].took.Seconds() + rs[3].took.Seconds()) / 2
	with := rs[2]
	ratio := without / with.took.Seconds()
	fmt.Printf("throughput with %d viewers / without = %.3f (vs phase 1 alone %.3f, phase 3 alone %.3f; noise between the two without: %.1f%%; target ≥ 0.95)\n\n",
		with.viewers, ratio, rs[1].took.Seconds()/with.took.Seconds(), rs[3].took.Seconds()/with.took.Seconds(),
		100*math.Abs(rs[1].took.Seconds()-rs[3].took.Seconds())/without)
	b.ReportMetric(without, "without-s")
	b.ReportMetric(with.took.Seconds(), "with-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(with.delays.quantile(0.5).Seconds()*1000, "p50-ms")
	b.ReportMetric(with.delays.quantile(0.99).Seconds()*1000, "p99-ms")
	b.ReportMetric(mib(with.rss), "rss-MiB")
}

func fmtDelay(h *histogram, q float64) string {
	if h == nil || h.total == 0 {
		return "-"
	}
	return h.quantile(q).Round(100 * time.Microsecond).String()
}

// Environment of the viewers' child process.
const (
	childURLEnv     = "OPLAB_BENCH_VIEWERS_URL"
	childViewersEnv = "OPLAB_BENCH_VIEWERS"
	childPrefix     = "VIEWERS "
)

// viewerProc is the viewers' child process, driven over its stdin and
// stdout one line at a time.
type viewerProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	closed bool
}

// startViewerProc starts this test binary again as TestViewersChild, which
// connects n viewers to url, and waits until they are connected.
func startViewerProc(ctx context.Context, url string, n int) (*viewerProc, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestViewersChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childURLEnv+"="+url, childViewersEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("viewer process stdin: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("viewer process stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the viewer process: %w", err)
	}
	p := &viewerProc{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	p.out.Buffer(make([]byte, 64<<10), 1<<20)
	if _, err := p.reply(); err != nil {
		p.close()
		return nil, fmt.Errorf("connect %d viewers: %w", n, err)
	}
	return p, nil
}

// reply returns the child's next protocol line, skipping the test
// framework's own output.
func (p *viewerProc) reply() (string, error) {
	for p.out.Scan() {
		if line, ok := strings.CutPrefix(p.out.Text(), childPrefix); ok {
			if msg, failed := strings.CutPrefix(line, "error "); failed {
				return "", errors.New(msg)
			}
			return line, nil
		}
	}
	return "", fmt.Errorf("the viewer process ended: %v", p.out.Err())
}

func (p *viewerProc) do(cmd string) (string, error) {
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		return "", fmt.Errorf("viewer process: %s: %w", cmd, err)
	}
	return p.reply()
}

func (p *viewerProc) start(t time.Time) error {
	_, err := p.do(fmt.Sprintf("start %d", t.UnixNano()))
	return err
}

func (p *viewerProc) behind(steps int64) (int, error) {
	line, err := p.do(fmt.Sprintf("behind %d", steps))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(line)
}

func (p *viewerProc) totals() (viewerTotals, error) {
	var t viewerTotals
	line, err := p.do("totals")
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(line), &t); err != nil {
		return t, fmt.Errorf("viewer process totals %q: %w", line, err)
	}
	p.close()
	return t, nil
}

func (p *viewerProc) close() {
	if p.closed {
		return
	}
	p.closed = true
	_ = p.in.Close() // the child returns at the end of its input
	_ = p.cmd.Wait()
}

// TestViewersChild is not a test: it is BenchmarkControllerWithViewers's
// viewer process, and skips unless started by it. It connects the viewers,
// then answers the benchmark's commands on stdin until stdin closes.
func TestViewersChild(t *testing.T) {
	url := os.Getenv(childURLEnv)
	if url == "" {
		t.Skip("only runs as BenchmarkControllerWithViewers's viewer process")
	}
	n, err := strconv.Atoi(os.Getenv(childViewersEnv))
	if err != nil {
		t.Fatalf("%s=%q: want a number of viewers", childViewersEnv, os.Getenv(childViewersEnv))
	}
	raiseFileLimit(t, n)
	say := func(format string, args ...any) { fmt.Printf(childPrefix+format+"\n", args...) }
	vs, err := connectViewers(t.Context(), url, n)
	if err != nil {
		say("error %v", err)
		return
	}
	defer vs.close()
	say("connected")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		verb, arg, _ := strings.Cut(in.Text(), " ")
		v, _ := strconv.ParseInt(arg, 10, 64)
		switch verb {
		case "start":
			_ = vs.start(time.Unix(0, v))
			say("ok")
		case "behind":
			k, _ := vs.behind(v)
			say("%d", k)
		case "totals":
			tot, _ := vs.totals()
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			tot.RSS = uint64(ru.Maxrss) << 10
			raw, _ := json.Marshal(tot)
			say("%s", raw)
		default:
			say("error unknown command %q", in.Text())
		}
	}
}

// TestScanBatchAgreesWithEncodingJSON checks the benchmark viewers' scanner
// against encoding/json on frames with nested times, escapes and states.
func TestScanBatchAgreesWithEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 11, 0, 0, 123456789, time.UTC)
	msgs := []stream.Message{
		{Step: controller.Step{Seq: 1, Time: at, Type: controller.StepAction, Object: controller.ObjectRef{Kind: "Database", Name: "a"}, Message: `quote " brace } bracket ] "time":"x"`}},
		{Step: controller.Step{Seq: 2, Time: at.Add(time.Second), Type: stream.TypeState, Object: controller.ObjectRef{Kind: "Database", Name: "a"}},
			State: json.RawMessage(`{"time":"2000-01-01T00:00:00Z","type":"nested","list":[{"a":"\"}\\"}]}`)},
	}
	frame, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var want []wireMessage
	if err := json.Unmarshal(frame, &want); err != nil {
		t.Fatal(err)
	}
	got, err := scanBatch(frame, nil)
	if err != nil {
		t.Fatalf("scanBatch(%s): %v", frame, err)
	}
	if len(got) != len(want) {
		t.Fatalf("scanBatch found %d messages; want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) || got[i].Type != want[i].Type {
			t.Errorf("message %d = %+v; want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{``, `{}`, `[{"seq":1}]`, `[{"time":"yesterday","type":"x"}]`, `[{"time":"2026-11-30T11:00:00Z"`} {
		if _, err := scanBatch([]byte(bad), nil); err == nil {
			t.Errorf("scanBatch(%q) = nil error; want one", bad)
		}
	}
}
