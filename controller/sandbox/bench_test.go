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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

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

// BenchmarkNeighbours: 20 learners' sandboxes reconciling at once (oplab's
// reconciler, fake client), first all well behaved, then with one running
// `for {}` and one allocating without bound in place of two of them,
// retried as the controller retries a failed reconcile (its per-item
// exponential backoff, controller/tracing.go), then retried at once after
// each failure (worse than any work queue allows). It prints the 18
// others' reconcile latency in each phase and the parent's RSS: the bad
// two must cost the others little, and the parent nothing.
func BenchmarkNeighbours(b *testing.B) {
	const learners, rounds = 20, 30
	good := starters.Source("oplab")
	spin := learner("", "\tfor {\n\t}")
	alloc := learner("", "\tvar keep [][]byte\n\tfor {\n\t\tkeep = append(keep, make([]byte, 1<<20))\n\t}")
	phase := func(bad, backoff bool) []time.Duration {
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for i := range learners {
			src := good
			if bad && i == 0 {
				src = spin
			} else if bad && i == 1 {
				src = alloc
			}
			s := &Sandbox{Command: testSandboxCommand}
			if serr := s.Compile(context.Background(), src); serr != nil {
				b.Fatal(serr)
			}
			db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "learner", Name: "shop", UID: "0123456789", Finalizers: []string{controller.Finalizer}}}
			c := fakeClient(db)
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				defer s.Close()
				if src != good {
					// The bad learner reconciles until the good ones are done.
					retry := workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)
					for {
						wait := time.Duration(0)
						if _, err := s.Reconcile(context.Background(), c, req); err != nil && backoff {
							wait = retry.When("bad")
						}
						select {
						case <-stop:
							return
						case <-time.After(wait):
						}
					}
				}
				for range rounds {
					began := time.Now()
					if _, err := s.Reconcile(context.Background(), c, req); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					all = append(all, time.Since(began))
					mu.Unlock()
				}
			}(i)
		}
		// Wait for the good ones: they are all but the bad two.
		for {
			mu.Lock()
			n := len(all)
			mu.Unlock()
			want := learners * rounds
			if bad {
				want = (learners - 2) * rounds
			}
			if n >= want || b.Failed() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		return all
	}
	for b.Loop() {
		rss0 := rssKiB()
		calm := phase(false, false)
		percentiles(b, "calm", calm)
		rss1 := rssKiB()
		percentiles(b, "with-spin-and-alloc-backoff", phase(true, true))
		percentiles(b, "with-spin-and-alloc-at-once", phase(true, false))
		rss2 := rssKiB()
		fmt.Printf("parent RSS: %d MiB before, %d after the calm phase, %d after the bad one\n", rss0>>10, rss1>>10, rss2>>10)
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
