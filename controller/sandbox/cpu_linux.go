package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time (user and system) process pid has used, to
// the nearest clock tick.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may itself hold
	// spaces or parentheses: the fields that follow start after the last ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	// After the name: state (field 3) … utime (14) and stime (15).
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 13", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// waited is how long process pid's threads have spent runnable but
// waiting for a CPU (the second field of each thread's schedstat): time
// the machine's load took from the child, which no deadline of its code
// should count.
func waited(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return 0, err
	}
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // a thread gone meanwhile
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %q", pid, t.Name(), b)
		}
		n, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %w", pid, t.Name(), err)
		}
		ns += n
	}
	return time.Duration(ns), nil
}
