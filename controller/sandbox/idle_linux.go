package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// idleAll puts every thread of process pid under SCHED_IDLE, the policy of
// work that runs only when nothing else wants the CPU. Threads started
// after it inherit the policy from the thread that starts them.
//
// Nice 19 alone was not enough: under EEVDF a woken neighbour waited for a
// spinning nice-19 child to reach its fair share before it ran, about a
// millisecond a reconcile (BenchmarkNeighbours, p50 3.7 ms calm against
// 4.1 ms beside a spinner). A SCHED_IDLE thread is preempted at once by any
// other that wakes. Going back needs CAP_SYS_NICE, which is why only a
// fresh child (new code) runs at the usual policy again.
func idleAll(pid int) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("listing the child's threads: %w", err)
	}
	attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_IDLE}
	var errs []error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that ended meanwhile (ESRCH) needs nothing.
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("thread %d: %w", tid, err))
		}
	}
	return errors.Join(errs...)
}
