package stream

import (
	"testing"
	"time"
)

func TestWindowGrowsWithViewersAndLoad(t *testing.T) {
	opts := HubOptions{}.withDefaults()
	for _, tc := range []struct {
		viewers int
		rate    float64 // recorded messages a second
		want    time.Duration
	}{
		{0, 0, 0},
		{1, 0, 20 * time.Nanosecond},
		{100, 0, 200 * time.Microsecond},
		{500, 0, 5 * time.Millisecond},
		{1000, 0, 20 * time.Millisecond},
		{2000, 0, 80 * time.Millisecond},
		{10000, 0, 80 * time.Millisecond}, // capped at BatchInterval
		// At or below BusyStepRate the load changes nothing.
		{2000, 100, 80 * time.Millisecond},
		{2000, 200, 80 * time.Millisecond},
		// Busy: at least viewers / BusyFrameRate (2,000 frames a second).
		{1, 900, 500 * time.Microsecond},
		{100, 900, 50 * time.Millisecond},
		{500, 900, 250 * time.Millisecond},
		{1000, 30000, 500 * time.Millisecond},
		{2000, 900, time.Second},
		{10000, 900, time.Second}, // capped at MaxBatchInterval
	} {
		if got := coalesceWindow(opts, tc.viewers, tc.rate > opts.BusyStepRate); got != tc.want {
			t.Errorf("window with %d viewers at %.0f messages/s = %v, want %v", tc.viewers, tc.rate, got, tc.want)
		}
	}
}

func TestMaxBatchIntervalIsNeverBelowBatchInterval(t *testing.T) {
	o := HubOptions{BatchInterval: 3 * time.Second}.withDefaults()
	if o.MaxBatchInterval != 3*time.Second {
		t.Errorf("MaxBatchInterval = %v, want BatchInterval's 3s", o.MaxBatchInterval)
	}
	if got := coalesceWindow(o, o.FullBatchViewers, true); got != 3*time.Second {
		t.Errorf("busy window = %v, want 3s", got)
	}
}

func TestRateMeterMeasuresWholeIntervals(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := rateMeter{start: t0}
	// 500 messages spread over the first interval: halfway through, the
	// 250 so far already count, over the whole interval.
	for i := range 500 {
		m.add(t0.Add(time.Duration(i) * rateInterval / 500))
		if i == 249 {
			if got, want := m.at(t0.Add(rateInterval/2)), 250/rateInterval.Seconds(); got != want {
				t.Errorf("rate halfway through the first interval = %v, want %v", got, want)
			}
		}
	}
	if got, want := m.at(t0.Add(rateInterval)), 500/rateInterval.Seconds(); got != want {
		t.Errorf("rate after one interval = %v, want %v", got, want)
	}
	if m.n != 0 {
		t.Errorf("count after rolling over = %d, want 0", m.n)
	}
	// A burst in the first half of the next interval, then a quiet spell:
	// the next message must not read the burst as current.
	t1 := t0.Add(rateInterval)
	for i := range 1000 {
		m.add(t1.Add(time.Duration(i) * rateInterval / 2000))
	}
	if got := m.at(t1.Add(3 * rateInterval)); got != 0 {
		t.Errorf("rate after a quiet spell = %v, want 0", got)
	}
	m.add(t1.Add(3 * rateInterval))
	if got, want := m.at(t1.Add(3*rateInterval)), 1/rateInterval.Seconds(); got != want {
		t.Errorf("rate with one message after a quiet spell = %v, want %v", got, want)
	}
}
