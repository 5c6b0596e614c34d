package class

// What the benchmark reads from /proc: the CPU time of the control plane's
// processes (this process's children) and the resident memory of both.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procCPU is one process's name and CPU time so far.
type procCPU struct {
	name string
	cpu  time.Duration
}

// childCPU returns the CPU time of every live descendant of this process
// but skip (the class's process) and its own, by pid: the embedded control
// plane, some of whose processes are started through a shell.
func childCPU(skip int) map[int]procCPU {
	all := map[int]stat{}
	for _, pid := range pids() {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		if st, ok := parseStat(string(raw)); ok {
			all[pid] = st
		}
	}
	out := map[int]procCPU{}
	for _, pid := range descendants(all, os.Getpid(), skip) {
		out[pid] = procCPU{name: all[pid].name, cpu: all[pid].cpu}
	}
	return out
}

// descendants returns the pids below root in procs, leaving out skip and
// everything below it.
func descendants(procs map[int]stat, root, skip int) []int {
	children := map[int][]int{}
	for pid, st := range procs {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if c == skip {
				continue
			}
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	slices.Sort(out)
	return out
}

// stat is what childCPU reads of /proc/PID/stat.
type stat struct {
	name string
	ppid int
	cpu  time.Duration // utime + stime
}

// parseStat reads /proc/PID/stat: "pid (comm) state ppid … utime stime …",
// where comm may hold spaces and parentheses, so the fields are counted from
// the last ")".
func parseStat(s string) (stat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	ut, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return stat{}, false
	}
	return stat{name: s[open+1 : end], ppid: ppid, cpu: time.Duration(ut+st) * clockTick}, true
}

func pids() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// vmRSS reads a process's resident set size from /proc/PID/status, in
// bytes (0 if unknown).
func vmRSS(pid string) uint64 {
	raw, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0
	}
	return statusBytes(string(raw), "VmRSS")
}

// statusBytes reads field (VmRSS, VmHWM, …) of a /proc/PID/status text,
// given in kB there, in bytes; 0 if it is missing or unreadable.
func statusBytes(status, field string) uint64 {
	for line := range strings.Lines(status) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// memory is this process's memory at one moment, in bytes: resident
// (VmRSS), its peak since the last resetPeak (VmHWM), the Go heap's spans
// in use (HeapInuse, which counts a span with any live object whole) and
// its live objects (HeapAlloc, after a collection).
type memory struct{ rss, hwm, heap, live uint64 }

// settledMemory collects garbage and returns what is left to the
// operating system before it reads the memory, so that the figure is what
// the process holds rather than what the collector has not yet given back.
// The peak is read before, as the collection does not lower it.
func settledMemory() memory {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	raw, _ := os.ReadFile("/proc/self/status")
	return memory{rss: statusBytes(string(raw), "VmRSS"), hwm: statusBytes(string(raw), "VmHWM"), heap: ms.HeapInuse, live: ms.HeapAlloc}
}

// resetPeak sets this process's VmHWM back to its current RSS (writing 5
// to clear_refs, Linux 4.0 on), so that the next peak read is that of the
// phase that follows.
func resetPeak() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("reset the peak RSS: %w", err)
	}
	return nil
}

// rssStats summarises RSS samples, in bytes.
type rssStats struct{ median, peak uint64 }

func summariseRSS(samples []uint64) rssStats {
	if len(samples) == 0 {
		return rssStats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return rssStats{median: s[len(s)/2], peak: s[len(s)-1]}
}

// sampler samples this process's RSS and the control plane's, summed,
// every 200ms until stopped. It reads the status files of the processes
// found when it started: walking all of /proc costs milliseconds of CPU
// each time, which would be charged to oplab.
type sampler struct {
	pids  []string
	stopc chan struct{}
	done  chan struct{}
	self  []uint64 // owned by the sampling goroutine until done
	cp    []uint64
}

func startSampling(cluster map[int]procCPU) *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	for pid := range cluster {
		s.pids = append(s.pids, strconv.Itoa(pid))
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	s.self = append(s.self, vmRSS("self"))
	var cp uint64
	for _, pid := range s.pids {
		cp += vmRSS(pid)
	}
	s.cp = append(s.cp, cp)
}

// stop returns this process's RSS and the control plane's.
func (s *sampler) stop() (self, cp rssStats) {
	close(s.stopc)
	<-s.done
	return summariseRSS(s.self), summariseRSS(s.cp)
}
