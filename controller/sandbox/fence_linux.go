package sandbox

import (
	"fmt"
	"os"
	"strconv"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The kernel fence is the child's second act, after limitSelf and before
// it reads any learner code: whatever the interpreter lets the code reach,
// the kernel refuses it files, sockets, new programs and other processes.
//
//   - no_new_privs: nothing the child runs can gain privileges (set by
//     both layers below, which need it).
//   - Landlock, where the kernel has it: no file may be opened, no TCP
//     port bound or connected, no signal sent nor abstract socket reached
//     outside the child.
//   - seccomp: an allow-list of the system calls a Go program that only
//     computes, reads its stdin and writes its stdout needs. Everything
//     else (open, socket, connect, execve, ptrace, mount, …) fails with
//     EPERM. A new thread, yes; a new process, no: clone only with
//     CLONE_THREAD. Signals only to itself.
//
// The parent adds what only a parent can (parent.go, spaces_linux.go): new
// user, network and IPC namespaces where the kernel allows, so the child
// has no network interface up. Not a PID namespace (spaces_linux.go says
// why): the child shares the host's, and the seccomp rules above keep its
// signals to itself.

// allowed are the system calls the child may make once fenced, by name;
// names an architecture lacks (epoll_wait on arm64) are skipped there.
var allowed = []string{
	// Its two pipes and the Go runtime's poller.
	"read", "write", "readv", "writev", "close", "fcntl", "fstat",
	"epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd2",
	// Memory.
	"mmap", "munmap", "mprotect", "madvise", "mremap", "brk",
	// Threads, their locks and their sleeps.
	"futex", "set_robust_list", "rseq", "gettid", "sched_yield", "sched_getaffinity",
	"nanosleep", "clock_nanosleep", "clock_gettime", "gettimeofday", "restart_syscall",
	// Signals the Go runtime sends itself (preemption) and handles.
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
	// The rest a Go program asks in passing.
	"getpid", "getrandom", "exit", "exit_group",
}

// fenceSeccomp is false only in the fence's own tests, to show what
// Landlock holds without the allow-list in front of it.
var fenceSeccomp = true

// cloneThread is CLONE_THREAD: clone is allowed for a new thread only.
const cloneThread = 0x10000

// fence raises the child's fence and returns its layers, in words, for
// the log and the code page.
func fence() ([]string, error) {
	var layers []string
	abi, _ := llsyscall.LandlockGetABIVersion()
	if abi > 0 {
		// No rules: every file access, TCP port and scope the kernel
		// knows of is handled, and none is granted.
		if err := landlock.V11.BestEffort().Restrict(); err != nil {
			return nil, fmt.Errorf("Landlock: %w", err)
		}
		layers = append(layers, "Landlock ABI "+strconv.Itoa(abi)+" (no files, no TCP, no signals out)")
	}
	if !fenceSeccomp {
		return layers, nil
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	var names []string
	for _, n := range allowed {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	pid := uint64(os.Getpid())
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionErrno,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionAllow, Names: names, NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneThread}}},
				// kill(pid, sig) and tgkill(pid, tid, sig), this process's own
				// pid only: its parent, oplab, runs as the same user.
				{Name: "kill", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: pid}}},
				{Name: "tgkill", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: pid}}},
			}},
			// clone3's flags are in memory, where seccomp cannot look:
			// ENOSYS makes glibc's pthread_create (a cgo build) fall back
			// to clone, whose flags it can.
			{Action: seccomp.Action(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)), Names: []string{"clone3"}},
		},
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: policy}); err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	layers = append([]string{"no_new_privs", fmt.Sprintf("seccomp allow-list (%d system calls)", len(names)+3)}, layers...)
	return layers, nil
}
