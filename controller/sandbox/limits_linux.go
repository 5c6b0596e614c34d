package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// Child limits. Memory is what the child may map beyond what the Go runtime
// had mapped when it started; CPU is the child's whole life, over many
// reconciles (the parent starts a fresh child when this one dies).
//
// childMemory bounds what one learner's code can cost oplab's Pod: a child
// at rest holds about 12 MiB of its own (the binary's pages are shared),
// so --max-code-runs children cost at most that many times 140 MiB, and
// the Deployment's limit is sized for it (controller/config/manager).
const (
	childMemory  = 128 << 20
	childCPUSecs = 30
	childMaxFDs  = 16
	childNice    = 10
	// overranNice is the priority of the children of a learner whose
	// last reconcile was killed: the lowest, so CFS gives one about an
	// eighth of a well-behaved child's share (weights 15 and 110).
	overranNice = 19
)

// lowerThreads sets childNice on every thread of the child. On Linux a nice
// belongs to a thread, not a process, and the Go runtime has started
// several threads before the child's first act; the one that called
// setpriority alone was lowered, and whichever kept nice 0 could run the
// learner's code at oplab's own priority. A thread started later inherits
// its creator's nice, so a second pass finds any started meanwhile.
//
// Never higher than the parent may already have set it (overranNice);
// Getpriority answers 20 - nice. The parent may set it between the two
// calls: refused (EPERM, EACCES) is then a priority already lower than
// this one, which is what the parent wanted; as root this call wins, and
// the parent sets it again once the code has compiled. A thread gone in
// between (ESRCH) needs nothing.
func lowerThreads() error {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("lowering the priority: %w", err)
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-cur >= childNice {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, childNice); err != nil &&
				!errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("lowering the priority: %w", err)
			}
		}
	}
	return nil
}

// limitSelf is the child's first act, before it reads any learner code: it
// caps its address space, CPU time, files and stack, and runs on one core.
//
// RLIMIT_NPROC is not set: it counts threads per user, and the Go runtime
// starts threads as it needs them, so the child would die at random; the
// child has no way to start a process anyway (no os/exec, no syscall).
func limitSelf() error {
	runtime.GOMAXPROCS(1)
	// Below oplab in the scheduler's eyes: a learner's busy loop, until
	// its deadline, takes CPU from oplab's own controller last.
	if err := lowerThreads(); err != nil {
		return err
	}
	debug.SetMaxStack(64 << 20)
	debug.SetMaxThreads(64)
	vm, err := vmSize()
	if err != nil {
		return err
	}
	for _, l := range []struct {
		res int
		val uint64
	}{
		{syscall.RLIMIT_AS, vm + childMemory},
		{syscall.RLIMIT_DATA, vm + childMemory},
		{syscall.RLIMIT_CPU, childCPUSecs},
		{syscall.RLIMIT_FSIZE, 0},
		{syscall.RLIMIT_CORE, 0},
		{syscall.RLIMIT_NOFILE, childMaxFDs},
	} {
		if err := syscall.Setrlimit(l.res, &syscall.Rlimit{Cur: l.val, Max: l.val}); err != nil {
			return fmt.Errorf("setting rlimit %d: %w", l.res, err)
		}
	}
	// The soft memory limit makes the collector work hard before the hard
	// limit ends the child.
	debug.SetMemoryLimit(childMemory / 2)
	// When memory runs out in oplab's cgroup (a Pod's limit), the kernel
	// kills the process it scores highest: always a child, never oplab.
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0); err != nil {
		return fmt.Errorf("making the child the first the OOM killer takes: %w", err)
	}
	return nil
}

// vmSize is the child's mapped address space now, from /proc/self/status.
func vmSize() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading the address space size: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing VmSize %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}
