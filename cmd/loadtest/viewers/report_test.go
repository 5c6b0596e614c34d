package viewers

// What BenchmarkControllerWithViewers prints and reports: each phase with
// viewers compared with its neighbours, the feed's rounds summed up by
// their median, and the tables of both processes' costs.

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// printPhases prints a table of oplab's side and one of the viewers' side,
// then a line per feed round, their median and the controller scenario's
// line, and reports the headline metrics: "feed-*" for the feed's viewers,
// the others, unprefixed as before the feed existed, for the controller's.
func printPhases(b *testing.B, rate float64, rs []phaseResult) {
	printOplab(rs)
	printViewers(rs)
	fmt.Println()
	if rounds := feedRounds(comparisons(rs, watchFeed)); len(rounds) > 0 {
		for _, line := range rounds.lines(rate) {
			fmt.Println(line)
		}
		rounds.report(b)
	}
	for _, c := range comparisons(rs, watchController) {
		fmt.Println(c.controllerLine())
		c.report(b)
	}
	fmt.Println()
}

// comparison is one phase with viewers against the phases without around
// it: the cluster drifts over a run, so each is compared with its own
// neighbours, and their difference shows how much.
type comparison struct {
	with, before, after phaseResult
}

// comparisons pairs every phase whose viewers watch w with its neighbours,
// in the order they ran.
func comparisons(rs []phaseResult, w watching) []comparison {
	watch := make([]watching, len(rs))
	for i, r := range rs {
		watch[i] = r.watch
	}
	var cs []comparison
	for i, r := range rs {
		if r.watch != w || w == watchNone {
			continue
		}
		if before, after, ok := neighbours(watch, i); ok {
			cs = append(cs, comparison{with: r, before: rs[before], after: rs[after]})
		}
	}
	return cs
}

// without is the mean all-Ready time of the neighbours, in seconds.
func (c comparison) without() float64 {
	return (c.before.took.Seconds() + c.after.took.Seconds()) / 2
}

// ratio is the throughput with viewers over that without: the time without
// over the time with.
func (c comparison) ratio() float64 { return c.without() / c.with.took.Seconds() }

// noise is how far apart the neighbours are, relative to their mean.
func (c comparison) noise() float64 {
	return math.Abs(c.before.took.Seconds()-c.after.took.Seconds()) / c.without()
}

// says is how the throughput compares and how far apart the neighbours
// were, the noise to read the ratio against; note, if any, ends the
// parenthesis.
func (c comparison) says(note string) string {
	s := fmt.Sprintf("throughput with / without = %.3f (neighbours %.2f s, %.2f s; noise between them %.1f%%",
		c.ratio(), c.before.took.Seconds(), c.after.took.Seconds(), 100*c.noise())
	if note != "" {
		s += "; " + note
	}
	return s + ")"
}

// controllerLine says what the controller scenario was and how the
// throughput compares.
func (c comparison) controllerLine() string {
	return fmt.Sprintf("controller's own namespace (~%.0f steps/s), %d viewers: %s",
		float64(c.with.steps)/c.with.took.Seconds(), c.with.viewers, c.says("target ≥ 0.95"))
}

// report reports the controller scenario's metrics.
func (c comparison) report(b *testing.B) {
	b.ReportMetric(c.without(), "without-s")
	b.ReportMetric(c.with.took.Seconds(), "with-s")
	b.ReportMetric(mib(c.with.rss), "rss-MiB")
	b.ReportMetric(c.ratio(), "ratio")
	reportDelays(b, c.with.recv.histogram(), "")
}

func reportDelays(b *testing.B, h *histogram, prefix string) {
	b.ReportMetric(h.quantile(0.5).Seconds()*1000, prefix+"p50-ms")
	b.ReportMetric(h.quantile(0.99).Seconds()*1000, prefix+"p99-ms")
}

// feedRounds is the feed scenario's rounds, in the order they ran.
type feedRounds []comparison

// ratio is the median of the rounds' ratios: one round spoiled by a hiccup
// of the machine moves it far less than it would a mean.
func (fr feedRounds) ratio() float64 {
	rs := make([]float64, len(fr))
	for i, c := range fr {
		rs[i] = c.ratio()
	}
	return median(rs)
}

// delays pools the rounds' delays, so that the feed's p50 and p99 are those
// of every step measured in any round.
func (fr feedRounds) delays() *histogram {
	h := &histogram{}
	for _, c := range fr {
		h.merge(c.with.recv.histogram())
	}
	return h
}

// lines says how each round compares with its neighbours, then their
// median with every round's ratio and noise beside it.
func (fr feedRounds) lines(rate float64) []string {
	var ls []string
	var ratios, noises []string
	for i, c := range fr {
		ls = append(ls, fmt.Sprintf("feed %g steps/s, %d viewers, round %d of %d: %s", rate, c.with.viewers, i+1, len(fr), c.says("")))
		ratios = append(ratios, fmt.Sprintf("%.3f", c.ratio()))
		noises = append(noises, fmt.Sprintf("%.1f%%", 100*c.noise()))
	}
	return append(ls, fmt.Sprintf("feed %g steps/s, %d viewers, median of %d rounds: throughput with / without = %.3f (rounds %s; noise %s; target ≥ 0.95)",
		rate, fr[0].with.viewers, len(fr), fr.ratio(), strings.Join(ratios, ", "), strings.Join(noises, ", ")))
}

// report reports the feed scenario's metrics.
func (fr feedRounds) report(b *testing.B) {
	b.ReportMetric(fr.ratio(), "feed-ratio")
	reportDelays(b, fr.delays(), "feed-")
}

// median is the middle value of xs, or the mean of the two middle ones
// when they are even in number; NaN when there are none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func mib[T uint64 | float64](v T) float64 { return float64(v) / (1 << 20) }

func phaseName(i int) string {
	if i == 0 {
		return "warm-up"
	}
	return fmt.Sprintf("phase %d", i)
}

// printOplab prints what each phase cost oplab's process and how busy its
// recorder got.
func printOplab(rs []phaseResult) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "\nphase\tDatabases\tviewers\twatching\tall Ready\tcreated in\tDB/s\tsteps\tfeed steps/s\tCPU\tGC CPU\tmax steps/s\tmax window\tdropped viewers\tdropped steps\theap inuse\tsys\tRSS\t\n")
	for i, r := range rs {
		// Without viewers the recorder measures no rate and picks no
		// window: what Stats says is left over from an earlier phase.
		rate, window := "-", "-"
		if r.viewers > 0 {
			rate, window = fmt.Sprintf("%.0f", r.stepRate), r.window.String()
		}
		// What the feed actually emitted: it should hold its rate in
		// every phase, or the phases differ in more than the viewers.
		fed := "-"
		if r.fed > 0 {
			fed = fmt.Sprintf("%.1f", float64(r.fed)/r.took.Seconds())
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%.2fs\t%.2fs\t%.1f\t%d\t%s\t%.1fs\t%.2fs\t%s\t%s\t%d\t%d\t%.0fMiB\t%.0fMiB\t%.0fMiB\t\n",
			phaseName(i), r.dbs, r.viewers, r.watch, r.took.Seconds(), r.create.Seconds(), float64(r.dbs)/r.took.Seconds(), r.steps, fed, r.cpu.Seconds(), r.gcCPU.Seconds(), rate, window,
			r.droppedClients, r.droppedSteps, mib(r.heap), mib(r.sys), mib(r.rss))
	}
	_ = w.Flush()
}

// printViewers prints, for the phases with viewers, what the viewers
// received since the start: frames and wire bytes from all of them; messages,
// inflated JSON and delays from the measuring ones; who or what was still
// missing when the drain ended; and what the viewers' process cost.
func printViewers(rs []phaseResult) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "\nviewers\tviewers\twatching\tmeasured\tframes queued/viewer\tframes/viewer\twire MiB/viewer\tmsgs/measured\tJSON MiB/measured\tJSON/wire\tcaught up after\tdelay p50\tp99\tmax≤\tlagging\tbehind\tframes missing\tbroken\tviewers' CPU\tviewers' RSS\t\n")
	for i, r := range rs {
		if r.viewers == 0 {
			continue
		}
		t, h := r.recv, r.recv.histogram()
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%.0f\t%.0f\t%.3f\t%.0f\t%.2f\t%s\t%.2fs\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.1fs\t%.0fMiB\t\n",
			phaseName(i), r.viewers, r.watch, t.Measured, float64(r.queued)/float64(r.viewers), t.Frames, mib(t.Wire), t.Msgs, mib(t.JSON), ratioOf(t.JSON, t.MeasuredWire), r.drain.Seconds(),
			fmtDelay(h, 0.5), fmtDelay(h, 0.99), fmtDelay(h, 1), r.progress.Lagging, r.progress.Behind, r.progress.Missing, t.Broken,
			t.CPU.Seconds(), mib(t.RSS))
	}
	_ = w.Flush()
}

// ratioOf formats a/b, or "-" when b is 0.
func ratioOf(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

func fmtDelay(h *histogram, q float64) string {
	if h == nil || h.total == 0 {
		return "-"
	}
	return h.quantile(q).Round(100 * time.Microsecond).String()
}

// TestPlanComparisonsPairEachRoundWithItsNeighbours runs comparisons over the
// phases planPhases lists for three feed rounds: each round, and the
// controller scenario, must be compared with the phases without viewers
// right around it, the warm-up never, and neighbours shared between rounds.
func TestPlanComparisonsPairEachRoundWithItsNeighbours(t *testing.T) {
	var rs []phaseResult
	for i, p := range planPhases(5, 7, 3) {
		rs = append(rs, phaseResult{phasePlan: p, took: time.Duration(i+1) * time.Second})
	}
	// Phases: 0 warm-up, 1 none, 2 F, 3 none, 4 F, 5 none, 6 F, 7 none, 8 C, 9 none.
	phase := func(r phaseResult) int { return int(r.took/time.Second) - 1 }
	for _, c := range []struct {
		w    watching
		want [][3]int // with, before, after
	}{
		{watchFeed, [][3]int{{2, 1, 3}, {4, 3, 5}, {6, 5, 7}}},
		{watchController, [][3]int{{8, 7, 9}}},
		{watchNone, nil},
	} {
		var got [][3]int
		for _, cmp := range comparisons(rs, c.w) {
			got = append(got, [3]int{phase(cmp.with), phase(cmp.before), phase(cmp.after)})
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("comparisons(%v) = %v; want %v", c.w, got, c.want)
		}
	}
}

// TestFeedRounds checks the feed scenario's summary: the median of the
// rounds' ratios, each against its own neighbours, and the delays of every
// round pooled.
func TestFeedRounds(t *testing.T) {
	round := func(before, with, after time.Duration, delays ...time.Duration) comparison {
		var h histogram
		for _, d := range delays {
			h.add(d)
		}
		recv := viewerTotals{Counts: h.counts[:], Total: h.total}
		return comparison{
			with:   phaseResult{took: with, recv: recv},
			before: phaseResult{took: before}, after: phaseResult{took: after},
		}
	}
	fr := feedRounds{
		round(4*time.Second, 4*time.Second, 4*time.Second, time.Millisecond),                        // 1
		round(3*time.Second, 5*time.Second, 5*time.Second, time.Millisecond),                        // 0.8
		round(6*time.Second, 3*time.Second, 6*time.Second, time.Second, time.Second, 2*time.Second), // 2, a hiccup
	}
	if got := fr.ratio(); math.Abs(got-1) > 1e-12 {
		t.Errorf("ratio of rounds 1, 0.8 and 2 = %v; want their median, 1", got)
	}
	if got := fr[:2].ratio(); math.Abs(got-0.9) > 1e-12 {
		t.Errorf("ratio of rounds 1 and 0.8 = %v; want 0.9", got)
	}
	// Five delays pooled: two of 1ms, two of 1s, one of 2s. A median of
	// the rounds' own medians would be 1ms.
	h := fr.delays()
	if h.total != 5 {
		t.Fatalf("pooled %d delays; want 5", h.total)
	}
	if p50 := h.quantile(0.5); p50 < time.Second || p50 > 1050*time.Millisecond {
		t.Errorf("pooled p50 = %s; want 1s, to the bucket", p50)
	}
	if p99 := h.quantile(0.99); p99 < 2*time.Second || p99 > 2100*time.Millisecond {
		t.Errorf("pooled p99 = %s; want 2s, to the bucket", p99)
	}
}

// TestFeedMedian checks median on odd and even counts, unsorted input, and
// none.
func TestFeedMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3}, {[]float64{0.9, 1.1}, 1}, {[]float64{1.2, 0.7, 1}, 1}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("median(%v) = %v; want %v", c.xs, got, c.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median of nothing = %v; want NaN", got)
	}
	xs := []float64{3, 1, 2}
	median(xs)
	if !slices.Equal(xs, []float64{3, 1, 2}) {
		t.Errorf("median reordered its input: %v", xs)
	}
}
