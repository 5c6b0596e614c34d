//go:build !linux

package cluster

import "syscall"

// childProcAttr puts a child in its own process group, so Stop can signal it
// and anything it forks. Without Linux's parent-death signal, children of an
// oplab killed outright live on until Reclaim runs at the next Start.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
