package kubectl

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The child's budgets: kubectl's own needs, with room (a `get -w` of a
// namespace, a `describe` of every Pod), and nothing that would let one
// learner's command take a share of the machine the class needs.
const (
	childMemory  = 256 << 20 // address space above what the runtime mapped at start
	childCPUSecs = 20        // of CPU; the parent's wall-clock cap comes first
	childFiles   = 64
	childFileMax = 4 << 20 // the largest file it may write (kubectl diff's)
)

// limitSelf caps the child's memory, CPU, files and core dumps, before it
// reads its request, and makes it the first the OOM killer takes.
func limitSelf() error {
	runtime.GOMAXPROCS(1)
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
		{syscall.RLIMIT_FSIZE, childFileMax},
		{syscall.RLIMIT_CORE, 0},
		{syscall.RLIMIT_NOFILE, childFiles},
	} {
		if err := syscall.Setrlimit(l.res, &syscall.Rlimit{Cur: l.val, Max: l.val}); err != nil {
			return fmt.Errorf("setting rlimit %d: %w", l.res, err)
		}
	}
	debug.SetMemoryLimit(childMemory / 2)
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
	return 0, errors.New("no VmSize in /proc/self/status")
}

// fenceSelf keeps the child to what kubectl needs, before it runs: no new
// privileges, and, where the kernel has Landlock, no file but its own
// scratch folder (kubectl diff's), the name service's few files, /dev/null
// and its own binary (the diff it starts), no TCP connection but to the API server's
// port, no port bound, no signal out; and, with seccomp, nothing listens.
// So `-f /etc/passwd` or an
// `-o jsonpath-file=` that Parse let through by mistake would still read
// nothing of the server's, and nothing could listen.
func fenceSelf(scratch string, apiPort uint16) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	rules := []landlock.Rule{
		landlock.RWDirs(scratch),
		landlock.ROFiles("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf").IgnoreIfMissing(),
		landlock.ROFiles(selfPath()).IgnoreIfMissing(),
		// The diff's stdin (os/exec opens it for a program given none).
		landlock.RWFiles("/dev/null"),
		// A binary linked against the C library (go build with cgo) needs
		// its loader and libraries to start the diff: public files.
		landlock.RODirs("/lib", "/lib64", "/usr/lib", "/usr/lib64").IgnoreIfMissing(),
		landlock.ROFiles("/etc/ld.so.cache").IgnoreIfMissing(),
	}
	if apiPort != 0 {
		rules = append(rules, landlock.ConnectTCP(apiPort))
	}
	if err := landlock.V11.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("Landlock: %w", err)
	}
	// Landlock lets a socket listen on a port the kernel picks; no
	// listener at all, whatever the kernel: listen and accept fail.
	noListener := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: []string{"listen", "accept", "accept4"}}},
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: noListener}); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// landlockOn says whether the kernel enforces Landlock.
func landlockOn() bool {
	abi, err := llsyscall.LandlockGetABIVersion()
	return err == nil && abi > 0
}
