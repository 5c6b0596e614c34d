package cluster

import "syscall"

// childProcAttr puts a child in its own process group, so Stop can signal it
// and anything it forks, and asks Linux to SIGKILL it when the thread that
// started it (the spawner's) exits, as it does when oplab dies.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
