package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
)

// The namespaces a child starts in: its own user namespace (its user is
// the parent's, mapped to itself, so it gains nothing on the host), a
// network namespace, where no interface is up, and an IPC namespace. A
// kernel or a container runtime that refuses them (a Pod under the
// RuntimeDefault seccomp profile refuses them to a user without
// CAP_SYS_ADMIN) gets the next set down; the child's own fence
// (fence_linux.go) holds either way.
//
// Not a PID namespace: the child would be PID 1 there while /proc, the
// host's, names it by its host PID, and the Landlock library's
// all-threads call reads /proc/<getpid()>/task, which would be the host's
// init. Its fence keeps its signals to itself instead.
var spaceSets = []struct {
	flags uintptr
	user  bool
	words string
}{
	{syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC, true,
		"user, network and IPC namespaces (no network interface)"},
	{syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC, false,
		"network and IPC namespaces (no network interface)"},
	{0, false, ""},
}

// spaceSet is the index of the fullest set this process was allowed; the
// sets refused are tried once each, on the first starts.
var spaceSet atomic.Int32

// startIn starts cmd in the fullest set of namespaces the kernel allows,
// in its own process group, killed when its parent dies, and names the
// namespaces. When the set it asked for was refused, retry is set and the
// next start asks for the set below: a failed cmd cannot be started again.
func startIn(cmd *exec.Cmd) (spaces string, retry bool, err error) {
	i := spaceSet.Load()
	set := spaceSets[i]
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: set.flags}
	if set.user {
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd.SysProcAttr = attr
	err = cmd.Start()
	if err == nil {
		return set.words, false, nil
	}
	if set.flags == 0 || !refusedSpaces(err) {
		return "", false, err
	}
	spaceSet.CompareAndSwap(i, i+1)
	return "", true, err
}

// refusedSpaces reports whether a start failed for want of the right to
// make namespaces (rather than, say, a missing binary).
func refusedSpaces(err error) bool {
	for _, e := range []error{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
