package tester

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

var (
	batteryStarters = flag.String("battery-starters", "oplab,pitfall-create,pitfall-status,pitfall-finalizer", "BenchmarkBattery: the starters to test, comma-separated")
	testers         = flag.Int("testers", 20, "BenchmarkNeighboursWhileTesting: learners testing at once")
	rounds          = flag.Int("rounds", 3, "BenchmarkNeighboursWhileTesting: calm and busy phases, in turn")
	testSlots       = flag.Int("test-slots", 8, "the server's cap of schedules running at once, over every test (web/code's)")
)

// percentile is the q-th percentile of d.
func percentile(d []time.Duration, q int) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[min(len(d)-1, len(d)*q/100)]
}

// BenchmarkBattery runs the whole battery on each starter -benchtime
// times and prints its time p50/p99 and the schedules explored.
func BenchmarkBattery(b *testing.B) {
	for _, id := range splitComma(*batteryStarters) {
		b.Run(id, func(b *testing.B) {
			var took []time.Duration
			schedules, findings := 0, 0
			for b.Loop() {
				opts := testOptions(b, starters.Source(id))
				// The server's cap on /code (web/code), not the tests' own.
				opts.Slots = make(chan struct{}, *testSlots)
				var compiles atomic.Int64
				compile := opts.Compile
				opts.Compile = func(ctx context.Context) (Code, error) { compiles.Add(1); return compile(ctx) }
				res, err := Run(context.Background(), opts)
				fmt.Printf("  %d sandbox children started\n", compiles.Load())
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, res.Took)
				schedules, findings = res.Schedules, len(res.Findings)
				for _, f := range res.Findings {
					fmt.Printf("  finding %s (schedule %d, %s): %s\n", f.Pattern, f.Schedule, f.Perturbation, f.Message)
				}
			}
			b.ReportMetric(percentile(took, 50).Seconds(), "battery-p50-s")
			b.ReportMetric(percentile(took, 99).Seconds(), "battery-p99-s")
			b.ReportMetric(float64(schedules), "schedules")
			fmt.Printf("starter %s: %d runs, battery p50 %s p99 %s, %d schedules, %d findings\n", id, len(took),
				percentile(took, 50).Round(100*time.Millisecond), percentile(took, 99).Round(100*time.Millisecond), schedules, findings)
		})
	}
}

func splitComma(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// BenchmarkNeighboursWhileTesting: -testers learners test their code at
// once (-test-slots schedules at a time over all of them, the server's cap
// on /code), while oplab's controller makes a batch of Databases Ready and
// two other learners' own code reconciles theirs. Calm and busy phases
// alternate for -rounds rounds (the machine's own noise falls on both);
// it prints those learners' reconcile latency and the controller's batch
// time, calm and while testing, as median calm/testing ratios (1 = no
// cost; the target is at least 0.9).
func BenchmarkNeighboursWhileTesting(b *testing.B) {
	const batch, learners = 20, 2
	cl := shared.Get(b)
	ctx := context.Background()
	c, err := client.New(cl.Config(), client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	mk := func(prefix string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: map[string]string{"oplab.dev/lab": "true"}}}
		if err := c.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		return ns.Name
	}
	ctl := mk("nb-ctl-")
	var mine []string
	for range learners {
		mine = append(mine, mk("nb-learner-"))
	}
	lat := &latencies{of: map[string]bool{}}
	for _, ns := range mine {
		lat.of[ns] = true
	}
	opts := controller.DefaultOptions()
	opts.Sink, opts.Namespaces, opts.ResyncPeriod = lat, append([]string{ctl}, mine...), 2*time.Second
	r := controller.NewRunner(cl.Config(), opts)
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Stop() })
	for i, ns := range mine {
		s := &sandbox.Sandbox{Command: func() *exec.Cmd { return exec.Command(os.Args[0], sandbox.ChildArg) }}
		if serr := s.Compile(ctx, starters.Source("oplab")); serr != nil {
			b.Fatal(serr)
		}
		b.Cleanup(s.Close)
		if err := r.GrantCode(ctx, ns); err != nil {
			b.Fatal(err)
		}
		r.HandOver(ns, s)
		// A Database each, scaled up and down over and over: a steady
		// stream of the learner's own reconciles to time.
		if err := c.Create(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("mine-%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	stopScaling := make(chan struct{})
	var scaling sync.WaitGroup
	for i, ns := range mine {
		scaling.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stopScaling:
					return
				case <-time.After(300 * time.Millisecond):
				}
				db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("mine-%d", i)}}
				_ = c.Patch(ctx, db, client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+n%2))))
			}
		})
	}
	defer func() { close(stopScaling); scaling.Wait() }()

	controllerBatch := func(phase int) time.Duration {
		began := time.Now()
		for i := range batch {
			if err := c.Create(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ctl, Name: fmt.Sprintf("p%d-%d", phase, i)}}); err != nil {
				b.Fatal(err)
			}
		}
		var took time.Duration
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
			var list dbv1.DatabaseList
			if err := c.List(ctx, &list, client.InNamespace(ctl)); err != nil {
				return false, err
			}
			ready := 0
			for _, db := range list.Items {
				if meta.IsStatusConditionTrue(db.Status.Conditions, "Ready") && db.Status.ObservedGeneration == db.Generation {
					ready++
				}
			}
			took = time.Since(began)
			return ready == batch, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.DeleteAllOf(ctx, &dbv1.Database{}, client.InNamespace(ctl)); err != nil {
			b.Fatal(err)
		}
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
			var list dbv1.DatabaseList
			err := c.List(ctx, &list, client.InNamespace(ctl))
			return err == nil && len(list.Items) == 0, err
		})
		return took
	}
	type figures struct {
		p50, p99, batch time.Duration
	}
	// phase times the learners' reconciles and two of the controller's
	// batches, with -testers tests under way (busy) or none (calm).
	phase := func(n int, busy bool) figures {
		var running sync.WaitGroup
		cancel := func() {}
		if busy {
			var tctx context.Context
			tctx, cancel = context.WithCancel(ctx)
			slots := make(chan struct{}, *testSlots)
			for range *testers {
				// Each learner tests again as soon as a test ends, so the
				// whole phase is under load.
				running.Go(func() {
					for tctx.Err() == nil {
						opts := testOptions(b, starters.Source("oplab"))
						opts.Slots = slots
						_, _ = Run(tctx, opts)
					}
				})
			}
			// The tests under way before the clock starts.
			time.Sleep(5 * time.Second)
		}
		lat.reset()
		took := min(controllerBatch(2*n), controllerBatch(2*n+1))
		time.Sleep(5 * time.Second) // the learners' reconciles keep coming
		d := lat.get()
		cancel()
		running.Wait()
		if len(d) == 0 {
			b.Fatal("no reconcile of the learners' code was timed")
		}
		return figures{p50: percentile(d, 50), p99: percentile(d, 99), batch: took}
	}
	median := func(fs []figures, f func(figures) time.Duration) time.Duration {
		var d []time.Duration
		for _, x := range fs {
			d = append(d, f(x))
		}
		return percentile(d, 50)
	}
	for b.Loop() {
		// Calm and busy phases in turn, -rounds of each: the machine's
		// own drift (other work on a shared host) falls on both alike.
		var calm, busy []figures
		for i := range *rounds {
			calm = append(calm, phase(2*i, false))
			busy = append(busy, phase(2*i+1, true))
			fmt.Printf("  round %d: learners p50 calm %s busy %s, p99 calm %s busy %s; controller calm %s busy %s\n", i+1,
				calm[i].p50.Round(100*time.Microsecond), busy[i].p50.Round(100*time.Microsecond),
				calm[i].p99.Round(100*time.Microsecond), busy[i].p99.Round(100*time.Microsecond),
				calm[i].batch.Round(time.Millisecond), busy[i].batch.Round(time.Millisecond))
		}
		ratio := func(f func(figures) time.Duration) (float64, time.Duration, time.Duration) {
			c, t := median(calm, f), median(busy, f)
			return float64(c) / float64(t), c, t
		}
		r50, c50, t50 := ratio(func(f figures) time.Duration { return f.p50 })
		r99, c99, t99 := ratio(func(f figures) time.Duration { return f.p99 })
		rb, cb, tb := ratio(func(f figures) time.Duration { return f.batch })
		fmt.Printf("%d learners testing (%d schedules at once), medians of %d rounds: other learners' reconciles p50 %s (calm %s) = %.2fx, "+
			"p99 %s (calm %s) = %.2fx; controller's %d Ready in %s (calm %s) = %.2fx\n", *testers, *testSlots, *rounds,
			t50.Round(100*time.Microsecond), c50.Round(100*time.Microsecond), r50,
			t99.Round(100*time.Microsecond), c99.Round(100*time.Microsecond), r99,
			batch, tb.Round(time.Millisecond), cb.Round(time.Millisecond), rb)
		b.ReportMetric(r50, "learners-p50-calm/testing")
		b.ReportMetric(r99, "learners-p99-calm/testing")
		b.ReportMetric(rb, "controller-calm/testing")
	}
}

// latencies keeps the durations of the learners' code's reconciles in the
// namespaces of.
type latencies struct {
	mu sync.Mutex
	of map[string]bool
	d  []time.Duration
}

func (l *latencies) Emit(s controller.Step) {
	if s.Type != controller.StepResult || !s.YourCode || !l.of[s.Object.Namespace] {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = append(l.d, s.Duration)
}

func (l *latencies) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = nil
}

func (l *latencies) get() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.d)
}
