package stream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// fixedCPU is a CPUMeter that always reads the same.
type fixedCPU float64

func (f fixedCPU) Busy() (float64, bool) { return float64(f), true }

// scriptedCPU is a CPUMeter that reads its readings in turn; a negative
// reading is "cannot tell".
type scriptedCPU struct{ readings []float64 }

func (s *scriptedCPU) Busy() (float64, bool) {
	f := s.readings[0]
	s.readings = s.readings[1:]
	return f, f >= 0
}

func TestParseCPULine(t *testing.T) {
	for _, tc := range []struct {
		line      string
		busy, all uint64
		wantErr   string
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  100 10 50 800 20 0 15 5 7 0", 180, 1000, ""},
		{"cpu 1 2 3 4", 6, 10, ""},
		{"cpu0 100 10 50 800 20 0 15 5 0 0", 0, 0, "not the aggregate cpu line"},
		{"cpu 1 2", 0, 0, "not the aggregate cpu line"},
		{"cpu 1 2 x 4 5", 0, 0, "field 3"},
	} {
		busy, all, err := parseCPULine(tc.line)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseCPULine(%q) error %v, want one mentioning %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil || busy != tc.busy || all != tc.all {
			t.Errorf("parseCPULine(%q) = %d, %d, %v; want %d, %d", tc.line, busy, all, err, tc.busy, tc.all)
		}
	}
}

func TestProcStatMeasuresBetweenReadings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	write := func(line string) {
		if err := os.WriteFile(path, []byte(line+"\ncpu0 1 2 3 4\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cpu 100 0 100 800 0 0 0 0")
	m := newProcStat(path)
	if m == nil {
		t.Fatal("newProcStat of a readable file = nil")
	}
	// 1,000 more ticks, 900 of them working.
	write("cpu 700 0 400 900 0 0 0 0")
	if f, ok := m.Busy(); !ok || f != 0.9 {
		t.Errorf("Busy = %v, %v; want 0.9, true", f, ok)
	}
	// No time passed: nothing to tell.
	if _, ok := m.Busy(); ok {
		t.Error("Busy with no ticks since the last reading: ok, want false")
	}
	if newProcStat(filepath.Join(t.TempDir(), "missing")) != nil {
		t.Error("newProcStat of a missing file != nil, want nil (judge by message rate alone)")
	}
}

func TestCPUGaugeHysteresis(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	meter := &scriptedCPU{readings: []float64{0.5, 0.95, 0.7, -1, 0.55, 0.92}}
	g := cpuGauge{meter: meter, enter: 0.9}
	steps := []struct {
		after time.Duration
		want  bool
		why   string
	}{
		{0, false, "0.5 is calm"},
		{cpuEvery, true, "0.95 is busy"},
		{cpuEvery / 2, true, "too soon to read again"},
		{cpuEvery, true, "0.7 is not 0.3 below 0.9: still busy"},
		{cpuEvery, true, "no reading keeps the state"},
		{cpuEvery, false, "0.55 is calm again"},
		{cpuEvery, true, "0.92 is busy"},
	}
	now := t0.Add(-cpuEvery)
	for i, s := range steps {
		now = now.Add(s.after)
		if got := g.busyAt(now); got != s.want {
			t.Errorf("step %d (%s): busy %v, want %v", i, s.why, got, s.want)
		}
	}
	if len(meter.readings) != 0 {
		t.Errorf("%d readings left unread, want every reading taken", len(meter.readings))
	}

	// A low BusyCPU still ends: calm again below half of it.
	low := cpuGauge{meter: &scriptedCPU{readings: []float64{0.25, 0.12, 0.09}}, enter: 0.2}
	for i, want := range []bool{true, true, false} {
		if got := low.busyAt(t0.Add(time.Duration(i+1) * cpuEvery)); got != want {
			t.Errorf("BusyCPU 0.2, reading %d: busy %v, want %v", i, got, want)
		}
	}
}

func TestBusyMachineWidensTheWindow(t *testing.T) {
	// A saturated machine, the controller quiet: one viewer and a budget
	// of 10 frames a second give a 100ms window. Nine viewers of another
	// namespace, which gets nothing, do not widen it.
	h := newHarness(t, Options{CPU: fixedCPU(1), BusyFrameRate: 10})
	v := h.dial("a", -1)
	for range 9 {
		h.dial("b", -1)
	}
	h.waitClients(10)
	h.rec.Emit(step("a", "db", controller.StepEvent))
	h.rec.Emit(marker("a"))
	v.readUntil(isMarker)
	st := h.rec.Stats()
	if st.StepRate > DefaultBusyStepRate {
		t.Fatalf("message rate %.0f: the test wants a quiet controller", st.StepRate)
	}
	if st.Window != 100*time.Millisecond || st.CPU != 1 {
		t.Errorf("window %v at CPU %.2f, want 100ms at 1.00", st.Window, st.CPU)
	}
}
