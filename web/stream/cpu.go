package stream

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUMeter reports how busy the machine's processors have been. The
// recorder reads it to tell when its viewers' frames would take CPU the
// controller and its API server need.
type CPUMeter interface {
	// Busy returns the fraction of processor time spent working since the
	// previous call, from 0 to 1, and false when it cannot tell.
	Busy() (float64, bool)
}

// Defaults for reading the CPUMeter.
const (
	// DefaultBusyCPU is the busy fraction from which the machine counts as
	// busy.
	DefaultBusyCPU = 0.9
	// cpuCalm is how far below BusyCPU the machine must fall to stop
	// counting as busy (or to half of BusyCPU, if that is higher, so that a
	// low BusyCPU can still end): with fewer frames the stream's own load
	// drops, and without the gap the window would flap at each reading.
	cpuCalm = 0.3
	// cpuEvery is how often, at most, the meter is read.
	cpuEvery = 100 * time.Millisecond
)

// cpuGauge turns CPUMeter readings into busy or not, with hysteresis. Run
// owns it.
type cpuGauge struct {
	meter  CPUMeter
	enter  float64 // busy from this fraction on
	at     time.Time
	busy   bool
	latest float64
}

// busyAt reads the meter when the last reading is cpuEvery old, and says
// whether the machine is busy.
func (g *cpuGauge) busyAt(now time.Time) bool {
	if g.meter == nil || now.Sub(g.at) < cpuEvery {
		return g.busy
	}
	g.at = now
	f, ok := g.meter.Busy()
	if !ok {
		return g.busy
	}
	g.latest = f
	switch {
	case f >= g.enter:
		g.busy = true
	case f < max(g.enter-cpuCalm, g.enter/2):
		g.busy = false
	}
	return g.busy
}

// procStat is the CPUMeter of Linux: the first line of /proc/stat.
type procStat struct {
	path              string
	lastBusy, lastAll uint64
}

// newProcStat returns a meter of path, or nil when it cannot be read (not
// Linux): the recorder then judges load by its message rate alone.
func newProcStat(path string) CPUMeter {
	p := &procStat{path: path}
	if _, ok := p.Busy(); !ok {
		return nil
	}
	return p
}

func (p *procStat) Busy() (float64, bool) {
	busy, all, err := readCPUTimes(p.path)
	if err != nil || all <= p.lastAll {
		return 0, false
	}
	f := float64(busy-p.lastBusy) / float64(all-p.lastAll)
	p.lastBusy, p.lastAll = busy, all
	return f, true
}

func readCPUTimes(path string) (busy, all uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, fmt.Errorf("%s: empty", path)
	}
	return parseCPULine(sc.Text())
}

// parseCPULine reads the aggregate line of /proc/stat: "cpu" then user,
// nice, system, idle, iowait, irq, softirq, steal, ... in clock ticks. Idle
// and iowait are idle time; guest time is already counted in user.
func parseCPULine(line string) (busy, all uint64, err error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("not the aggregate cpu line of /proc/stat: %q", line)
	}
	var idle uint64
	for i, s := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, errors.Join(fmt.Errorf("field %d of the cpu line %q", i+1, line), err)
		}
		all += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return all - idle, all, nil
}
