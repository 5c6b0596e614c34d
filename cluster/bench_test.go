package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// BenchmarkTimeToReady compares how long bare envtest (etcd and
// kube-apiserver through envtest.Environment, nothing else), a minimal
// Cluster and a full Cluster take to become ready. Rounds interleave the
// three so that drift (caches, a busy machine) hits all alike; each round
// starts and stops one of each, and a warm-up round is discarded. It
// reports the median times and the median over rounds of minimal/bare
// (target ≤ 1.15) and of full−bare (target ≤ 2 s). Run it with
//
//	go test -run '^$' -bench TimeToReady -benchtime 1x ./cluster/
//
// It runs benchRounds (or $OPLAB_BENCH_ROUNDS) rounds whatever b.N is, since
// one round already takes far longer than any benchtime; -benchtime 1x
// keeps the framework from calling it twice.
func BenchmarkTimeToReady(b *testing.B) {
	needAssets(b)
	assets, err := FindAssets()
	if err != nil {
		b.Fatal(err)
	}
	rounds := benchRounds
	if n, err := strconv.Atoi(os.Getenv("OPLAB_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	starts := []func() time.Duration{
		func() time.Duration { return timeBare(b, assets) },
		func() time.Duration { return timeCluster(b, ModeMinimal) },
		func() time.Duration { return timeCluster(b, ModeFull) },
	}
	var bare, minimal, full []time.Duration
	b.ResetTimer()
	for round := 0; round <= rounds; round++ {
		// Each round rotates which start goes first, so that whatever the
		// previous Stop leaves behind (etcd's removed data, sockets in
		// TIME_WAIT) weighs on each of them alike.
		var took [3]time.Duration
		for i := range starts {
			k := (i + round) % len(starts)
			took[k] = starts[k]()
		}
		if round == 0 {
			continue // warm-up: binaries not yet in the page cache
		}
		bare, minimal, full = append(bare, took[0]), append(minimal, took[1]), append(full, took[2])
		fmt.Printf("round %d: bare %v, minimal %v, full %v\n", round,
			took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), took[2].Round(time.Millisecond))
	}
	b.StopTimer()

	// Ratios and differences are taken within each round, whose three
	// starts ran back to back under the same load, and then their median:
	// on a busy machine that is far steadier than comparing medians.
	var ratios []float64
	var extras []time.Duration
	for i := range bare {
		ratios = append(ratios, minimal[i].Seconds()/bare[i].Seconds())
		extras = append(extras, full[i]-bare[i])
	}
	mb, mm, mf := median(bare), median(minimal), median(full)
	ratio, extra := median(ratios), median(extras)
	fmt.Printf("median of %d: bare %v, minimal %v, full %v; per round: minimal/bare %.3f (target ≤ 1.15), full-bare %v (target ≤ 2s)\n",
		rounds, mb.Round(time.Millisecond), mm.Round(time.Millisecond), mf.Round(time.Millisecond),
		ratio, extra.Round(time.Millisecond))
	b.ReportMetric(mb.Seconds(), "bare-s")
	b.ReportMetric(mm.Seconds(), "minimal-s")
	b.ReportMetric(mf.Seconds(), "full-s")
	b.ReportMetric(ratio, "minimal/bare")
	b.ReportMetric(extra.Seconds(), "full-bare-s")
	b.ReportMetric(0, "ns/op") // the wall time of a round says nothing
}

// benchRounds is how many measured rounds BenchmarkTimeToReady runs, unless
// OPLAB_BENCH_ROUNDS says otherwise.
const benchRounds = 5

// timeBare measures envtest on its own, as controller-runtime users run it.
func timeBare(b *testing.B, assets string) time.Duration {
	b.Helper()
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	began := time.Now()
	if _, err := env.Start(); err != nil {
		b.Fatalf("starting bare envtest: %v", err)
	}
	took := time.Since(began)
	if err := env.Stop(); err != nil {
		b.Fatalf("stopping bare envtest: %v", err)
	}
	return took
}

func timeCluster(b *testing.B, mode Mode) time.Duration {
	b.Helper()
	began := time.Now()
	c, err := Start(context.Background(), Options{Mode: mode})
	if err != nil {
		b.Fatalf("starting a %s cluster: %v", mode, err)
	}
	took := time.Since(began)
	if err := c.Stop(); err != nil {
		b.Fatalf("stopping a %s cluster: %v", mode, err)
	}
	return took
}

func median[T ~int64 | ~float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
