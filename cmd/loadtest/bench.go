package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/stream"
	"github.com/oplab-dev/oplab/web/stream/streamtest"
)

// settle is the pause before each phase.
const settle = 1500 * time.Millisecond

// bench runs the measured phases against one oplab (this process).
type bench struct {
	cfg config
	rec *trace.Recorder
	// streamHub streams rec; hub is the plain chat hub it is compared with.
	streamHub *stream.Hub
	hub       *plainHub
	out       io.Writer
	viewers   *viewerProc
	ns        int
	seq       atomic.Uint64 // the plain hub's seq
}

// measure connects n viewers to url and measures the design without and
// with the controller running.
func (b *bench) measure(design string, n int, url string, clients func() int) ([]result, error) {
	if err := b.connect(n, url, clients); err != nil {
		return nil, err
	}
	defer b.disconnect(clients)
	var rs []result
	for _, withController := range []bool{false, true} {
		r, err := b.phase(design, n, withController)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// phase emits cfg.rate steps a second for cfg.duration to the design's n
// viewers, optionally with the fake controller running, and measures.
func (b *bench) phase(design string, n int, withController bool) (result, error) {
	// Let the last phase's load die down first: the recorder judges how
	// busy the controller is over the last half second or so, and a phase
	// that began while the previous one still counted would start with
	// the busy window.
	time.Sleep(settle)
	runtime.GC()
	if _, err := b.viewers.do(request{Op: "reset"}); err != nil {
		return result{}, err
	}
	res := result{design: design, viewers: n, controller: withController}
	droppedBefore, queuedBefore := b.dropped(design), b.queued(design)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reconciles atomic.Int64
	if withController {
		wg.Add(1)
		go func() { defer wg.Done(); fakeController(b.rec, b.cfg.rounds, stop, &reconciles) }()
	}
	start, cpu0 := time.Now(), cpuTime()
	var sent int64
	if withController {
		sent = b.interleave(design, &reconciles, &res)
	} else {
		sent = b.emit(design, time.After(b.cfg.duration))
	}
	elapsed := time.Since(start)
	res.cores = (cpuTime() - cpu0).Seconds() / elapsed.Seconds()
	res.load = loadAverage()
	close(stop)
	wg.Wait()
	res.seconds = elapsed.Seconds()

	res.queued = b.queued(design) - queuedBefore
	rep, err := b.viewers.do(request{Op: "collect", Sent: sent, Queued: res.queued})
	if err != nil {
		return result{}, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.heapInuse, res.sys = ms.HeapInuse, ms.Sys
	res.expected = sent * int64(rep.Measured)
	res.p50, res.p99, res.max = rep.P50, rep.P99, rep.Max
	res.measured, res.received, res.frames, res.viewerCores = rep.Measured, rep.Received, rep.Frames, rep.Cores
	res.wire, res.decoded = rep.Wire, rep.Decoded
	res.dropped = b.dropped(design) - droppedBefore
	fmt.Fprintf(b.out, "  measured %-9s viewers=%-5d controller=%-5v sent=%d steps to %d measuring viewers: %d/%d; frames to all: %d/%d; window %v\n",
		design, n, withController, sent, res.measured, res.received, res.expected, res.frames, res.queued, b.window(design))
	return res, nil
}

// queued is how many frames the design has queued to viewers so far.
func (b *bench) queued(design string) int64 {
	if design == "plain hub" {
		return b.hub.queued.Load()
	}
	return int64(b.streamHub.Stats().Frames)
}

// window is the stream hub's coalescing window last used.
func (b *bench) window(design string) time.Duration {
	if design == "plain hub" {
		return 0
	}
	return b.streamHub.Stats().Window
}

func (b *bench) dropped(design string) int64 {
	if design == "plain hub" {
		return b.hub.dropped.Load()
	}
	return int64(b.streamHub.Stats().DroppedClients)
}

// interleave runs while the fake controller reconciles: it alternates slices
// in which the viewers are streamed to with slices in which they sit idle, so
// the controller's rate with and without the stream is measured under the
// same outside load (this machine may be busy with other work). The first
// quarter of each slice is not counted, so that a slice is not charged for
// frames still being written from the one before.
func (b *bench) interleave(design string, reconciles *atomic.Int64, res *result) int64 {
	var sent int64
	var count [2]int64
	var secs [2]float64
	end := time.Now().Add(b.cfg.duration)
	for i := 0; time.Now().Before(end); i++ {
		streaming := i%2 == 0
		k := 1
		if streaming {
			k = 0
		}
		run := func(d time.Duration) {
			if streaming {
				sent += b.emit(design, time.After(d))
				return
			}
			time.Sleep(d)
		}
		run(b.cfg.slice / 4)
		c0, t1 := reconciles.Load(), time.Now()
		run(b.cfg.slice - b.cfg.slice/4)
		count[k] += reconciles.Load() - c0
		secs[k] += time.Since(t1).Seconds()
	}
	res.reconciles = float64(count[0]) / secs[0]
	res.idleReconciles = float64(count[1]) / secs[1]
	return sent
}

// emit sends steps at cfg.rate until end fires; it returns how many.
func (b *bench) emit(design string, end <-chan time.Time) int64 {
	ns := fmt.Sprintf("bench-%d", b.ns)
	// Steps follow a schedule rather than a ticker, so a busy process
	// catches up instead of silently emitting fewer steps.
	start, every := time.Now(), time.Second/time.Duration(b.cfg.rate)
	var sent int64
	for {
		wait := time.Until(start.Add(time.Duration(sent) * every))
		select {
		case <-end:
			return sent
		case <-time.After(wait):
		}
		s := controller.Step{
			Type:        controller.StepEvent,
			Object:      controller.ObjectRef{Kind: "Database", Namespace: ns, Name: "db"},
			Event:       "update",
			Generation:  sent + 1,
			ReconcileID: "8c1f0d4e-5b7a-4f0e-9a57-3c2d1b0a9f88",
			Message:     "a typical step: the Database's spec changed, so the controller enqueued it",
		}
		switch design {
		case "plain hub":
			s.Seq = b.seq.Add(1)
			s.Time = time.Now()
			data, _ := json.Marshal([]controller.Step{s})
			b.hub.broadcast <- data
		case "stream":
			b.rec.Emit(s)
		}
		sent++
	}
}

// fakeController reconciles as fast as it can: some CPU work, then the seven
// trace steps of a reconcile, emitted to a namespace nobody watches. Emit
// must never make it wait; only CPU taken by the viewers can slow it down.
func fakeController(rec *trace.Recorder, rounds int, stop <-chan struct{}, count *atomic.Int64) {
	var buf [1024]byte
	types := []controller.StepType{controller.StepEvent, controller.StepReconcileStart, controller.StepFetch,
		controller.StepDiff, controller.StepAction, controller.StepStatus, controller.StepResult}
	obj := controller.ObjectRef{Kind: "Database", Namespace: "unwatched", Name: "db"}
	for {
		select {
		case <-stop:
			return
		default:
		}
		spin(buf[:], rounds)
		for _, t := range types {
			rec.Emit(controller.Step{Type: t, Object: obj})
		}
		count.Add(1)
	}
}

// spin is the fake reconcile's CPU work.
func spin(buf []byte, rounds int) {
	for range rounds {
		sum := sha256.Sum256(buf)
		buf[0] ^= sum[0]
	}
}

// calibrate returns how many spin rounds take about d on this machine.
func calibrate(d time.Duration) int {
	var buf [1024]byte
	const n = 20000
	start := time.Now()
	spin(buf[:], n)
	per := time.Since(start) / n
	return max(1, int(d/max(per, 1)))
}

// connect has the viewer process dial n viewers to url and waits until the
// server counts them all.
func (b *bench) connect(n int, url string, clients func() int) error {
	before := clients()
	if _, err := b.viewers.do(request{Op: "connect", N: n, Measure: b.cfg.measure, URL: url}); err != nil {
		return err
	}
	end := time.Now().Add(time.Minute)
	for clients() < before+n {
		if time.Now().After(end) {
			return fmt.Errorf("only %d of %d viewers registered", clients()-before, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (b *bench) disconnect(clients func() int) {
	if _, err := b.viewers.do(request{Op: "disconnect"}); err != nil {
		fmt.Fprintln(b.out, "loadtest: disconnecting viewers:", err)
	}
	end := time.Now().Add(30 * time.Second)
	for clients() > 0 && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
}

// viewerProc is the child process that runs the viewers.
type viewerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	enc   *json.Encoder
	dec   *json.Decoder
}

// startViewers runs this program again as the viewer process, at niceness
// nice (see streamtest.ViewerNice).
func startViewers(args []string, nice int) (*viewerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start the viewers: %w", err)
	}
	cmd := streamtest.Command(context.Background(), nice, exe, append(slices.Clone(args), "-role", "viewers")...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the viewer process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the viewer process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the viewer process: %w", err)
	}
	return &viewerProc{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), dec: json.NewDecoder(stdout)}, nil
}

// do sends one request and waits for its reply.
func (p *viewerProc) do(req request) (reply, error) {
	if err := p.enc.Encode(req); err != nil {
		return reply{}, fmt.Errorf("asking the viewer process to %s: %w", req.Op, err)
	}
	var rep reply
	if err := p.dec.Decode(&rep); err != nil {
		return reply{}, fmt.Errorf("reading the viewer process's answer to %s: %w", req.Op, err)
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("viewer process, %s: %s", req.Op, rep.Err)
	}
	return rep, nil
}

// close ends the viewer process: it exits when its stdin closes.
func (p *viewerProc) close() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
}
