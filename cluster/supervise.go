package cluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Phase says what happened to a control-plane process after Start.
type Phase string

// The phases an Event reports, in the order they can follow each other.
const (
	// PhaseDown: the process exited while the cluster was running.
	PhaseDown Phase = "control-plane-down"
	// PhaseRestarted: the supervisor started it again on the same data.
	PhaseRestarted Phase = "control-plane-restarted"
	// PhaseFailed: it could not be restarted; the cluster is unusable and
	// Failed is closed.
	PhaseFailed Phase = "control-plane-failed"
)

// Event is one thing that happened to a control-plane process after Start
// returned. Options.OnEvent receives them.
type Event struct {
	Phase   Phase
	Process string // etcd, kube-apiserver, kube-controller-manager, kube-scheduler or kwok
	PID     int    // the process that exited (PhaseDown, PhaseFailed) or the new one (PhaseRestarted)
	Status  string // how it exited, in words: "exit status 1", "killed by signal 9 (killed)"
	Message string // one sentence for people
}

// Restart budget: a process that keeps dying is not restarted forever. The
// sixth exit of one process within a minute fails the cluster instead.
const (
	restartLimit  = 5
	restartWindow = time.Minute
	// restartBackoff is the pause before another try after a failed restart.
	restartBackoff = time.Second
	// pollInterval is how often the supervisor checks that etcd and
	// kube-apiserver still run (envtest reaps them, so no Wait of ours
	// returns): 100 ms is 20 reads of /proc a second, and an exit is
	// noticed well within a second.
	pollInterval = 100 * time.Millisecond
)

// exit is a process of the cluster having ended.
type exit struct {
	name   string
	pid    int
	status string
}

// Failed is closed when a control-plane process died and could not be
// restarted; Err then says why. A cluster that was stopped never fails.
func (c *Cluster) Failed() <-chan struct{} {
	return c.failed
}

// Err returns why the cluster failed, or nil while it has not.
func (c *Cluster) Err() error {
	select {
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}

// Healthy returns nil while every process of the cluster runs; otherwise
// it says which one is down (being restarted) or why the cluster failed.
// An API server that answers is not enough: one being restarted answers
// before it is ready, and might yet fail.
func (c *Cluster) Healthy() error {
	if err := c.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down != "" {
		return fmt.Errorf("%s is down; oplab is restarting it", c.down)
	}
	return nil
}

func (c *Cluster) setDown(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = name
}

// ErrControlPlaneFailed wraps the reason in Err.
var ErrControlPlaneFailed = errors.New("the control plane failed")

// superviseAll starts watching every process and the one goroutine that
// restarts them; Stop ends both.
func (c *Cluster) superviseAll() {
	exits := make(chan exit)
	for _, p := range c.processes() {
		c.watch(p, exits)
	}
	c.superDone = make(chan struct{})
	go c.supervise(exits)
}

// watch reports on exits when the process p ends, unless Stop came first.
func (c *Cluster) watch(p procRef, exits chan<- exit) {
	if ch := c.child(p.Name); ch != nil {
		go func() {
			select {
			case <-ch.done:
			case <-c.quit:
				return
			}
			select {
			case exits <- exit{name: p.Name, pid: p.PID, status: waitStatus(ch.err)}:
			case <-c.quit:
			}
		}()
		return
	}
	// etcd and kube-apiserver: poll /proc, then read the exit status their
	// wrapper shell writes once it has reaped them.
	started := procStartTime(p.PID)
	go func() {
		ticker := time.NewTicker(pollInterval)
		defer ticker.Stop()
		for alive(p.PID, started) {
			select {
			case <-ticker.C:
			case <-c.quit:
				return
			}
		}
		status := c.readExitFile(p.Name, p.PID)
		select {
		case exits <- exit{name: p.Name, pid: p.PID, status: status}:
		case <-c.quit:
		}
	}()
}

// readExitFile waits briefly for the wrapper of name (pid) to write its exit
// status.
func (c *Cluster) readExitFile(name string, pid int) string {
	path := fmt.Sprintf("%s.%d", c.exitFile(name), pid)
	until := time.Now().Add(2 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if code, cerr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && cerr == nil {
			_ = os.Remove(path)
			return exitStatus(code)
		}
		if time.Now().After(until) {
			return "exit status unknown"
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// child returns the running child named name (kcm, scheduler, kwok), or nil.
func (c *Cluster) child(name string) *child {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.children {
		if ch.name == name {
			return ch
		}
	}
	return nil
}

// supervise owns restarts: for each unexpected exit it says so (log and
// OnEvent), starts the process again on the same data and ports, and fails
// the cluster when that is impossible or the process keeps dying.
func (c *Cluster) supervise(exits chan exit) {
	defer close(c.superDone)
	recent := map[string][]time.Time{}
	for {
		var e exit
		select {
		case <-c.quit:
			return
		case e = <-exits:
		}
		c.setDown(e.name)
		where := "the control-plane log"
		if c.logPath != "" {
			where = c.logPath
		}
		c.log.printf("Control plane down: %s (pid %d) exited unexpectedly: %s; its output is in %s", e.name, e.pid, e.status, where)
		c.emit(Event{Phase: PhaseDown, Process: e.name, PID: e.pid, Status: e.status,
			Message: fmt.Sprintf("%s exited unexpectedly: %s; oplab is restarting it on the same data", e.name, e.status)})

		// A restart that fails (the new process died before it was
		// ready, say) counts as one more exit and is tried again, until
		// the budget is spent.
		var lastErr error
		for {
			now := time.Now()
			times := append(recent[e.name], now)
			for len(times) > 0 && now.Sub(times[0]) > restartWindow {
				times = times[1:]
			}
			recent[e.name] = times
			if len(times) > restartLimit {
				err := fmt.Errorf("%s exited or failed to start %d times within %s", e.name, len(times), restartWindow)
				if lastErr != nil {
					err = fmt.Errorf("%w, last: %w", err, lastErr)
				}
				c.fail(e, err)
				return
			}
			err := c.restart(e.name, exits)
			if err == nil { // restart cleared the down mark before it said so
				break
			}
			lastErr = err
			c.log.printf("Could not restart %s: %v; trying again", e.name, err)
			select {
			case <-c.quit:
				return
			case <-time.After(restartBackoff):
			}
		}
	}
}

// restart starts name again and watches the new process.
func (c *Cluster) restart(name string, exits chan<- exit) error {
	began := time.Now()
	var p procRef
	switch name {
	case nameEtcd, nameAPIServer:
		var err error
		c.spawner.do(func() {
			if name == nameEtcd {
				err = c.env.ControlPlane.Etcd.Start()
			} else {
				err = c.env.ControlPlane.APIServer.Start()
			}
		})
		if rerr := c.recordEnvtestChildren(); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("restarting %s: %w", name, err)
		}
		for _, r := range c.processes() {
			if r.Name == name {
				p = r
			}
		}
		if p.PID == 0 {
			return fmt.Errorf("restarting %s: started, but its process is not to be found", name)
		}
	default:
		cmd, ok := c.commands[name]
		if !ok {
			return fmt.Errorf("restarting %s: no such process", name)
		}
		ch, err := c.spawner.start(cmd.name, cmd.path, cmd.args, cmd.env, c.log)
		if err != nil {
			return fmt.Errorf("restarting %s: %w", name, err)
		}
		c.mu.Lock()
		for i, old := range c.children {
			if old.name == name {
				c.children[i] = ch
			}
		}
		c.mu.Unlock()
		if err := c.writeState(); err != nil {
			return err
		}
		p = procRef{Name: name, PID: ch.cmd.Process.Pid}
	}
	c.watch(p, exits)
	c.log.printf("Restarted %s (pid %d) in %s", name, p.PID, since(began))
	// Up again before anyone hears so: a listener that asks Healthy on the
	// event must not be told the process is still down.
	c.setDown("")
	c.emit(Event{Phase: PhaseRestarted, Process: name, PID: p.PID,
		Message: fmt.Sprintf("%s is running again (restarted in %s)", name, since(began))})
	return nil
}

// fail records that the cluster cannot go on, says so, and closes Failed.
func (c *Cluster) fail(e exit, err error) {
	c.failErr = fmt.Errorf("%w: %s (pid %d) exited (%s) and was not restarted: %w", ErrControlPlaneFailed, e.name, e.pid, e.status, err)
	c.log.printf("Control plane failed: %v", c.failErr)
	c.emit(Event{Phase: PhaseFailed, Process: e.name, PID: e.pid, Status: e.status,
		Message: fmt.Sprintf("%s could not be restarted (%v); oplab is stopping", e.name, err)})
	close(c.failed)
}

func (c *Cluster) emit(e Event) {
	if c.onEvent != nil {
		c.onEvent(e)
	}
}
