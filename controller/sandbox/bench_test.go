package sandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

// percentiles reports p50 and p99 of d as metrics and prints them.
func percentiles(b *testing.B, name string, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p50, p99 := d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
	b.ReportMetric(float64(p50.Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, name+"-p99-ms")
	fmt.Printf("%s: n=%d p50=%s p99=%s\n", name, len(d), p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond))
}

// BenchmarkCompile: a fresh child started and oplab's reconciler compiled
// in it, what Run my code costs before any reconcile.
func BenchmarkCompile(b *testing.B) {
	src := starters.Source("oplab")
	var d []time.Duration
	for b.Loop() {
		s := &Sandbox{Command: testSandboxCommand}
		began := time.Now()
		if serr := s.Compile(context.Background(), src); serr != nil {
			b.Fatal(serr)
		}
		d = append(d, time.Since(began))
		s.Close()
	}
	percentiles(b, "compile", d)
}

// BenchmarkReconcileRoundTrip: one reconcile of oplab's reconciler in the
// child against a fake client (a found Database, children present), so the
// figure is the sandbox's own cost: the pipe, the JSON, the interpreter.
func BenchmarkReconcileRoundTrip(b *testing.B) {
	s := &Sandbox{Command: testSandboxCommand}
	b.Cleanup(s.Close)
	if serr := s.Compile(context.Background(), starters.Source("oplab")); serr != nil {
		b.Fatal(serr)
	}
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "learner", Name: "shop", UID: "0123456789", Finalizers: []string{controller.Finalizer}}}
	c := fakeClient(db)
	if _, err := s.Reconcile(context.Background(), c, req); err != nil {
		b.Fatal(err)
	}
	var d []time.Duration
	for b.Loop() {
		began := time.Now()
		if _, err := s.Reconcile(context.Background(), c, req); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(began))
	}
	percentiles(b, "reconcile", d)
}

// BenchmarkNeighbours is the figure for learner code that
// misbehaves: 18 learners' sandboxes reconcile at once (oplab's reconciler
// against a fake client, in a loop, so the CPU is always contended) while
// oplab's own controller, on the real cluster, makes a batch of Databases
// Ready. In the bad phases, two more learners, 20 in all, run `for {}` and
// allocate without bound, retried with the controller's per-item backoff
// (controller/trace_reconcile.go). Calm and bad phases alternate, and each bad
// phase is compared with the calm phases either side of it, so a machine
// whose speed drifts (shared, noisy) does not read as the bad code's doing.
// It prints, per bad phase, the other 18 learners' p50 and p99 latency and
// the controller's all-Ready time as calm/bad ratios (1 = no cost), and
// the parent's RSS.
func BenchmarkNeighbours(b *testing.B) {
	const learners, perLearner, batch, badPhases = 20, 30, 20, 5
	good := starters.Source("oplab")
	spin := learner("", "\tfor {\n\t}")
	alloc := learner("", "\tvar keep [][]byte\n\tfor {\n\t\tkeep = append(keep, make([]byte, 1<<20))\n\t}")

	cl := startCluster(b)
	ctx := context.Background()
	c, err := client.New(cl.Config(), client.Options{Scheme: newScheme()})
	if err != nil {
		b.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbx-neighbours-"}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	opts := controller.DefaultOptions()
	opts.Sink, opts.Namespaces = &steps{}, []string{ns.Name}
	r := controller.NewRunner(cl.Config(), opts)
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Stop() })

	// controllerBatch is oplab's own controller at work: batch new
	// Databases, timed until every one is Ready, then deleted (untimed).
	controllerBatch := func(phase int) time.Duration {
		began := time.Now()
		for i := range batch {
			db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("p%d-%d", phase, i)}}
			if err := c.Create(ctx, db); err != nil {
				b.Fatal(err)
			}
		}
		var took time.Duration
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
			var list dbv1.DatabaseList
			if err := c.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
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
		if err := c.DeleteAllOf(ctx, &dbv1.Database{}, client.InNamespace(ns.Name)); err != nil {
			b.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
			var list dbv1.DatabaseList
			err := c.List(ctx, &list, client.InNamespace(ns.Name))
			return err == nil && len(list.Items) == 0, err
		})
		if err != nil {
			b.Fatal(err)
		}
		return took
	}

	type result struct {
		lat   []time.Duration // the good learners' reconciles
		ready time.Duration   // the controller's batch
		rss   int             // the parent's RSS at the phase's end, KiB
	}
	phase := func(n int, bad bool) result {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		stop := make(chan struct{})
		measuring := make(chan struct{})
		counts := make([]int, learners)
		for i := range learners {
			src := good
			switch {
			case i > 1:
			case !bad:
				// "A run without them": the calm phase has the same 18
				// learners and no others, so the bad phase's figure is
				// what the two cost, not what two fewer learners save.
				continue
			case i == 0:
				src = spin
			default:
				src = alloc
			}
			s := &Sandbox{Command: testSandboxCommand}
			if serr := s.Compile(ctx, src); serr != nil {
				b.Fatal(serr)
			}
			db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "learner", Name: "shop", UID: "0123456789", Finalizers: []string{controller.Finalizer}}}
			fc := fakeClient(db)
			wg.Go(func() {
				defer s.Close()
				retry := workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)
				for {
					began := time.Now()
					_, err := s.Reconcile(ctx, fc, req)
					took := time.Since(began)
					wait := time.Duration(0)
					if src != good {
						if err != nil {
							wait = retry.When("bad")
						}
					} else if err != nil {
						b.Error(err)
						return
					} else {
						select {
						case <-measuring:
							mu.Lock()
							lat = append(lat, took)
							counts[i]++
							mu.Unlock()
						default:
						}
					}
					select {
					case <-stop:
						return
					case <-time.After(wait):
					}
				}
			})
		}
		// A second for every child to be running (and the bad ones to
		// have overrun once) before the clock starts.
		time.Sleep(time.Second)
		close(measuring)
		ready := controllerBatch(n)
		// Then until every good learner has perLearner reconciles.
		for {
			mu.Lock()
			enough := true
			for i, n := range counts {
				if i > 1 && n < perLearner {
					enough = false
				}
			}
			mu.Unlock()
			if enough || b.Failed() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		rss := rssKiB()
		close(stop)
		wg.Wait()
		return result{lat: lat, ready: ready, rss: rss}
	}
	p := func(d []time.Duration, q int) time.Duration {
		slices.Sort(d)
		return d[min(len(d)-1, len(d)*q/100)]
	}
	for b.Loop() {
		rss0 := rssKiB()
		// calm, bad, calm, …, bad, calm
		var res []result
		for n := range 2*badPhases + 1 {
			res = append(res, phase(n, n%2 == 1))
		}
		var p50s, p99s, readys []float64
		for n := 1; n < len(res); n += 2 {
			before, bad, after := res[n-1], res[n], res[n+1]
			ratio := func(f func(result) time.Duration) float64 {
				return (float64(f(before)) + float64(f(after))) / 2 / float64(f(bad))
			}
			r50 := ratio(func(r result) time.Duration { return p(r.lat, 50) })
			r99 := ratio(func(r result) time.Duration { return p(r.lat, 99) })
			rr := ratio(func(r result) time.Duration { return r.ready })
			fmt.Printf("bad phase %d: learners p50 %s (calm %s, %s) = %.2fx, p99 %s (calm %s, %s) = %.2fx; controller's %d Ready in %s (calm %s, %s) = %.2fx\n",
				n/2+1, p(bad.lat, 50).Round(10*time.Microsecond), p(before.lat, 50).Round(10*time.Microsecond), p(after.lat, 50).Round(10*time.Microsecond), r50,
				p(bad.lat, 99).Round(100*time.Microsecond), p(before.lat, 99).Round(100*time.Microsecond), p(after.lat, 99).Round(100*time.Microsecond), r99,
				batch, bad.ready.Round(time.Millisecond), before.ready.Round(time.Millisecond), after.ready.Round(time.Millisecond), rr)
			p50s, p99s, readys = append(p50s, r50), append(p99s, r99), append(readys, rr)
		}
		median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
		var calmRSS, badRSS int
		for n, r := range res {
			if n%2 == 1 {
				badRSS = max(badRSS, r.rss)
			} else {
				calmRSS = max(calmRSS, r.rss)
			}
		}
		b.ReportMetric(median(p50s), "p50-calm/bad")
		b.ReportMetric(median(p99s), "p99-calm/bad")
		b.ReportMetric(median(readys), "controller-calm/bad")
		fmt.Printf("median calm/bad: learners p50 %.2fx, p99 %.2fx; controller %.2fx\n", median(p50s), median(p99s), median(readys))
		fmt.Printf("parent RSS: %d MiB before, at most %d MiB at a calm phase's end, %d MiB at a bad one's\n", rss0>>10, calmRSS>>10, badRSS>>10)
	}
}

// rssKiB is this process's resident set, from /proc/self/status.
func rssKiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
