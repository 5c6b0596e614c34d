package sandbox

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// The probe is compiled into this package's test binary only, which is
// also the child these tests start (TestMain): it tries, from inside the
// fenced child, what an escape from the interpreter would try first.
func init() { childProbe = probeTheFence }

// landlockOnlyArg starts the test binary as a child whose fence has
// Landlock and namespaces but not seccomp's allow-list, so the tests see
// that each layer holds by itself.
const landlockOnlyArg = ChildArg + "-landlock-only"

// probeTheFence tries each escape and says what the kernel answered:
// "allowed", or the error. addr is a TCP listener of the parent's.
func probeTheFence(addr string) string {
	out := map[string]string{}
	say := func(what string, err error) {
		if err == nil {
			out[what] = "allowed"
		} else {
			out[what] = err.Error()
		}
	}
	ppid := os.Getppid()
	fd, err := syscall.Open("/etc/hostname", syscall.O_RDONLY, 0)
	if err == nil {
		syscall.Close(fd)
	}
	say("open", err)
	// The parent's environment: oplab's, in a Pod its token's path.
	fd, err = syscall.Open("/proc/"+strconv.Itoa(ppid)+"/environ", syscall.O_RDONLY, 0)
	if err == nil {
		syscall.Close(fd)
	}
	say("open the parent's environ", err)
	sock, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	say("socket", err)
	// connect on a socket when the kernel gave one, else on stdin: seccomp
	// refuses the call itself, whatever its file.
	if sock < 0 {
		sock = 0
	}
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	ip := net.ParseIP(host).To4()
	say("connect", syscall.Connect(sock, &syscall.SockaddrInet4{Port: p, Addr: [4]byte{ip[0], ip[1], ip[2], ip[3]}}))
	say("execve", syscall.Exec("/bin/true", []string{"true"}, []string{}))
	_, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_ATTACH, uintptr(ppid), 0)
	say("ptrace the parent", errno(e))
	say("kill the parent", syscall.Kill(ppid, 0))
	// A new process (not a thread): should the kernel allow it, the copy
	// leaves at once.
	r, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e == 0 && r == 0 {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
	}
	say("fork", errno(e))
	b, _ := json.Marshal(out)
	return string(b)
}

func errno(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// probe starts a child with cmd, compiles code in it (the fence is up
// before any code is read) and runs the probe there.
func probe(t *testing.T, cmd func() *exec.Cmd) (map[string]string, *Sandbox) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &Sandbox{Command: cmd}
	t.Cleanup(s.Close)
	compileOK(t, s, learner("", "\treturn ctrl.Result{}, nil"))
	if err := s.p.enc.Encode(message{Op: opProbe, Source: l.Addr().String()}); err != nil {
		t.Fatal(err)
	}
	var m message
	if err := s.p.read(&m); err != nil || m.Op != opProbed {
		t.Fatalf("the probe answered %+v, %v", m, err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(m.Output), &got); err != nil {
		t.Fatal(err)
	}
	return got, s
}

// The child, fenced: every escape is refused by the kernel.
func TestTheFenceRefusesEveryEscape(t *testing.T) {
	t.Parallel()
	got, s := probe(t, testSandboxCommand)
	t.Logf("fence: %s; probe: %v", strings.Join(s.Fence(), "; "), got)
	for _, what := range []string{"open", "open the parent's environ", "socket", "connect", "execve", "ptrace the parent", "kill the parent", "fork"} {
		if got[what] != syscall.EPERM.Error() {
			t.Errorf("%s from the fenced child: %q; want %q (seccomp's answer)", what, got[what], syscall.EPERM.Error())
		}
	}
	fence := strings.Join(s.Fence(), "; ")
	for _, layer := range []string{"no_new_privs", "seccomp allow-list"} {
		if !strings.Contains(fence, layer) {
			t.Errorf("the fence says %q; want %s among its layers", fence, layer)
		}
	}
	// Its own network namespace, with no interface up, where the kernel
	// allows one (here it does: the tests run as root, or with user
	// namespaces).
	mine, _ := os.Readlink("/proc/self/ns/net")
	its, err := os.Readlink("/proc/" + strconv.Itoa(s.p.cmd.Process.Pid) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if its == mine || !strings.Contains(fence, "network") {
		t.Errorf("the child shares oplab's network namespace (%s) or does not say it has its own (%q)", its, fence)
	}
}

// Landlock alone, without seccomp's allow-list in front: files, TCP and
// signals out of the child are still refused.
func TestLandlockAloneRefusesFilesTCPAndSignals(t *testing.T) {
	t.Parallel()
	if abi, _ := llsyscall.LandlockGetABIVersion(); abi < 6 {
		t.Skipf("this kernel's Landlock is ABI %d; TCP needs 4 and signals 6", abi)
	}
	got, s := probe(t, func() *exec.Cmd { return exec.Command(os.Args[0], landlockOnlyArg) })
	t.Logf("fence: %s; probe: %v", strings.Join(s.Fence(), "; "), got)
	if strings.Contains(strings.Join(s.Fence(), " "), "seccomp") {
		t.Fatal("the Landlock-only child raised seccomp too")
	}
	for what, want := range map[string]syscall.Errno{
		"open": syscall.EACCES, "open the parent's environ": syscall.EACCES, "execve": syscall.EACCES,
		"kill the parent": syscall.EPERM, "ptrace the parent": syscall.EPERM,
	} {
		if got[what] != want.Error() {
			t.Errorf("%s with Landlock alone: %q; want %q", what, got[what], want.Error())
		}
	}
	// The socket is made (Landlock does not govern that), the connection
	// refused: by Landlock, or first by the empty network namespace.
	if got["connect"] == "allowed" {
		t.Errorf("connect to the parent's listener with Landlock alone: allowed")
	}
}
