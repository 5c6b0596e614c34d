// Command loadtest measures the trace stream under load, in one bounded run
// on loopback: websocket viewers connected to one oplab, the delay from a
// step being emitted to each viewer receiving it (p50, p99), the controller's
// throughput with and without viewers, and oplab's CPU and memory. It
// compares the stream (a Recorder and its Hub) with a plain gorilla chat hub
// (the anchor design).
//
//	go run ./cmd/loadtest -viewers 500,2000 -rate 100 -duration 10s
//
// The viewers run in a child process (this program again, with -role
// viewers), as browsers run apart from oplab; both share this machine's cores.
//
// This directory holds oplab's whole load harness, apart from the product:
// nothing outside it imports it, and `make bench` runs all three parts.
//
//   - cmd/loadtest (this command): the trace stream's fan-out against a
//     plain chat hub, with a fake controller.
//   - cmd/loadtest/viewers: BenchmarkControllerWithViewers, what websocket
//     viewers cost the real controller on the real embedded cluster.
//   - cmd/loadtest/class: BenchmarkClass, what one oplab costs per learner
//     in a class, and with -worst per learner doing the worst it may.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/stream"
	"github.com/oplab-dev/oplab/web/stream/streamtest"
)

type config struct {
	viewers    []int
	rate       int
	duration   time.Duration
	slice      time.Duration
	work       time.Duration
	rounds     int // sha256 rounds that take about work, calibrated at start
	batch      time.Duration
	fullBatch  int
	measure    int
	viewerNice int
	skipHub    bool
	profile    string
	role       string
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	viewers := fs.String("viewers", "500,2000", "comma-separated viewer counts to measure")
	var c config
	fs.IntVar(&c.rate, "rate", 100, "steps emitted per second to the viewers")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of each measured phase")
	fs.DurationVar(&c.slice, "slice", time.Second, "with the controller running, alternate streaming and idle slices of this length")
	fs.DurationVar(&c.work, "work", 250*time.Microsecond, "CPU time of one fake reconcile (decode, compare, encode); 7 trace steps each")
	fs.DurationVar(&c.batch, "batch", 0, "Recorder BatchInterval (0: the default)")
	fs.IntVar(&c.fullBatch, "full-batch", 0, "Recorder FullBatchViewers (0: the default)")
	fs.IntVar(&c.viewerNice, "viewer-nice", streamtest.ViewerNice, "niceness of the viewer process (0: the same priority as oplab)")
	fs.IntVar(&c.measure, "measure", 50, "viewers that inflate and decode frames to measure delay; the rest only count frames")
	fs.BoolVar(&c.skipHub, "skip-hub", false, "skip the plain-hub baseline")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&c.role, "role", "", `"viewers" runs the viewer process (the load tool starts it itself)`)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	for _, f := range strings.Split(*viewers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return config{}, fmt.Errorf("-viewers %q: want positive integers separated by commas", *viewers)
		}
		c.viewers = append(c.viewers, n)
	}
	if c.rate <= 0 || c.rate > 100000 {
		return config{}, fmt.Errorf("-rate %d: want 1..100000 steps a second", c.rate)
	}
	if c.duration <= 0 || c.duration > 5*time.Minute {
		return config{}, fmt.Errorf("-duration %v: want more than 0 and at most 5m", c.duration)
	}
	return c, nil
}

// result is one measured phase.
type result struct {
	design        string
	viewers       int
	controller    bool // the fake controller ran during the phase
	p50, p99, max time.Duration
	measured      int     // viewers that decoded frames and measured delay
	expected      int64   // steps sent × measuring viewers
	received      int64   // steps the measuring viewers received
	dropped       int64   // viewers dropped for falling behind
	queued        int64   // frames the server queued to all viewers
	frames        int64   // frames all viewers read
	wire          int64   // bytes all viewers read off the wire
	decoded       int64   // bytes of JSON the measuring viewers decoded
	reconciles    float64 // the controller's rate while the viewers were streamed to
	// idleReconciles is its rate in the interleaved slices without stream.
	idleReconciles float64
	heapInuse      uint64
	sys            uint64
	seconds        float64
	cores          float64 // CPU time oplab's process used per second of the phase
	viewerCores    float64 // the same for the viewer process
	load           string  // the machine's load average at the end of the phase
}

func run(args []string, out io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	if err := raiseFileLimit(2*slices.Max(cfg.viewers) + 1024); err != nil {
		return err
	}
	if cfg.role == "viewers" {
		return serveViewers(os.Stdin, os.Stdout)
	}
	cfg.rounds = calibrate(cfg.work)
	if cfg.profile != "" {
		f, err := os.Create(cfg.profile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	rec := trace.NewRecorder(trace.RecorderOptions{})
	streamHub := stream.NewHub(rec, stream.HubOptions{BatchInterval: cfg.batch, FullBatchViewers: cfg.fullBatch})
	go rec.Run(ctx)
	go streamHub.Run(ctx)
	hub := newPlainHub()
	go hub.run(ctx.Done())

	mux := http.NewServeMux()
	mux.Handle("/ws", streamHub.Handler(func(r *http.Request) (string, error) { return r.URL.Query().Get("ns"), nil }))
	mux.Handle("/hub", hub)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening on loopback: %w", err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "ws://" + ln.Addr().String()

	fmt.Fprintf(out, "loadtest: %d cores, GOMAXPROCS %d, %d steps/s, %v per phase, viewers %v, fake reconcile %v (%d sha256 rounds), load average %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), cfg.rate, cfg.duration, cfg.viewers, cfg.work, cfg.rounds, loadAverage())
	viewers, err := startViewers(args, cfg.viewerNice)
	if err != nil {
		return err
	}
	defer viewers.close()
	b := &bench{cfg: cfg, rec: rec, streamHub: streamHub, hub: hub, out: out, viewers: viewers}

	// The controller alone, with the trace stream running but no viewers.
	r0, err := b.phase("none", 0, true)
	if err != nil {
		return err
	}
	results := []result{r0}
	hubClients := func() int { return int(hub.clients.Load()) }
	recClients := func() int { return streamHub.Stats().Clients }
	for _, n := range cfg.viewers {
		if !cfg.skipHub {
			rs, err := b.measure("plain hub", n, base+"/hub", hubClients)
			if err != nil {
				return err
			}
			results = append(results, rs...)
		}
		b.ns++
		ns := fmt.Sprintf("bench-%d", b.ns)
		rs, err := b.measure("stream", n, base+"/ws?ns="+ns, recClients)
		if err != nil {
			return err
		}
		results = append(results, rs...)
		rec.Forget(ns)
	}
	printResults(out, results)
	return nil
}

func raiseFileLimit(want int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-file limit: %w", err)
	}
	if lim.Cur >= uint64(want) {
		return nil
	}
	lim.Cur = min(uint64(want), lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising the open-file limit to %d: %w", want, err)
	}
	if lim.Cur < uint64(want) {
		return fmt.Errorf("open-file limit is %d (hard limit), need %d for the viewers", lim.Cur, want)
	}
	return nil
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the 1-minute load average: figures taken on a machine busy
// with other work are not comparable.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func printResults(out io.Writer, results []result) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\tviewers\tcontroller\tp50\tp99\tmax\tdelivered\tframes/s\twire MB/s\tcompression\tdropped viewers\treconciles/s streaming\tidle\tratio\toplab cores\tviewer cores\theap inuse\tsys\tload avg\t")
	for _, r := range results {
		delivered, compression := "-", "-"
		if r.expected > 0 && r.queued > 0 {
			// Both must be whole: steps to the measuring viewers, and
			// frames to every viewer.
			delivered = fmt.Sprintf("%.2f%%", 100*min(float64(r.received)/float64(r.expected), float64(r.frames)/float64(r.queued)))
		}
		if perViewer := float64(r.wire) / float64(max(r.viewers, 1)); r.decoded > 0 && perViewer > 0 {
			compression = fmt.Sprintf("%.1f×", float64(r.decoded)/float64(max(r.measured, 1))/perViewer)
		}
		ctl, recs, idle, ratio := "no", "-", "-", "-"
		if r.controller {
			ctl = "yes"
			recs = fmt.Sprintf("%.0f", r.reconciles)
			idle = fmt.Sprintf("%.0f", r.idleReconciles)
			ratio = fmt.Sprintf("%.3f×", r.reconciles/r.idleReconciles)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.1f\t%s\t%d\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t\n",
			r.design, r.viewers, ctl, ms(r.p50), ms(r.p99), ms(r.max),
			delivered, float64(r.frames)/r.seconds, float64(r.wire)/r.seconds/1e6, compression, r.dropped, recs, idle, ratio,
			r.cores, r.viewerCores, mib(r.heapInuse), mib(r.sys), r.load)
	}
	_ = tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func mib(b uint64) string { return fmt.Sprintf("%.0fMiB", float64(b)/(1<<20)) }
