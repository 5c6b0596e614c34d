package controller

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

var (
	benchDBs     = flag.Int("dbs", 100, "how many Databases BenchmarkAllReady creates at once (1000 for the anchor comparison)")
	benchWorkers = flag.Int("workers", 0, "override the shipped MaxConcurrentReconciles (exploring the tuning)")
	benchQPS     = flag.Float64("qps", 0, "override the shipped client QPS (burst is twice it)")
	benchNoStock = flag.Bool("nostock", false, "skip the stock run (exploring the tuning; no ratio)")
)

// BenchmarkAllReady creates N Databases at once and measures the time until
// all are Ready, first with controller-runtime's stock settings, then with
// the shipped settings, tracing on in both. It prints the figures and their
// ratio; it asserts nothing about time. Run it once:
//
//	go test ./controller -run '^$' -bench AllReady -benchtime 1x [-dbs 1000]
func BenchmarkAllReady(b *testing.B) {
	n := *benchDBs
	var runs []benchRun
	shippedOpts := DefaultOptions()
	if *benchWorkers > 0 {
		shippedOpts.MaxConcurrentReconciles = *benchWorkers
	}
	if *benchQPS > 0 {
		shippedOpts.QPS, shippedOpts.Burst = float32(*benchQPS), int(2**benchQPS)
	}
	for range b.N {
		if *benchNoStock {
			r := measureAllReady(b, "shipped", shippedOpts, n)
			r.c.close()
			fmt.Printf("%d Databases, %d workers, QPS %.0f: all Ready in %.1fs\n", n, shippedOpts.MaxConcurrentReconciles, shippedOpts.QPS, r.took.Seconds())
			printTimeline(r)
			printWrites("shipped", n, r.before, r.after)
			return
		}
		runs = append(runs, measureAllReady(b, "stock", StockOptions(), n))
		runs = append(runs, measureAllReady(b, "shipped", shippedOpts, n))
	}
	stock, shipped := runs[len(runs)-2], runs[len(runs)-1]
	for _, r := range []benchRun{stock, shipped} {
		r.c.close()
	}
	ratio := stock.took.Seconds() / shipped.took.Seconds()
	b.ReportMetric(stock.took.Seconds(), "stock-s")
	b.ReportMetric(shipped.took.Seconds(), "shipped-s")
	b.ReportMetric(ratio, "speedup")

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\n%d Databases\tQPS/burst\tworkers\tall Ready\treconciles\tcreates\tpatches\tstatus writes\tskipped writes\tsteps\tdropped\t\n", n)
	for _, r := range []benchRun{stock, shipped} {
		fmt.Fprintf(w, "%s\t%.0f/%d\t%d\t%.1fs\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.name, r.opts.QPS, r.opts.Burst,
			r.opts.MaxConcurrentReconciles, r.took.Seconds(), r.c.reconciles.Load(), r.c.creates.Load(), r.c.patches.Load(),
			r.c.statusWrites.Load(), r.c.statusSkips.Load(), r.c.steps.Load(), r.c.dropped.Load())
	}
	_ = w.Flush()
	for _, r := range []benchRun{stock, shipped} {
		printTimeline(r)
	}
	printWrites("shipped", n, shipped.before, shipped.after)
	fmt.Printf("shipped is %.1f× faster than stock (anchor, bare kubebuilder controller: 3.1× at 1,000, 3.6× at 100)\n\n", ratio)
}

// printTimeline prints when the last StatefulSet was created and when the
// Databases turned Ready, by percentile. Call it after r.c.close.
func printTimeline(r benchRun) {
	at := func(q float64) float64 {
		return r.c.readyAt[int(q*float64(len(r.c.readyAt)-1))].Sub(r.c.began).Seconds()
	}
	fmt.Printf("%-8s all StatefulSets created after %5.1fs; Ready: 10%% %5.1fs, 50%% %5.1fs, 90%% %5.1fs, 100%% %5.1fs\n", r.name,
		r.c.lastStatefulSet.Sub(r.c.began).Seconds(), at(0.1), at(0.5), at(0.9), at(1))
}

type benchRun struct {
	name          string
	opts          Options
	took          time.Duration
	c             *countingSink
	before, after map[string]float64 // the API server's write counters
}

func measureAllReady(b *testing.B, name string, opts Options, n int) benchRun {
	e := newEnv(b)
	sink := newCountingSink()
	opts.Sink = sink
	opts.Namespaces = []string{e.ns}
	r := NewRunner(e.cfg, opts)
	if err := r.Start(e.ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := r.Stop(); err != nil {
			b.Error(err)
		}
	}()

	before := apiRequests(b, e)
	began := time.Now()
	createConcurrently(b, e, n)
	polltest.Until(e.t, deadline, fmt.Sprintf("%d Databases Ready (%s)", n, name), func() (bool, error) {
		return int(sink.ready.Load()) >= n, nil
	})
	took := time.Since(began)
	sink.began = began
	after := apiRequests(b, e)

	// Check the trace's verdict against the API server's.
	var list dbv1.DatabaseList
	if err := e.c.List(e.ctx, &list); err != nil {
		b.Fatal(err)
	}
	for _, db := range list.Items {
		if db.Namespace == e.ns && !isReady(&db) {
			b.Fatalf("%s/%s is not Ready though the trace said so", db.Namespace, db.Name)
		}
	}
	return benchRun{name: name, opts: opts, took: took, c: sink, before: before, after: after}
}

// createConcurrently creates n Databases from 16 goroutines, so creation
// itself is not what is measured.
func createConcurrently(b testing.TB, e *env, n int) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				db := newDB(fmt.Sprintf("db-%04d", i), 1, "")
				db.Namespace = e.ns
				if err := e.c.Create(context.Background(), db); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("creating databases: %v", err)
	}
}

// countingSink is a tracing sink as the web recorder is: Emit never blocks,
// one goroutine owns the counting. It counts what the controller did and
// when each Database first turned Ready.
type countingSink struct {
	ch   chan Step
	done chan struct{}

	steps, dropped, reconciles, creates, patches, statusWrites, statusSkips, ready atomic.Int64

	began time.Time // set before close

	// Owned by run until done is closed.
	lastStatefulSet time.Time   // when the last StatefulSet was created
	readyAt         []time.Time // when each Database turned Ready, in order
}

func newCountingSink() *countingSink {
	s := &countingSink{ch: make(chan Step, 1<<16), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *countingSink) Emit(st Step) {
	select {
	case s.ch <- st:
	default:
		s.dropped.Add(1)
	}
}

func (s *countingSink) close() {
	close(s.ch)
	<-s.done
}

func (s *countingSink) run() {
	defer close(s.done)
	seen := map[string]bool{}
	for st := range s.ch {
		s.steps.Add(1)
		switch {
		case st.Type == StepReconcileStart:
			s.reconciles.Add(1)
		case st.Type == StepAction && st.Outcome == OutcomeCreated:
			s.creates.Add(1)
			if st.Target != nil && st.Target.Kind == "StatefulSet" {
				s.lastStatefulSet = st.Time
			}
		case st.Type == StepAction && st.Outcome == OutcomeUpdated:
			s.patches.Add(1)
		case st.Type == StepFinalizer && st.Phase == "added":
			s.patches.Add(1)
		case st.Type == StepStatus && st.Skipped:
			s.statusSkips.Add(1)
		case st.Type == StepStatus:
			s.statusWrites.Add(1)
			for _, c := range st.Conditions {
				if c.Type == ConditionReady && c.To == "True" && !seen[st.Database] {
					seen[st.Database] = true
					s.readyAt = append(s.readyAt, st.Time)
					s.ready.Add(1)
				}
			}
		}
	}
}

// apiRequests reads the API server's request counter, summed by verb and
// resource, so the benchmark can say where the cluster's work went.
func apiRequests(tb testing.TB, e *env) map[string]float64 {
	tb.Helper()
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(e.ctx)
	if err != nil {
		tb.Fatalf("scraping the API server's metrics: %v", err)
	}
	out := map[string]float64{}
	line := regexp.MustCompile(`^apiserver_request_total\{(.*)\} (\S+)$`)
	label := regexp.MustCompile(`(resource|subresource|verb)="([^"]*)"`)
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range label.FindAllStringSubmatch(m[1], -1) {
			l[kv[1]] = kv[2]
		}
		if l["verb"] == "GET" || l["verb"] == "LIST" || l["verb"] == "WATCH" {
			continue // writes are what costs; reads here are the informers' start
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[key] += v
	}
	return out
}

// printWrites prints the API writes per Database during a run, largest first.
func printWrites(name string, n int, before, after map[string]float64) {
	type kv struct {
		k string
		v float64
	}
	var rows []kv
	total := 0.0
	for k, v := range after {
		if d := v - before[k]; d >= float64(n)/2 {
			rows = append(rows, kv{k, d})
			total += d
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].v > rows[j].v || rows[i].v == rows[j].v && rows[i].k < rows[j].k })
	fmt.Printf("%s: API writes per Database (whole cluster, %.1f in all):", name, total/float64(n))
	for _, r := range rows {
		fmt.Printf(" %s %.1f;", r.k, r.v/float64(n))
	}
	fmt.Println()
}
