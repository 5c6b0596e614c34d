package class

// What BenchmarkClass prints and reports, and the arithmetic of the
// learners one core holds.

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// capacity is what a learner costs, from one class's measure.
type capacity struct {
	allCores   float64       // CPU acting over learners, in cores
	base       float64       // CPU of oplab with no session, in cores: the replica's own, not a learner's
	rate       float64       // the benchmark's Database cycles per learner-minute
	rawCores   float64       // CPU per learner above base at that rate, in cores
	quietCores float64       // CPU per learner above base of the class joined but quiet
	perCycle   time.Duration // CPU per Database cycle beyond the quiet class's
	realCores  float64       // CPU per learner above base at the real rate
	rawPerCore float64       // learners one core holds at the benchmark's rate
	perCore    float64       // and at the real rate
}

// cpuWindows is the CPU spent in each window of the measure, and the
// windows' lengths.
type cpuWindows struct {
	idleCPU, idle, quietCPU, quiet, activeCPU, active time.Duration
}

// capacityOf works out capacity. oplab costs base with no session at all;
// the class joined but quiet costs more, which every learner carries by
// being there (sessions, streams, pings); while acting, the class costs
// the quiet class's plus a cost per Database cycle. The instructor's cycles
// count as cycles, and the fan-out to the followers rides on them. At
// realRate cycles per learner-minute a learner costs its share of the quiet
// class plus realRate cycles a minute, and one core holds what is left of it
// after base divided by that.
func capacityOf(w cpuWindows, learners, learnerCycles, allCycles int, realRate float64) capacity {
	c := capacity{base: cores(w.idleCPU, w.idle), rate: float64(learnerCycles) / float64(learners) / w.active.Minutes()}
	c.allCores = cores(w.activeCPU, w.active) / float64(learners)
	c.rawCores = max(0, cores(w.activeCPU, w.active)-c.base) / float64(learners)
	quietClass := cores(w.quietCPU, w.quiet)
	c.quietCores = max(0, quietClass-c.base) / float64(learners)
	if allCycles > 0 {
		c.perCycle = max(0, time.Duration((w.activeCPU.Seconds()-quietClass*w.active.Seconds())/float64(allCycles)*float64(time.Second)))
	}
	c.realCores = c.quietCores + c.perCycle.Seconds()*realRate/60
	c.rawPerCore, c.perCore = (1-c.base)/c.rawCores, (1-c.base)/c.realCores
	return c
}

func (m measurement) capacity(withCluster bool) capacity {
	w := cpuWindows{idleCPU: m.idle.oplab, idle: m.idle.took, quietCPU: m.quiet.oplab, quiet: m.quiet.took, activeCPU: m.active.oplab, active: m.active.took}
	if withCluster {
		w.idleCPU += m.idle.clusterCPU()
		w.quietCPU += m.quiet.clusterCPU()
		w.activeCPU += m.active.clusterCPU()
	}
	r := m.class
	return capacityOf(w, m.learners, r.Cycles, r.Cycles+r.InstructorCycles, *benchRealRate)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// perLearnerMiB is (RSS active − RSS idle) / learners, from the windows'
// medians, and from the active window's peak.
func perLearnerMiB(idle, active rssStats, learners int) (median, peak float64) {
	d := func(a uint64) float64 { return (mib(a) - mib(idle.median)) / float64(learners) }
	return d(active.median), d(active.peak)
}

func (m measurement) print(w io.Writer) {
	r := m.class
	how := "dial /ws with the instructor's own session cookie (the same namespace stream; the follow endpoint is not used)"
	if followPresenter {
		how = "dial /ws?follow=presenter with their learner's cookie while the instructor presents"
	}
	fmt.Fprintf(w, "\nclass: %d learners × %d rounds: %d Database cycles in %.1f s (%.1f cycles per learner-minute), %d errors; instructor %d cycles, %d followers %s\n",
		m.learners, *benchRounds, r.Cycles, r.Active.Seconds(), m.capacity(false).rate, r.Errors, r.InstructorCycles, m.followers, how)
	if r.QuotaWaits > 0 {
		fmt.Fprintf(w, "the quota refused %d creates in namespaces whose earlier Databases were gone (its usage lags deletions), tried again every %v: %.1f s in all\n", r.QuotaWaits, quotaRetry, r.QuotaWaited.Seconds())
	}
	fmt.Fprintf(w, "joining (%d sessions started with GET /lab, %d streams opened): %.1f s\n", m.learners+1, m.learners+1+m.followers, m.join.Seconds())
	fmt.Fprintf(w, "followers' delay, message time → receipt: p50 %s, p99 %s, max %s over %d messages; each follower got %d–%d, the instructor's own stream %d\n",
		round(r.Delay.P50), round(r.Delay.P99), round(r.Delay.Max), r.Delay.N, r.FollowMin, r.FollowMax, r.Instructor)
	fmt.Fprintf(w, "  controller steps (time stamped by its tracer): p50 %s, p99 %s over %d; state views (stamped by the recorder): p50 %s, p99 %s over %d\n",
		round(r.StepDelay.P50), round(r.StepDelay.P99), r.StepDelay.N, round(r.StateDelay.P50), round(r.StateDelay.P99), r.StateDelay.N)
	fmt.Fprintf(w, "a learner's screen: create → Ready p50 %s, p99 %s; delete → gone p50 %s, p99 %s\n",
		round(r.ToReady.P50), round(r.ToReady.P99), round(r.ToGone.P50), round(r.ToGone.P99))
	fmt.Fprintln(w, "CPU, in cores (CPU s per s):")
	for _, win := range []struct {
		name string
		w    window
	}{{"idle, no session", m.idle}, {"class joined, quiet", m.quiet}, {"class acting", m.active}} {
		fmt.Fprintf(w, "  %-20s %5.1f s: oplab %.3f; control plane %.3f (%s)\n", win.name, win.w.took.Seconds(),
			cores(win.w.oplab, win.w.took), cores(win.w.clusterCPU(), win.w.took), processes(win.w))
	}
	fmt.Fprintf(w, "  the class process (nice %d), acting: %.3f\n", *benchNice, cores(r.CPU, r.Active+2*time.Second))
	for _, withCluster := range []bool{false, true} {
		c, what := m.capacity(withCluster), "oplab alone (what a self-hosted replica costs; the API server is the cluster's)"
		if withCluster {
			what = "oplab and its embedded control plane"
		}
		fmt.Fprintf(w, "%s: per learner %.1f ms/s (its CPU acting / learners); %.1f ms/s with no session, and per learner beyond that %.1f ms/s at the benchmark's rate, %.1f ms/s of it only for being there; %.0f ms CPU per Database cycle\n",
			what, 1000*c.allCores, 1000*c.base, 1000*c.rawCores, 1000*c.quietCores, ms(c.perCycle))
		fmt.Fprintf(w, "  learners one core holds: %.0f at the benchmark's %.1f cycles per learner-minute (raw); %.0f at %.1f cycle per learner-minute (scaled, -real-rate)\n",
			c.rawPerCore, c.rate, c.perCore, *benchRealRate)
	}
	med, peak := perLearnerMiB(m.idle.rss, m.active.rss, m.learners)
	cpMed, cpPeak := perLearnerMiB(m.idle.cpRSS, m.active.cpRSS, m.learners)
	fmt.Fprintf(w, "RSS: oplab idle %.0f MiB, acting %.0f MiB (peak %.0f): %.2f MiB per learner (peak %.2f); control plane idle %.0f MiB, acting %.0f (peak %.0f): %.2f MiB per learner (peak %.2f)\n\n",
		mib(m.idle.rss.median), mib(m.active.rss.median), mib(m.active.rss.peak), med, peak,
		mib(m.idle.cpRSS.median), mib(m.active.cpRSS.median), mib(m.active.cpRSS.peak), cpMed, cpPeak)
}

// processes lists a window's control-plane processes by CPU, busiest first.
func processes(w window) string {
	names := slices.Collect(maps.Keys(w.cluster))
	slices.SortFunc(names, func(a, b string) int { return int(w.cluster[b] - w.cluster[a]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.3f", n, cores(w.cluster[n], w.took))
	}
	return strings.Join(parts, ", ")
}

func round(d time.Duration) time.Duration {
	if d > 10*time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}

func (m measurement) report(b *testing.B) {
	b.ReportMetric(ms(m.class.Delay.P50), "follow-p50-ms")
	b.ReportMetric(ms(m.class.Delay.P99), "follow-p99-ms")
	c := m.capacity(false)
	b.ReportMetric(1000*c.rawCores, "cpu-ms/s/learner")
	b.ReportMetric(c.perCore, "learners/core")
	med, _ := perLearnerMiB(m.idle.rss, m.active.rss, m.learners)
	b.ReportMetric(med, "MiB/learner")
}
