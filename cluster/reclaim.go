package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Each cluster keeps its files in os.TempDir()/oplab-cluster-<owner pid>-<random>.
// The owner's pid in the name lets Reclaim judge a dir even when oplab died
// before writing the state file.
const dirPrefix = "oplab-cluster-"

// stateFile, in a cluster's dir, records who owns the dir and which
// processes it started.
const stateFile = "state.json"

type state struct {
	PID int `json:"pid"`
	// StartTime is the owner's start time (field 22 of /proc/<pid>/stat), so
	// a pid reused by another process does not keep a dead owner's dir alive.
	StartTime uint64    `json:"startTime"`
	Children  []procRef `json:"children"`
}

// procRef names one child process.
type procRef struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

// newStateDir creates a cluster dir owned by this process.
func newStateDir() (string, error) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-*", dirPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("creating cluster dir: %w", err)
	}
	if err := writeStateFile(dir, nil); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// writeStateFile records this process as the dir's owner, with children.
// It writes a temp file and renames it, so Reclaim never reads half a file.
func writeStateFile(dir string, children []procRef) error {
	st := state{PID: os.Getpid(), StartTime: procStartTime(os.Getpid()), Children: children}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding cluster state: %w", err)
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing cluster state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("writing cluster state: %w", err)
	}
	return nil
}

// writeState records every running child of c.
func (c *Cluster) writeState() error {
	return writeStateFile(c.dir, c.processes())
}

// processes lists the cluster's processes: etcd and kube-apiserver, then
// kcm, the scheduler and kwok.
func (c *Cluster) processes() []procRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	refs := append([]procRef{}, c.envtestPIDs...)
	for _, ch := range c.children {
		refs = append(refs, procRef{Name: ch.name, PID: ch.cmd.Process.Pid})
	}
	return refs
}

// recordEnvtestChildren finds etcd and kube-apiserver, which envtest started
// and does not expose: envtest's children are the wrapper shells whose
// command line names c.dir, and each shell's child is the binary.
func (c *Cluster) recordEnvtestChildren() error {
	var refs []procRef
	for _, shell := range procsMentioning(c.dir, os.Getpid()) {
		for _, pid := range procsMentioning(c.dir, shell) {
			refs = append(refs, procRef{Name: procName(pid), PID: pid})
		}
	}
	// Start order (etcd before kube-apiserver) happens to be name order.
	slices.SortFunc(refs, func(a, b procRef) int { return strings.Compare(a.Name, b.Name) })
	c.mu.Lock()
	c.envtestPIDs = refs
	c.mu.Unlock()
	return c.writeState()
}

// Reclaim cleans up after oplab processes that died without stopping their
// clusters (killed with SIGKILL, or on a platform without parent-death
// signals): for every cluster dir whose owner is gone, it kills the
// processes that still name that dir on their command line and removes the
// dir. Start calls it; it returns the dirs it removed.
func Reclaim() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("listing cluster dirs: %w", err)
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		stale, err := isStale(dir)
		if err != nil {
			errs = append(errs, err)
		}
		if !stale {
			continue
		}
		pids := procsMentioning(dir, 0)
		if st, err := readState(dir); err == nil {
			pids = append(pids, pidsOf(st.Children)...)
		}
		var killed []int
		for _, pid := range pids {
			// The pid may since have been reused: kill only a process
			// whose command line still names the dead cluster's dir.
			if mentions(pid, dir) {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, fmt.Errorf("killing leftover process %d: %w", pid, err))
				}
				killed = append(killed, pid)
			}
		}
		// A leftover etcd holds its data folder's files until it is
		// gone; the etcd started next must not find them locked.
		waitGone(killed, reclaimWait)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing leftover cluster dir: %w", err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// reclaimWait bounds how long Reclaim waits for the processes it killed.
const reclaimWait = 5 * time.Second

// waitGone waits until none of pids runs (zombies count as gone), at most d.
func waitGone(pids []int, d time.Duration) {
	until := time.Now().Add(d)
	for _, pid := range pids {
		for alive(pid, 0) && time.Now().Before(until) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// isStale reports whether dir is a cluster dir of ours whose owner has died.
func isStale(dir string) (bool, error) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false, nil
	}
	// In a shared /tmp, other users' clusters are theirs to reclaim.
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return false, nil
	}
	ownerField, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(dir), dirPrefix), "-")
	owner, err := strconv.Atoi(ownerField)
	if !ok || err != nil || owner <= 0 {
		return false, nil // not a name newStateDir makes
	}
	var startTime uint64
	if st, err := readState(dir); err == nil {
		if st.PID != owner {
			return false, fmt.Errorf("cluster dir %s: state names owner %d", dir, st.PID)
		}
		startTime = st.StartTime
	}
	return !alive(owner, startTime), nil
}

func readState(dir string) (state, error) {
	var st state
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, fmt.Errorf("reading cluster state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("reading cluster state: %w", err)
	}
	return st, nil
}

func pidsOf(refs []procRef) []int {
	pids := make([]int, 0, len(refs))
	for _, r := range refs {
		pids = append(pids, r.PID)
	}
	return pids
}

// alive reports whether pid runs and is not a zombie; a non-zero startTime
// must also match, which tells the owner from a process that reused its pid.
func alive(pid int, startTime uint64) bool {
	fields, ok := procStat(pid)
	if !ok || fields[0] == "Z" || fields[0] == "X" {
		return false
	}
	return startTime == 0 || procStartTime(pid) == startTime
}

// procStat returns the fields of /proc/<pid>/stat after the command name
// (which may itself contain spaces), so fields[0] is the state (field 3).
func procStat(pid int) ([]string, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return nil, false
	}
	return fields, true
}

// procStartTime returns field 22 of /proc/<pid>/stat, or 0 if unknown.
func procStartTime(pid int) uint64 {
	fields, ok := procStat(pid)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}

// procName returns the base name of pid's executable as its command line
// gives it.
func procName(pid int) string {
	args := procArgs(pid)
	if len(args) == 0 {
		return ""
	}
	return filepath.Base(args[0])
}

func procArgs(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// mentions reports whether pid's command line names a path inside dir.
func mentions(pid int, dir string) bool {
	for _, arg := range procArgs(pid) {
		if strings.Contains(arg, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// procsMentioning lists the processes whose command line names a path in
// dir, limited to the children of parent unless parent is 0.
func procsMentioning(dir string, parent int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if parent != 0 {
			fields, ok := procStat(pid)
			if !ok || fields[1] != strconv.Itoa(parent) {
				continue
			}
		}
		if mentions(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
