package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// childStopGrace is how long a child gets between SIGTERM and SIGKILL.
const childStopGrace = 10 * time.Second

// setprivPath is util-linux's setpriv, which the wrapper scripts use to give
// etcd and kube-apiserver a parent-death signal.
const setprivPath = "/usr/bin/setpriv"

// spawner starts every child process of one cluster from a single goroutine
// locked to its OS thread. Linux delivers the parent-death signal when the
// *thread* that forked a child exits, not the process; Go ends a thread only
// when a goroutine locked to it returns, so an ordinary goroutine's thread
// could be ended by unrelated code that locks it later. Keeping the forking
// thread locked for the cluster's whole life means the signal fires exactly
// when oplab dies or Stop closes the spawner.
type spawner struct {
	reqs chan func()
	once sync.Once
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan func())}
	go func() {
		// Never unlocked: the thread ends with this goroutine, which kills
		// (by parent-death signal) any child still running at that point.
		runtime.LockOSThread()
		for f := range s.reqs {
			f()
		}
	}()
	return s
}

// do runs f on the spawner's thread and waits for it to return.
func (s *spawner) do(f func()) {
	done := make(chan struct{})
	s.reqs <- func() {
		defer close(done)
		f()
	}
	<-done
}

// close ends the spawner's thread; call it once no child should be running.
func (s *spawner) close() {
	s.once.Do(func() { close(s.reqs) })
}

// child is a process the cluster execs itself (kcm, scheduler, kwok).
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // cmd.Wait's result, valid once done is closed
}

// start execs path on the spawner's thread in its own process group (so a
// terminal's Ctrl-C reaches oplab only, which then stops children in order)
// with a parent-death signal. Its output goes to log, prefixed with name.
func (s *spawner) start(name, path string, args, env []string, log *logger) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	out := log.prefixed(name)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childProcAttr()
	var err error
	s.do(func() { err = cmd.Start() })
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	ch := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		// The supervisor (or, during Start, waitNodeSchedulable) says
		// in the log how an unexpected exit ended.
		ch.err = cmd.Wait()
		close(ch.done)
	}()
	return ch, nil
}

// exited reports whether the child has ended, and how.
func (ch *child) exited() (bool, error) {
	select {
	case <-ch.done:
		if ch.err == nil {
			return true, fmt.Errorf("%s exited", ch.name)
		}
		return true, fmt.Errorf("%s exited: %w", ch.name, ch.err)
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the child's process group, then SIGKILL if it has
// not exited after grace, and waits until it is reaped.
func (ch *child) stop(grace time.Duration) error {
	pgid := -ch.cmd.Process.Pid
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s: %w", ch.name, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-ch.done:
		return nil
	case <-timer.C:
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", ch.name, err)
	}
	<-ch.done
	return fmt.Errorf("%s ignored SIGTERM for %s and was killed", ch.name, grace)
}

// writeWrapper writes the scripts through which envtest starts bin (etcd or
// kube-apiserver) into dir, and returns the path to give envtest. envtest
// execs the binary itself, offers no hook for its SysProcAttr and reaps it
// without telling anyone how it ended, so:
//   - the first script execs a shell under setpriv with a parent-death
//     signal, so nothing outlives an oplab killed with SIGKILL (without
//     setpriv, Reclaim at the next Start is the only cleanup);
//   - that shell runs bin under setpriv again (its parent is now the shell),
//     waits for it and writes how it ended into exitFile.<bin's pid> ("0",
//     "1", or 128 plus the signal number), which the supervisor reads.
//
// envtest signals the whole process group, so its SIGTERM reaches bin
// directly; the shell only notes it (trap :) and keeps waiting until bin has
// exited. env (KEY=value) is exported first.
func writeWrapper(dir, bin, exitFile string, env ...string) (string, error) {
	run := shellQuote(bin) + ` "$@" &`
	if _, err := os.Stat(setprivPath); err == nil {
		run = setprivPath + " --pdeathsig KILL -- " + run
	}
	var script strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		script.WriteString("export " + k + "=" + shellQuote(v) + "\n")
	}
	script.WriteString("trap : TERM INT\n")
	script.WriteString(run + "\npid=$!\n")
	script.WriteString(`while :; do
	wait "$pid"; status=$?
	kill -0 "$pid" 2>/dev/null || break
done
`)
	// Named by bin's pid: envtest also runs the wrapper with --help to
	// probe bin's flags, and that run must not pass for the real one.
	script.WriteString("echo \"$status\" > " + shellQuote(exitFile) + "\".$pid\"\nexit \"$status\"\n")

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("writing %s wrapper: %w", filepath.Base(bin), err)
	}
	name := filepath.Base(bin)
	runPath := filepath.Join(dir, name+".run")
	if err := os.WriteFile(runPath, []byte(script.String()), 0o600); err != nil {
		return "", fmt.Errorf("writing %s wrapper: %w", name, err)
	}
	line := "exec /bin/sh " + shellQuote(runPath) + ` "$@"`
	if _, err := os.Stat(setprivPath); err == nil {
		line = "exec " + setprivPath + " --pdeathsig KILL -- /bin/sh " + shellQuote(runPath) + ` "$@"`
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+line+"\n"), 0o700); err != nil {
		return "", fmt.Errorf("writing %s wrapper: %w", name, err)
	}
	return path, nil
}

// exitStatus puts a wrapper's exit file, or a shell's $?, in words.
func exitStatus(code int) string {
	if code > 128 {
		return killedBy(syscall.Signal(code - 128))
	}
	return fmt.Sprintf("exit status %d", code)
}

// killedBy names the signal that ended a process, by its usual name when
// it has one ("killed by signal 9 (SIGKILL)").
func killedBy(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
		syscall.SIGABRT: "SIGABRT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGHUP: "SIGHUP", syscall.SIGBUS: "SIGBUS",
	}
	name, ok := names[sig]
	if !ok {
		name = sig.String()
	}
	return fmt.Sprintf("killed by signal %d (%s)", int(sig), name)
}

// waitStatus puts cmd.Wait's result in words.
func waitStatus(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return killedBy(ws.Signal())
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// logger serialises progress lines and the children's output, a line at a
// time, so lines from different processes never mix. Children's output goes
// to cw, which is w unless the caller gave a separate writer.
type logger struct {
	mu      sync.Mutex
	w, cw   io.Writer
	writers []*prefixWriter
}

func newLogger(w, childW io.Writer) *logger {
	if childW == nil {
		childW = w
	}
	return &logger{w: w, cw: childW}
}

// printf writes one progress line.
func (l *logger) printf(format string, args ...any) {
	if l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

// prefixed returns a writer for one child's output, or nil (which exec and
// envtest turn into /dev/null) when there is no log.
func (l *logger) prefixed(name string) io.Writer {
	if l.cw == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	pw := &prefixWriter{l: l, prefix: "[" + name + "] "}
	l.writers = append(l.writers, pw)
	return pw
}

// flush writes out any unterminated last lines.
func (l *logger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pw := range l.writers {
		if len(pw.buf) > 0 {
			fmt.Fprintf(l.cw, "%s%s\n", pw.prefix, pw.buf)
			pw.buf = nil
		}
	}
}

// prefixWriter buffers one child's output and writes it out line by line.
type prefixWriter struct {
	l      *logger
	prefix string
	buf    []byte // an unterminated line, guarded by l.mu
}

func (pw *prefixWriter) Write(p []byte) (int, error) {
	pw.l.mu.Lock()
	defer pw.l.mu.Unlock()
	pw.buf = append(pw.buf, p...)
	for {
		i := bytes.IndexByte(pw.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(pw.l.cw, "%s%s\n", pw.prefix, pw.buf[:i])
		pw.buf = pw.buf[i+1:]
	}
	return len(p), nil
}

// tailWriter keeps the last lines a child wrote, so an error about a child
// that would not start can say what the child said, even when its output
// goes nowhere else.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

// tailKeep bounds what a tailWriter keeps: a few of etcd's JSON log lines.
const tailKeep = 4 << 10

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailKeep; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is what was kept, from its first whole line.
func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) == tailKeep {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}

// Reset forgets what was kept.
func (t *tailWriter) Reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

// teeTo writes to w as well as t, where w may be nil (no log).
func (t *tailWriter) teeTo(w io.Writer) io.Writer {
	if w == nil {
		return t
	}
	return io.MultiWriter(w, t)
}
