package viewers

// The viewers of BenchmarkControllerWithViewers: a set of websocket
// clients, what they count and scan, and the child process that runs them
// so that their CPU and memory are not oplab's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/stream"
	"github.com/oplab-dev/oplab/web/stream/streamtest"
)

// viewerPool is a phase's viewers, in this process or in a child.
type viewerPool interface {
	// start says the measure began at t: steps stamped earlier, such as
	// the history sent on connecting, are not counted, nor anything
	// received before.
	start(t time.Time) error
	// behind says how far the viewers got: the measuring viewers against
	// steps steps, every viewer against each frames.
	behind(steps, each int64) (progress, error)
	// totals disconnects the viewers and sums what they received.
	totals() (viewerTotals, error)
	close()
}

// progress is how far a pool's viewers got since the start.
type progress struct {
	Lagging int   // measuring viewers that received fewer steps than were emitted
	Behind  int   // viewers that received fewer frames than their share
	Frames  int64 // frames all viewers received
	Missing int64 // frames queued that no viewer has received (set by the benchmark)
}

// caughtUp says whether every viewer has everything it was sent.
func (p progress) caughtUp() bool { return p.Lagging == 0 && p.Behind == 0 && p.Missing == 0 }

// viewerTotals is what a pool's viewers received since the start, as the
// child reports it.
type viewerTotals struct {
	Viewers, Measured int
	Frames, Wire      float64 // per viewer, on average; Wire in bytes off the socket
	// Per measuring viewer, on average: messages, inflated JSON bytes and
	// their bytes off the socket, for the compression ratio.
	Msgs, JSON, MeasuredWire float64
	Counts                   []uint32
	Total                    uint64
	CPU                      time.Duration // since start
	RSS                      uint64        // peak, bytes; 0 in-process
	Broken                   int           // measuring viewers that got a frame they could not decode
}

func (t viewerTotals) histogram() *histogram {
	h := &histogram{total: t.Total}
	copy(h.counts[:], t.Counts)
	return h
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

// viewer is one websocket client. Its reader goroutine owns broken and the
// histogram until close has waited for it; the counters are read live.
type viewer struct {
	conn     *websocket.Conn
	role     role
	from     *atomic.Int64
	broken   bool // a frame did not decode; the viewer stopped reading
	delays   histogram
	steps    atomic.Int64 // steps received since the start, the controller's or the feed's (measuring viewers)
	frames   atomic.Int64
	msgs     atomic.Int64 // messages, counted by measuring viewers only
	inflated atomic.Int64 // bytes of JSON, counted by measuring viewers only
	wire     atomic.Int64 // bytes read off the socket, counted by wireConn
	at0      tally        // the counters when the measure started
}

// role is what a viewer does with the frames it receives.
type role uint8

const (
	// roleSkim counts frames without inflating them: the load generator's
	// own CPU is CPU the controller does not get on this machine.
	roleSkim role = iota
	// roleScan inflates and scans every frame, recording each step's delay.
	roleScan
	// roleProbe is roleScan decoding with encoding/json, as a check on the scanner.
	roleProbe
)

// probeEvery picks which measuring viewers probe.
const probeEvery = 10

// roles gives measure of n viewers, spread evenly over them (the k-th is
// viewer k·n/measure), roleScan, every probeEvery-th of those roleProbe; the
// others roleSkim.
func roles(n, measure int) []role {
	rs := make([]role, n)
	measure = max(0, min(measure, n))
	for k := range measure {
		r := roleScan
		if k%probeEvery == 0 {
			r = roleProbe
		}
		rs[k*n/measure] = r // distinct, since n ≥ measure
	}
	return rs
}

// tally is a viewer's counters at one moment.
type tally struct{ frames, msgs, inflated, wire int64 }

func (v *viewer) tally() tally {
	return tally{v.frames.Load(), v.msgs.Load(), v.inflated.Load(), v.wire.Load()}
}

func (t tally) sub(o tally) tally {
	return tally{t.frames - o.frames, t.msgs - o.msgs, t.inflated - o.inflated, t.wire - o.wire}
}

// connectViewers dials n viewers at url, 64 at a time, measure of them
// measuring (see roles), and starts a reader per connection that drains it
// continuously.
func connectViewers(ctx context.Context, url string, n, measure int) (*viewerSet, error) {
	vs := &viewerSet{viewers: make([]*viewer, n)}
	vs.from.Store(math.MaxInt64) // nothing counts until start
	rs := roles(n, measure)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range min(64, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				v := &viewer{role: rs[i], from: &vs.from}
				conn, err := dialViewer(ctx, url, &v.wire)
				if err != nil {
					errs <- fmt.Errorf("connect viewer %d: %w", i, err)
					return
				}
				v.conn = conn
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

// dialViewer connects one viewer, counting the bytes it reads into wire.
func dialViewer(ctx context.Context, url string, wire *atomic.Int64) (*websocket.Conn, error) {
	conn, _, err := streamtest.Dial(ctx, url, wire)
	return conn, err
}

// start snapshots every viewer's counters, so totals and behind count only
// what arrives from now on.
func (vs *viewerSet) start(t time.Time) error {
	vs.cpu0 = cpuTime()
	for _, v := range vs.viewers {
		v.at0 = v.tally()
	}
	vs.from.Store(t.UnixNano())
	return nil
}

// wireMessage is the part of a stream message a viewer needs.
type wireMessage struct {
	Time time.Time           `json:"time"`
	Type controller.StepType `json:"type"`
}

// read drains the connection until it closes, as its role says.
func (v *viewer) read() {
	if v.role == roleSkim {
		v.skim()
		return
	}
	v.scan()
}

// skim counts frames without reading them: NextReader skips the unread,
// still compressed payload of the previous frame without inflating it (and
// answers pings on the way), so a skimming viewer costs little more than
// its socket reads.
func (v *viewer) skim() {
	for {
		if _, _, err := v.conn.NextReader(); err != nil {
			return
		}
		v.frames.Add(1)
	}
}

// scan inflates and scans every frame (a JSON array of messages) until the
// connection closes, recording each step's delay since it was emitted
// (Step.Time, stamped by the controller's tracer, or the feed, as it called
// Emit).
func (v *viewer) scan() {
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
		if batch, err = v.decode(buf.Bytes(), batch[:0]); err != nil {
			v.broken = true
			return
		}
		v.frames.Add(1)
		v.inflated.Add(int64(buf.Len()))
		v.msgs.Add(int64(len(batch)))
		from := v.from.Load()
		for _, m := range batch {
			if m.Type != trace.TypeState && m.Type != trace.TypeReset && m.Type != trace.TypeDropped && m.Time.UnixNano() >= from {
				v.delays.add(now.Sub(m.Time))
				v.steps.Add(1)
			}
		}
	}
}

func (v *viewer) decode(frame []byte, batch []wireMessage) ([]wireMessage, error) {
	if v.role == roleProbe {
		err := json.Unmarshal(frame, &batch)
		return batch, err
	}
	return scanBatch(frame, batch)
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

// behind counts, since the start, the measuring viewers that received
// fewer than steps steps, the viewers that received fewer than
// each frames, and the frames received in all.
func (vs *viewerSet) behind(steps, each int64) (progress, error) {
	var p progress
	for _, v := range vs.viewers {
		got := v.frames.Load() - v.at0.frames
		p.Frames += got
		if got < each {
			p.Behind++
		}
		if v.role != roleSkim && v.steps.Load() < steps {
			p.Lagging++
		}
	}
	return p, nil
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

// totals closes the viewers and sums what they received since the start:
// frames and wire bytes over all viewers, messages, JSON and delays over
// the measuring ones.
func (vs *viewerSet) totals() (viewerTotals, error) {
	vs.close()
	if len(vs.viewers) == 0 {
		return viewerTotals{}, nil
	}
	t := viewerTotals{Viewers: len(vs.viewers), CPU: cpuTime() - vs.cpu0}
	var all, measured tally
	var h histogram
	for _, v := range vs.viewers {
		got := v.tally().sub(v.at0)
		all.frames += got.frames
		all.wire += got.wire
		if v.role == roleSkim {
			continue
		}
		t.Measured++
		measured.msgs += got.msgs
		measured.inflated += got.inflated
		measured.wire += got.wire
		h.merge(&v.delays)
		if v.broken {
			t.Broken++
		}
	}
	n, m := float64(t.Viewers), float64(max(1, t.Measured))
	t.Frames, t.Wire = float64(all.frames)/n, float64(all.wire)/n
	t.Msgs, t.JSON, t.MeasuredWire = float64(measured.msgs)/m, float64(measured.inflated)/m, float64(measured.wire)/m
	t.Counts, t.Total = h.counts[:], h.total
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

// Environment of the viewers' child process.
const (
	childURLEnv     = "OPLAB_BENCH_VIEWERS_URL"
	childViewersEnv = "OPLAB_BENCH_VIEWERS"
	childMeasureEnv = "OPLAB_BENCH_MEASURE"
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
// connects n viewers to url, measure of them measuring, and waits until
// they are connected.
func startViewerProc(ctx context.Context, url string, n, measure int) (*viewerProc, error) {
	cmd := streamtest.Command(ctx, *benchViewerNice, os.Args[0], "-test.run=^TestViewersChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childURLEnv+"="+url, childViewersEnv+"="+strconv.Itoa(n), childMeasureEnv+"="+strconv.Itoa(measure))
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

func (p *viewerProc) behind(steps, each int64) (progress, error) {
	var pr progress
	err := p.ask(fmt.Sprintf("behind %d %d", steps, each), &pr)
	return pr, err
}

func (p *viewerProc) totals() (viewerTotals, error) {
	var t viewerTotals
	if err := p.ask("totals", &t); err != nil {
		return t, err
	}
	p.close()
	return t, nil
}

// ask sends cmd and decodes the child's JSON reply into v.
func (p *viewerProc) ask(cmd string, v any) error {
	line, err := p.do(cmd)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		return fmt.Errorf("viewer process: %s: reply %q: %w", cmd, line, err)
	}
	return nil
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
	measure, err := strconv.Atoi(os.Getenv(childMeasureEnv))
	if err != nil {
		t.Fatalf("%s=%q: want a number of measuring viewers", childMeasureEnv, os.Getenv(childMeasureEnv))
	}
	raiseFileLimit(t, n)
	say := func(format string, args ...any) { fmt.Printf(childPrefix+format+"\n", args...) }
	vs, err := connectViewers(t.Context(), url, n, measure)
	if err != nil {
		say("error %v", err)
		return
	}
	defer vs.close()
	say("connected")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		reply, err := vs.answer(in.Text())
		if err != nil {
			say("error %v", err)
			continue
		}
		say("%s", reply)
	}
}

// answer runs one of the benchmark's commands in the child and returns the
// reply line:
//
//	start <unix ns>          → ok
//	behind <steps> <frames>  → progress, as JSON
//	totals                   → viewerTotals, as JSON, with the process's peak RSS
func (vs *viewerSet) answer(line string) (string, error) {
	verb, args, err := parseCommand(line)
	switch {
	case err != nil:
		return "", err
	case verb == "start" && len(args) == 1:
		return "ok", vs.start(time.Unix(0, args[0]))
	case verb == "behind" && len(args) == 2:
		p, err := vs.behind(args[0], args[1])
		return jsonLine(p, err)
	case verb == "totals" && len(args) == 0:
		t, err := vs.totals()
		t.RSS = peakRSS()
		return jsonLine(t, err)
	}
	return "", fmt.Errorf("unknown command %q", line)
}

// parseCommand splits a command line into its verb and integer arguments.
func parseCommand(line string) (verb string, args []int64, err error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "", nil, errors.New("empty command")
	}
	for _, f := range fields[1:] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return "", nil, fmt.Errorf("command %q: %w", line, err)
		}
		args = append(args, v)
	}
	return fields[0], args, nil
}

func jsonLine(v any, err error) (string, error) {
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(v)
	return string(raw), err
}

// peakRSS is this process's peak resident set size, in bytes.
func peakRSS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) << 10
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

// TestScanBatchAgreesWithEncodingJSON checks the benchmark viewers' scanner
// against encoding/json on frames with nested times, escapes and states.
func TestScanBatchAgreesWithEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 11, 0, 0, 123456789, time.UTC)
	msgs := []trace.Message{
		{Step: controller.Step{Seq: 1, Time: at, Type: controller.StepAction, Object: controller.ObjectRef{Kind: "Database", Name: "a"}, Message: `quote " brace } bracket ] "time":"x"`}},
		{Step: controller.Step{Seq: 2, Time: at.Add(time.Second), Type: trace.TypeState, Object: controller.ObjectRef{Kind: "Database", Name: "a"}},
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

// TestParseCommand checks the viewer process's reading of the benchmark's
// commands.
func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		line string
		verb string
		args []int64
	}{
		{"totals", "totals", nil},
		{"start 1767000000123456789", "start", []int64{1767000000123456789}},
		{"behind 812 24", "behind", []int64{812, 24}},
		{"  behind  0   -1 ", "behind", []int64{0, -1}},
	} {
		verb, args, err := parseCommand(c.line)
		if err != nil || verb != c.verb || !slices.Equal(args, c.args) {
			t.Errorf("parseCommand(%q) = %q, %v, %v; want %q, %v", c.line, verb, args, err, c.verb, c.args)
		}
	}
	for _, bad := range []string{"", "   ", "behind 1 x", "start 1.5"} {
		if _, _, err := parseCommand(bad); err == nil {
			t.Errorf("parseCommand(%q) = nil error; want one", bad)
		}
	}
}

// TestRolesSpreadTheMeasuringViewers checks that exactly measure viewers
// measure, evenly spread, and that some of them probe.
func TestRolesSpreadTheMeasuringViewers(t *testing.T) {
	for _, c := range []struct{ n, measure, want int }{
		{2000, 50, 50}, {2000, 300, 300}, {7, 3, 3}, {10, 10, 10}, {5, 50, 5}, {5, 0, 0}, {0, 50, 0}, {5, -1, 0},
	} {
		var measuring []int
		probes := 0
		for i, r := range roles(c.n, c.measure) {
			if r != roleSkim {
				measuring = append(measuring, i)
			}
			if r == roleProbe {
				probes++
			}
		}
		if len(measuring) != c.want {
			t.Errorf("roles(%d, %d): %d measure; want %d", c.n, c.measure, len(measuring), c.want)
			continue
		}
		if c.want > 0 && probes == 0 {
			t.Errorf("roles(%d, %d): none probes", c.n, c.measure)
		}
		// Evenly: consecutive measuring viewers are ⌊n/measure⌋ or
		// ⌈n/measure⌉ apart.
		for k := 1; k < len(measuring); k++ {
			if gap := measuring[k] - measuring[k-1]; gap < c.n/c.want || gap > (c.n+c.want-1)/c.want {
				t.Errorf("roles(%d, %d): viewers %d and %d measure, %d apart", c.n, c.measure, measuring[k-1], measuring[k], gap)
			}
		}
	}
}

// TestViewerPoolCountsWhatTheRecorderQueued runs a few viewers, two of them
// measuring, against a real recorder, without a cluster: compression must be
// negotiated, the skimming viewers must count every frame queued to them,
// and the measuring ones every step.
func TestViewerPoolCountsWhatTheRecorderQueued(t *testing.T) {
	const viewers, measure, steps = 8, 2, 40
	rec := trace.NewRecorder(trace.RecorderOptions{})
	hub := stream.NewHub(rec, stream.HubOptions{})
	go rec.Run(t.Context())
	go hub.Run(t.Context())
	srv := httptest.NewServer(hub.Handler(func(*http.Request) (string, error) { return "ns", nil }))
	defer srv.Close()
	vs, err := connectViewers(t.Context(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/", viewers, measure)
	if err != nil {
		t.Fatal(err)
	}
	defer vs.close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	waitUntil(t, "the viewers to register", ctx, func() bool { return hub.Stats().Clients >= viewers })
	_ = vs.start(time.Now())
	frames0 := hub.Stats().Frames
	for i := range steps {
		rec.Emit(controller.Step{Type: controller.StepAction, Object: controller.ObjectRef{Kind: "Database", Namespace: "ns", Name: "db"},
			Message: fmt.Sprintf("step %d %s", i, strings.Repeat("compressible ", 100))}) // over 1 KiB, so compressed
		time.Sleep(2 * time.Millisecond) // several frames, not one
	}
	waitUntil(t, "the steps recorded", ctx, func() bool { return rec.Stats().Messages >= steps })
	var p progress
	var queued uint64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		queued = hub.Stats().Frames - frames0
		if p, err = awaitViewers(vs, steps, queued, viewers); err != nil {
			t.Fatal(err)
		}
		if p.caughtUp() {
			break
		}
	}
	if !p.caughtUp() || queued < viewers {
		t.Fatalf("viewers did not catch up: %+v of %d frames queued", p, queued)
	}
	tot, err := vs.totals()
	if err != nil {
		t.Fatal(err)
	}
	if tot.Measured != measure || tot.Broken != 0 || tot.Total != measure*steps || tot.Msgs != steps {
		t.Errorf("totals = %+v; want %d measuring, none broken, %d steps each", tot, measure, steps)
	}
	if tot.Frames < float64(queued)/viewers {
		t.Errorf("%.1f frames per viewer; want at least %d/%d", tot.Frames, queued, viewers)
	}
	// Compressed frames are smaller on the wire than their JSON.
	if tot.MeasuredWire <= 0 || tot.JSON <= tot.MeasuredWire || tot.Wire <= 0 {
		t.Errorf("wire %.0f B (measuring %.0f B), JSON %.0f B: want compressed frames", tot.Wire, tot.MeasuredWire, tot.JSON)
	}
}
