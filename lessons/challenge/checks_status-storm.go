package challenge

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
// pitfall: errors and retries, but no status writes). The learner finds the
// thrasher from the trace, switches its pitfall off and only its, and the
// check then waits one resync period, the controller's own, read from the
// trace, for any status write that changes nothing but timestamps.

// stormNames are the Databases of the challenge; the prepare picks which
// one thrashes and which one is the noisy decoy, so the answer is in the
// trace and not in this file.
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

// thrasher returns the Database the trace shows with the status-thrash
// pitfall: its fetches carry the pitfall's name.
func (l stepLog) thrasher() (string, bool) {
	i := slices.IndexFunc(l, func(s controller.Step) bool {
		return s.Type == controller.StepFetch && s.Pitfall == controller.PitfallStatusThrash && s.Database != ""
	})
	if i < 0 {
		return "", false
	}
	return l[i].Database, true
}

// decoys returns the Databases other than the thrasher that the trace
// shows with a pitfall, and that pitfall.
func (l stepLog) decoys(thrasher string) map[string]string {
	out := map[string]string{}
	for _, s := range l {
		if s.Type == controller.StepFetch && s.Pitfall != "" && s.Database != thrasher {
			out[s.Database] = s.Pitfall
		}
	}
	return out
}

// switchedOff returns when the thrasher's pitfall was switched off: the
// time of its first fetch without the pitfall after the last one with it.
func (l stepLog) switchedOff(thrasher string) (time.Time, bool) {
	last := -1
	for i, s := range l {
		if s.Type == controller.StepFetch && s.Database == thrasher && s.Pitfall == controller.PitfallStatusThrash {
			last = i
		}
	}
	for _, s := range l[last+1:] {
		if s.Type == controller.StepFetch && s.Database == thrasher && s.Found == "found" && s.Pitfall == "" {
			return s.Time, true
		}
	}
	return time.Time{}, false
}

func checkStormSwitchedOff(ctx context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	thrasher, ok := l.thrasher()
	if !ok {
		return Result{Detail: "The trace shows no Database with the status-thrash pitfall yet."}, nil
	}
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, thrasher)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return Result{Detail: "The thrashing Database is gone: deleting it stops the storm, but so would switching off the controller. Restart the challenge and switch its pitfall off instead."}, nil
	}
	switch p := db.Annotations[controller.PitfallAnnotation]; p {
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
		case d.Annotations[controller.PitfallAnnotation] != pitfall:
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

func checkStormQuiet(_ context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	thrasher, ok := l.thrasher()
	if !ok {
		return Result{Detail: "The trace shows no Database with the status-thrash pitfall yet."}, nil
	}
	off, ok := l.switchedOff(thrasher)
	if !ok {
		return Result{Detail: "Waiting for a reconcile of " + thrasher + " without its pitfall."}, nil
	}
	resync, ok := l.resyncPeriod()
	if !ok {
		return Result{Detail: "Waiting for a reconcile to report the controller's resync period."}, nil
	}
	var rewrites []string
	looked := false
	for _, s := range l {
		if s.Time.Before(off) {
			continue
		}
		if timestampOnly(s) || (s.Type == controller.StepStatus && s.Pitfall == controller.PitfallStatusThrash) {
			rewrites = append(rewrites, fmt.Sprintf("%s at %s UTC", s.Database, s.Time.UTC().Format(time.TimeOnly)))
		}
		if s.Type == controller.StepStatus && s.Database == thrasher && s.Skipped {
			looked = true
		}
	}
	if len(rewrites) > 0 {
		return Result{Detail: "Status was still rewritten with nothing changed but the timestamps after " + thrasher +
			"'s pitfall went off: " + strings.Join(rewrites, ", ") + "."}, nil
	}
	quiet := time.Since(off)
	if quiet < resync || !looked {
		return Result{Detail: fmt.Sprintf("No status rewrite for %s of the resync period (%s): waiting for the resync to come and find nothing to write.",
			quiet.Truncate(time.Second), resync)}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("A whole resync period (%s) without a status write that changed nothing: reconciles of %s still run, and skip the write.",
		resync, thrasher)}, nil
}
