package instructor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/session"
)

// ResetState is where a learner's reset is.
type ResetState string

// The states of a reset.
const (
	ResetRunning ResetState = "running"
	ResetDone    ResetState = "done"
	ResetFailed  ResetState = "failed"
)

// ResetStatus is a namespace's latest reset, as the roster shows it.
type ResetStatus struct {
	State ResetState
	// Seq numbers the resets oplab ran, so the page can tell a new outcome
	// from the one it already announced.
	Seq            int
	Started, Ended time.Time
	// Total is how many Databases the reset deleted; Left names those still
	// there (while running, or when it failed).
	Total int
	Left  []string
	// Error says, in words, what failed.
	Error string
	// Forced is true for the way out of a failed reset: the finalizers
	// left were removed, so no final snapshot was taken that had not been
	// taken already.
	Forced bool
	// Unsnapshotted names the Databases a forced removal deleted without a
	// final snapshot, as the lab lists them; the others had theirs taken
	// before (oplab's finalizer runs before a foreign one lets go).
	Unsnapshotted []string
}

// resetKeep is how long the roster keeps showing a reset's outcome: long
// enough for the instructor to look back at the row, short enough that the
// map does not outlive the classes it served.
const resetKeep = 10 * time.Minute

// errResetRunning refuses a second reset of a namespace while one runs.
var errResetRunning = errors.New("a reset of this learner is already running")

// resets holds every namespace's latest reset. One goroutine (run) owns
// the map; the handlers and each reset's worker reach it through ops, so
// two Reset presses cannot both see "none running".
type resets struct {
	ops     chan func(map[string]*ResetStatus)
	stopped chan struct{}
	seq     int
}

func newResets() *resets {
	return &resets{ops: make(chan func(map[string]*ResetStatus)), stopped: make(chan struct{})}
}

// run owns the map until ctx ends.
func (rs *resets) run(ctx context.Context) {
	defer close(rs.stopped)
	m := map[string]*ResetStatus{}
	for {
		select {
		case f := <-rs.ops:
			f(m)
		case <-ctx.Done():
			return
		}
	}
}

// do runs f on the owner's goroutine and waits until it has.
func (rs *resets) do(f func(map[string]*ResetStatus)) error {
	done := make(chan struct{})
	select {
	case rs.ops <- func(m map[string]*ResetStatus) { f(m); close(done) }:
		<-done
		return nil
	case <-rs.stopped:
		return errors.New("oplab is stopping: no reset can start or report")
	}
}

// begin claims ns for a new reset, refusing while one runs there.
func (rs *resets) begin(ns string, now time.Time) (int, error) {
	return rs.start(ns, now, false)
}

// start claims ns for a new reset (forced: the removal of the finalizers
// left by a failed one), refusing while one runs there.
func (rs *resets) start(ns string, now time.Time, forced bool) (int, error) {
	var seq int
	var refusal error
	err := rs.do(func(m map[string]*ResetStatus) {
		if cur, ok := m[ns]; ok && cur.State == ResetRunning {
			refusal = fmt.Errorf("%w (%s, started at %s, %s): wait for it to end; its row says how it goes",
				errResetRunning, ns, cur.Started.Format(time.TimeOnly), databasesLeft(len(cur.Left), cur.Total))
			return
		}
		rs.seq++
		seq = rs.seq
		m[ns] = &ResetStatus{State: ResetRunning, Seq: seq, Started: now, Forced: forced}
	})
	return seq, errors.Join(err, refusal)
}

// progress records which Databases of reset seq are still there.
func (rs *resets) progress(ns string, seq, total int, left []string) {
	_ = rs.do(func(m map[string]*ResetStatus) {
		if cur, ok := m[ns]; ok && cur.Seq == seq {
			cur.Total, cur.Left = total, left
		}
	})
}

// finish records the outcome of reset seq; failure nil means done.
// unsnapshotted names the Databases deleted without a final snapshot.
func (rs *resets) finish(ns string, seq int, now time.Time, failure error, unsnapshotted ...string) {
	_ = rs.do(func(m map[string]*ResetStatus) {
		cur, ok := m[ns]
		if !ok || cur.Seq != seq {
			return
		}
		cur.State, cur.Ended, cur.Unsnapshotted = ResetDone, now, unsnapshotted
		if failure != nil {
			cur.State, cur.Error = ResetFailed, failure.Error()
		}
	})
}

// snapshot is a copy of every reset, dropping outcomes older than
// resetKeep.
func (rs *resets) snapshot(now time.Time) map[string]ResetStatus {
	out := map[string]ResetStatus{}
	_ = rs.do(func(m map[string]*ResetStatus) {
		maps.DeleteFunc(m, func(_ string, s *ResetStatus) bool {
			return s.State != ResetRunning && now.Sub(s.Ended) > resetKeep
		})
		for ns, s := range m {
			c := *s
			c.Left = append([]string(nil), s.Left...)
			c.Unsnapshotted = append([]string(nil), s.Unsnapshotted...)
			out[ns] = c
		}
	})
	return out
}

// Text is the status in words, as the learner's row shows it and the page
// announces it.
func (s ResetStatus) Text() string {
	switch s.State {
	case ResetRunning:
		if s.Forced {
			return "Removing the remaining finalizers… " + databasesLeft(len(s.Left), s.Total) + "."
		}
		if s.Total == 0 && len(s.Left) == 0 {
			return "Resetting… deleting the Databases."
		}
		return "Resetting… " + databasesLeft(len(s.Left), s.Total) + ": " + strings.Join(s.Left, ", ") + "."
	case ResetDone:
		at := s.Ended.Format(time.TimeOnly)
		if s.Forced {
			return "Finalizers removed at " + at + ": " + forcedOutcome(s.Total, s.Unsnapshotted) + "."
		}
		if s.Total == 0 {
			return "Reset done at " + at + ": there were no Databases to delete."
		}
		return "Reset done at " + at + ": " + databases(s.Total) + " deleted, final snapshots kept."
	case ResetFailed:
		if s.Forced {
			return "Removing the finalizers failed at " + s.Ended.Format(time.TimeOnly) + ": " + s.Error
		}
		return "Reset failed at " + s.Ended.Format(time.TimeOnly) + ": " + s.Error
	}
	return ""
}

// forcedOutcome says which of the total Databases a forced removal
// deleted without a final snapshot: oplab's finalizer may have taken one
// before the learner's held the Database.
func forcedOutcome(total int, without []string) string {
	switch {
	case total == 0:
		return "there were no Databases left"
	case len(without) == 0 && total == 1:
		return "1 Database deleted; its final snapshot had been taken before"
	case len(without) == 0:
		return databases(total) + " deleted; their final snapshots had been taken before"
	case len(without) == total:
		return databases(total) + " deleted without a final snapshot"
	}
	return databases(total) + " deleted, " + strconv.Itoa(len(without)) + " without a final snapshot (" + strings.Join(without, ", ") + "); the others' had been taken before"
}

// databasesLeft is "2 of 3 Databases left".
func databasesLeft(left, total int) string {
	if total == 0 {
		return "starting"
	}
	return strconv.Itoa(left) + " of " + databases(total) + " left"
}

func databases(n int) string {
	if n == 1 {
		return "1 Database"
	}
	return strconv.Itoa(n) + " Databases"
}

// unblock is the way out of a Reset that failed because finalizers oplab
// does not own (a learner's evil.example/never) or cannot run (a stopped
// controller) hold the Databases: it deletes every Database left, removes
// all of their finalizers (so no final snapshot is taken) and waits until
// they are gone. It is offered only after a Reset failed, answers 202
// (JSON) or 303 like Reset, and its progress shows in the same row.
func (h *Handler) unblock(w http.ResponseWriter, r *http.Request) {
	ro := h.opts.Roster
	ns := r.PathValue("namespace")
	// The roster's Deleter removes finalizers when it can patch too (a
	// controller-runtime client).
	p, ok := ro.Deleter.(labns.Patcher)
	if ro.States == nil || !ok {
		h.refuseReset(w, r, http.StatusNotImplemented, "removing finalizers is not available: this oplab has no cluster client for the roster")
		return
	}
	if !h.isLearners(w, r, ns) {
		return
	}
	seq, err := ro.resets.start(ns, ro.Now(), true)
	if err != nil {
		h.refuseReset(w, r, http.StatusConflict, err.Error())
		return
	}
	go func() {
		var removed []dbview.Database
		n, err := h.clearDatabases(h.base, ns, p, func(total int, left []string) { ro.resets.progress(ns, seq, total, left) },
			func(d dbview.Database) { removed = append(removed, d) })
		var without []string
		if err == nil {
			without = h.unsnapshotted(h.base, ns, removed)
		}
		ro.resets.finish(ns, seq, ro.Now(), err, without...)
		if err != nil {
			h.opts.Logger.Error(err, "Failed to remove the finalizers left in a learner's namespace", "namespace", ns)
			return
		}
		h.opts.Logger.Info("Removed the finalizers left in a learner's namespace from the instructor page", "namespace", ns, "databases", n, "withoutSnapshot", without)
	}()
	if httpx.WantsJSON(r) {
		httpx.JSON(w, http.StatusAccepted, resetAnswer{Namespace: ns, Seq: seq, Message: (&ResetStatus{State: ResetRunning, Forced: true}).Text()})
		return
	}
	http.Redirect(w, r, "/instructor?done=finalizers-removed#learner-"+ns, http.StatusSeeOther)
}

// clearDatabases deletes every Database of ns, removes all their
// finalizers and waits, as a reset does, until they are gone. Each
// Database it removes is passed to removed.
func (h *Handler) clearDatabases(ctx context.Context, ns string, p labns.Patcher, report func(total int, left []string), removed func(dbview.Database)) (int, error) {
	return h.removeDatabases(ctx, ns, report, func(ctx context.Context, d dbview.Database) error {
		removed(d)
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name, UID: types.UID(d.UID)}}
		if _, err := labns.RemoveFinalizers(ctx, p, db); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("could not %w", err)
		}
		return nil
	})
}

// SnapshotStates lists a namespace's final snapshots whose Database is gone
// and the Databases deleted without one, as the lab shows them
// (dbview.Watcher).
type SnapshotStates interface {
	Snapshots(ctx context.Context, namespace string) ([]dbview.Snapshot, error)
}

// snapshotSettle bounds the wait for the lab to list each removed Database
// as kept or lost: it sees the snapshot ConfigMaps on a watch of their own.
const snapshotSettle = 2 * time.Second

// unsnapshotted names the removed Databases, all gone, that left no final
// snapshot. Without a lab that lists snapshots, or when it does not settle,
// a Database not seen with its snapshot counts as without one: the row must
// not promise data that may be gone.
func (h *Handler) unsnapshotted(ctx context.Context, ns string, removed []dbview.Database) []string {
	names := make([]string, 0, len(removed))
	for _, d := range removed {
		names = append(names, d.Name)
	}
	ss, ok := h.opts.Roster.States.(SnapshotStates)
	if !ok || len(removed) == 0 {
		return names
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotSettle)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var without []string
		settled := true
		if snaps, err := ss.Snapshots(ctx, ns); err == nil {
			for _, d := range removed {
				kept, lost := snapshotOutcome(snaps, d)
				if !kept {
					without = append(without, d.Name)
				}
				settled = settled && (kept || lost)
			}
		} else {
			without, settled = names, false
		}
		if settled {
			return without
		}
		select {
		case <-ctx.Done():
			return without
		case <-tick.C:
		}
	}
}

// snapshotOutcome finds d among the lab's snapshots: kept, or listed lost.
// A snapshot that records no uid counts by its Database's name.
func snapshotOutcome(snaps []dbview.Snapshot, d dbview.Database) (kept, lost bool) {
	for _, s := range snaps {
		if s.Database != d.Name || (s.DatabaseUID != "" && s.DatabaseUID != d.UID) {
			continue
		}
		if s.Lost {
			lost = true
		} else {
			kept = true
		}
	}
	return kept, lost
}

// reset starts emptying a learner's namespace of Databases and answers at
// once; the work goes on in runReset, and the learner's row shows how far
// it got and how it ended. A second reset of the same namespace while one
// runs is refused (409) with the reason. The page's script asks for JSON;
// a form without script is redirected back to the page.
func (h *Handler) reset(w http.ResponseWriter, r *http.Request) {
	ro := h.opts.Roster
	ns := r.PathValue("namespace")
	if ro.States == nil || ro.Deleter == nil {
		h.refuseReset(w, r, http.StatusNotImplemented, "reset is not available: this oplab has no cluster client for the roster")
		return
	}
	if !h.isLearners(w, r, ns) {
		return
	}
	if !h.opts.Controller.Running() {
		h.refuseReset(w, r, http.StatusConflict, "the controller is stopped for everyone: start it first, or the Databases' finalizers never run and the reset cannot finish")
		return
	}
	seq, err := ro.resets.begin(ns, ro.Now())
	if err != nil {
		h.opts.Logger.Info("Refused a reset", "namespace", ns, "reason", err.Error())
		h.refuseReset(w, r, http.StatusConflict, err.Error())
		return
	}
	go h.runReset(ns, seq)
	h.opts.Logger.Info("Started a reset of a learner's namespace from the instructor page", "namespace", ns)
	if httpx.WantsJSON(r) {
		httpx.JSON(w, http.StatusAccepted, resetAnswer{Namespace: ns, Seq: seq, Message: (&ResetStatus{State: ResetRunning}).Text()})
		return
	}
	http.Redirect(w, r, "/instructor?done=reset-started#learner-"+ns, http.StatusSeeOther)
}

// resetAnswer is what the page's script gets back from a Reset.
type resetAnswer struct {
	Namespace string `json:"namespace"`
	// Seq numbers the reset just started (ResetStatus.Seq).
	Seq     int    `json:"seq,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// refuseReset says why a reset did not start: as JSON to the page's
// script, otherwise as the instructor page with the reason above the
// roster, so a browser without script is not left on a bare error.
func (h *Handler) refuseReset(w http.ResponseWriter, r *http.Request, code int, reason string) {
	if httpx.WantsJSON(r) {
		httpx.JSON(w, code, resetAnswer{Namespace: r.PathValue("namespace"), Error: reason})
		return
	}
	p := h.fullPage(r)
	if p.Roster != nil {
		p.Roster.Refusal = "Reset refused: " + reason
	}
	h.render(w, r, code, PageView(p))
}

// runReset empties ns of Databases: it resumes the namespace if paused (a
// paused namespace's finalizers would never run), deletes every Database
// and waits until the controller's finalizer has taken each one's final
// snapshot and let it go. The snapshots, the namespace and the learner's
// progress stay. It reports to the roster's resets as it goes.
func (h *Handler) runReset(ns string, seq int) {
	ro := h.opts.Roster
	if ro.Pauses != nil && ro.Pauses.NamespacePaused(ns) {
		ro.Pauses.ResumeNamespace(ns)
	}
	n, err := h.deleteDatabases(h.base, ns, func(total int, left []string) { ro.resets.progress(ns, seq, total, left) })
	ro.resets.finish(ns, seq, ro.Now(), err)
	if err != nil {
		h.opts.Logger.Error(err, "Failed to reset a learner's namespace", "namespace", ns)
		return
	}
	h.opts.Logger.Info("Reset a learner's namespace from the instructor page", "namespace", ns, "databases", n)
}

// deleteDatabases deletes every Database of ns and waits until they are
// gone, telling report which are left whenever that changes; it returns
// how many there were.
func (h *Handler) deleteDatabases(ctx context.Context, ns string, report func(total int, left []string)) (int, error) {
	return h.removeDatabases(ctx, ns, report, nil)
}

// removeDatabases is deleteDatabases, with then, when set, run on each
// Database after its delete (to remove its finalizers).
func (h *Handler) removeDatabases(ctx context.Context, ns string, report func(total int, left []string), then func(context.Context, dbview.Database) error) (int, error) {
	ro := h.opts.Roster
	dbs, err := ro.States.Databases(ctx, ns)
	if err != nil {
		return 0, fmt.Errorf("could not read the Databases of %s: %w", ns, err)
	}
	report(len(dbs), names(dbs))
	for _, d := range dbs {
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name}}
		uid := types.UID(d.UID)
		err := ro.Deleter.Delete(ctx, db, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("could not delete Database %s: %w", d.Name, err)
		}
		if then != nil {
			if err := then(ctx, d); err != nil {
				return 0, err
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, ro.ResetWait)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	said := names(dbs)
	// left is the last answer read: a read cut off by the wait's own end
	// must not turn "held by its finalizer" into "could not be read".
	var (
		left    []dbview.Database
		readErr error
	)
	for {
		now, err := ro.States.Databases(ctx, ns)
		if err == nil {
			left, readErr = now, nil
			if len(left) == 0 {
				return len(dbs), nil
			}
			if n := names(left); !slices.Equal(n, said) {
				report(len(dbs), n)
				said = n
			}
		} else if left == nil {
			readErr = err // no answer yet since the deletes
		}
		select {
		case <-ctx.Done():
			return 0, h.stuck(ns, left, readErr)
		case <-tick.C:
		}
	}
}

// stuck says why the Databases left did not go within ResetWait: which
// finalizer holds each, and what on oplab's side keeps it from running.
// readErr is the last failure to read them, if any.
func (h *Handler) stuck(ns string, left []dbview.Database, readErr error) error {
	ro := h.opts.Roster
	var why []string
	for _, d := range left {
		switch {
		case len(d.HeldBy) > 0:
			why = append(why, fmt.Sprintf("Database %s is still held by its finalizer %s", d.Name, strings.Join(d.HeldBy, ", ")))
		case d.Terminating:
			why = append(why, fmt.Sprintf("Database %s is still being deleted", d.Name))
		default:
			why = append(why, fmt.Sprintf("Database %s is not being deleted (was it created again after the reset began?)", d.Name))
		}
	}
	if len(why) == 0 {
		why = append(why, "the Databases could not be read")
	}
	switch {
	case !h.opts.Controller.Running():
		why = append(why, "the controller was stopped for everyone meanwhile")
	case ro.Pauses != nil && ro.Pauses.NamespacePaused(ns):
		why = append(why, "the namespace was paused again meanwhile")
	}
	if readErr != nil {
		return fmt.Errorf("after %s, %s: %w", ro.ResetWait, strings.Join(why, "; "), readErr)
	}
	return fmt.Errorf("after %s, %s", ro.ResetWait, strings.Join(why, "; "))
}

func names(dbs []dbview.Database) []string {
	out := make([]string, len(dbs))
	for i, d := range dbs {
		out[i] = d.Name
	}
	slices.Sort(out)
	return out
}

// isLearners reports whether ns is a learner session's namespace, and
// refuses the request (as a reset is refused) when it is not or the
// sessions cannot be read: the roster acts only on learners' namespaces.
func (h *Handler) isLearners(w http.ResponseWriter, r *http.Request, ns string) bool {
	list, err := h.opts.Roster.Learners.List(r.Context())
	if err != nil {
		h.refuseReset(w, r, http.StatusServiceUnavailable, "could not read the sessions: "+err.Error())
		return false
	}
	if !slices.ContainsFunc(list, func(s session.SessionInfo) bool { return s.Namespace == ns }) {
		h.refuseReset(w, r, http.StatusNotFound, fmt.Sprintf("namespace %q: no learner session has it (it may have ended)", ns))
		return false
	}
	return true
}
