package judge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// The challenge status-storm hides one status-thrash Database among
// others, one of them noisy for another reason (the non-idempotent-create
// pitfall: errors and retries, but no status writes). All three are marked
// with controller.PitfallHiddenAnnotation, so the trace and the lab say
// "pitfall: hidden" of each alike: the learner finds the thrasher from what
// it does, switches its pitfall off and only its, and the check then waits
// one resync period, the controller's own, read from the trace, for any
// status write that changes nothing but timestamps. The checks find the
// Databases as the learner does, by their behaviour on the trace, and read
// the pitfalls now on from the API.

// stormNames are the Databases of the challenge; the prepare picks which
// one thrashes and which one is the noisy decoy, so the answer is in the
// trace's behaviour and not in this file.
var stormNames = []string{"alpha", "bravo", "charlie"}

func init() {
	RegisterPrepare("status-storm", prepareStatusStorm)
	RegisterCheck("status-storm/switched-off", checkStormSwitchedOff)
	RegisterCheck("status-storm/quiet", checkStormQuiet)
}

func prepareStatusStorm(ctx context.Context, env PrepareEnv) error {
	for _, name := range stormNames {
		if err := resumeAndWaitGone(ctx, env, name); err != nil {
			return err
		}
	}
	order := rand.Perm(len(stormNames))
	pitfalls := map[string]string{
		stormNames[order[0]]: controller.PitfallStatusThrash,
		stormNames[order[1]]: controller.PitfallNonIdempotentCreate,
	}
	for _, name := range stormNames {
		db := newDatabase(env.Namespace, name, 1, pitfalls[name])
		if db.Annotations == nil {
			db.Annotations = map[string]string{}
		}
		db.Annotations[controller.PitfallHiddenAnnotation] = "true"
		if err := env.Client.Create(ctx, db); err != nil {
			return fmt.Errorf("creating database %s: %w", name, err)
		}
	}
	// The start is reached once the thrasher has written status a few
	// times: the storm is then plain on the timeline.
	thrasher := stormNames[order[0]]
	return waitDatabase(ctx, env.Client, env.Namespace, thrasher, "thrashing", func(d *dbv1.Database) bool {
		return d.Status.ObservedGeneration == d.Generation && readyCondition(d) != nil
	})
}

// thrasher returns the Database the trace shows thrashing, as a learner
// tells it: the first to write a status that moved a condition's
// lastTransitionTime without changing its status. The correct controller
// never writes that.
func (l stepLog) thrasher() (string, bool) {
	i := slices.IndexFunc(l, func(s controller.Step) bool { return timestampOnly(s) && s.Database != "" })
	if i < 0 {
		return "", false
	}
	return l[i].Database, true
}

// decoys returns the Databases other than the thrasher that the trace
// shows with the non-idempotent-create pitfall, and that pitfall: a
// reconcile that created a child, got AlreadyExists and failed on it. The
// correct controller takes AlreadyExists as convergence and goes on.
func (l stepLog) decoys(thrasher string) map[string]string {
	out := map[string]string{}
	for _, name := range stormNames {
		if name == thrasher {
			continue
		}
		for _, run := range l.reconciles(name, 0) {
			res, ok := runResult(run)
			failed := ok && res.Result == "error"
			if failed && slices.ContainsFunc(run.actions(), func(s controller.Step) bool {
				return s.Action == "create" && s.Outcome == controller.OutcomeAlreadyExists
			}) {
				out[name] = controller.PitfallNonIdempotentCreate
				break
			}
		}
	}
	return out
}

func checkStormSwitchedOff(ctx context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	thrasher, ok := l.thrasher()
	if !ok {
		return Result{Detail: "The trace shows no status rewrite that changed nothing yet: watch the status lines."}, nil
	}
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, thrasher)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return Result{Detail: "The thrashing Database is gone: deleting it stops the storm, but so would switching off the controller. Restart the challenge and switch its pitfall off instead."}, nil
	}
	switch p := controller.PitfallOf(db); p {
	case "":
	case controller.PitfallStatusThrash:
		return Result{Detail: "One of the Databases still writes status on every reconcile. Compare their status lines: one keeps writing with its observedGeneration unchanged and nothing flipped, only new timestamps."}, nil
	default:
		return Result{Detail: fmt.Sprintf("%s was the one, and its storm is over, but it now has the %s pitfall: switch its pitfall off altogether (none).", thrasher, p)}, nil
	}
	for name, pitfall := range l.decoys(thrasher) {
		d, found, err := getDatabase(ctx, env.Client, env.Namespace, name)
		if err != nil {
			return Result{}, err
		}
		switch {
		case !found:
			return Result{Detail: fmt.Sprintf("%s's pitfall is off, and that was the storm. But %s, noisy with its %s pitfall, was deleted: it wrote no status, so it was never part of the storm. Restart the challenge and leave it alone.",
				thrasher, name, pitfall)}, nil
		case controller.PitfallOf(d) != pitfall:
			return Result{Detail: fmt.Sprintf("%s's pitfall is off, and that was the storm. But %s's %s pitfall was changed too: it is noisy (errors and retries), yet it writes no status. Switch it back on with the lab's pitfall menu: only the thrasher was to be fixed.",
				thrasher, name, pitfall)}, nil
		}
	}
	return Result{Done: true, Detail: thrasher + " was the one: its status-thrash pitfall is off, and the other Databases are as they were."}, nil
}

// resyncPeriod is the controller's resync period as the trace reports it:
// a successful reconcile ends "done" with the resync as its requeue.
func (l stepLog) resyncPeriod() (time.Duration, bool) {
	var d time.Duration
	for _, s := range l {
		if s.Type == controller.StepResult && s.Result == "done" && s.RequeueAfter > d {
			d = s.RequeueAfter
		}
	}
	return d, d > 0
}

// timestampOnly reports whether a status step rewrote a condition without
// changing its status: only its lastTransitionTime moved, the thrash's mark.
func timestampOnly(s controller.Step) bool {
	if s.Type != controller.StepStatus || s.Skipped || s.Error != "" {
		return false
	}
	return slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
		return !c.Transition && c.FromLastTransitionTime != "" && c.LastTransitionTime != c.FromLastTransitionTime
	})
}

// checkStormQuiet reads only the trace: while the pitfall is on, the
// thrasher rewrites its status every ThrashInterval, so a reconcile of it
// that skips the write a whole resync period after its last rewrite is
// proof enough that the pitfall is off.
func checkStormQuiet(_ context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	thrasher, ok := l.thrasher()
	if !ok {
		return Result{Detail: "The trace shows no status rewrite that changed nothing yet: watch the status lines."}, nil
	}
	resync, ok := l.resyncPeriod()
	if !ok {
		return Result{Detail: "Waiting for a reconcile to report the controller's resync period."}, nil
	}
	// The storm ended with the thrasher's last rewrite; any rewrite after
	// it, by another Database, is a storm still going.
	var end controller.Step
	var rewrites []string
	for _, s := range l {
		switch {
		case !timestampOnly(s):
		case end.Database == "" && s.Database != thrasher:
		case s.Database == thrasher:
			end, rewrites = s, nil
		default:
			rewrites = append(rewrites, fmt.Sprintf("%s at %s UTC", s.Database, s.Time.UTC().Format(time.TimeOnly)))
		}
	}
	if len(rewrites) > 0 {
		return Result{Detail: "Status was still rewritten with nothing changed but the timestamps after " + thrasher +
			"'s storm ended: " + strings.Join(rewrites, ", ") + "."}, nil
	}
	// The proof is a reconcile of the thrasher a whole resync period after
	// the storm's last write (the resync itself, at the latest) that found
	// nothing to write.
	looked := slices.ContainsFunc(l, func(s controller.Step) bool {
		return s.Type == controller.StepStatus && s.Database == thrasher && s.Skipped && !s.Held && !s.Time.Before(end.Time.Add(resync))
	})
	if !looked {
		return Result{Detail: fmt.Sprintf("No status rewrite for %s of the resync period (%s): waiting for the resync to come and find nothing to write.",
			time.Since(end.Time).Truncate(time.Second), resync)}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("A whole resync period (%s) without a status write that changed nothing: reconciles of %s still run, and skip the write.",
		resync, thrasher)}, nil
}
