package judge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
)

// The challenge backoff is the course's "Errors, backoff and resync": with
// the non-idempotent-create pitfall switched on, every reconcile of tally
// fails (Create answers AlreadyExists), and the work queue retries it with a
// backoff that doubles each time; switched off, the next reconcile
// converges, the failures are forgotten, and from then on the Database is
// reconciled again at each periodic resync, with no event at all.

// tally is the Database the challenge breaks and mends.
const tally = "tally"

// backoffStreak is how many failed reconciles in a row, each backoff longer
// than the last, the first task asks to see.
const backoffStreak = 3

func init() {
	RegisterPrepare("backoff", prepareBackoff)
	RegisterCheck("backoff/growing", checkBackoffGrowing)
	RegisterCheck("backoff/converged", checkBackoffConverged)
	RegisterCheck("backoff/resync", checkBackoffResync)
}

// prepareBackoff makes a Ready tally with no pitfall: the failures the
// checks look for are the learner's own doing, so none are done at the
// start.
func prepareBackoff(ctx context.Context, env PrepareEnv) error {
	if err := resumeAndWaitGone(ctx, env, tally); err != nil {
		return err
	}
	return createReady(ctx, env, newDatabase(env.Namespace, tally, 1, ""))
}

// runResult returns the run's result step; ok is false while it runs.
func runResult(r reconcileRun) (controller.Step, bool) { return r.first(controller.StepResult) }

// growingStreak finds the first backoffStreak failed reconciles of db in a
// row whose backoff grows strictly. It returns the index (in runs) of the
// streak's last run, or -1, and the longest streak seen so far with its
// backoffs, for the Detail.
func growingStreak(runs []reconcileRun) (end int, best []time.Duration) {
	var streak []time.Duration
	for i, r := range runs {
		res, ok := runResult(r)
		if !ok {
			continue
		}
		if res.Result != "error" {
			streak = nil
			continue
		}
		if n := len(streak); n > 0 && res.RequeueAfter <= streak[n-1] {
			streak = nil
		}
		streak = append(streak, res.RequeueAfter)
		if len(streak) > len(best) {
			best = append([]time.Duration(nil), streak...)
		}
		if len(streak) >= backoffStreak {
			return i, best
		}
	}
	return -1, best
}

func joinDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, " → ")
}

func checkBackoffGrowing(_ context.Context, env Env) (Result, error) {
	end, best := growingStreak(stepLog(env.Trace).reconciles(tally, 0))
	switch {
	case end >= 0:
		return Result{Done: true, Detail: fmt.Sprintf("%d failed reconciles of %s in a row, each retried later than the last: backoff %s.",
			len(best), tally, joinDurations(best))}, nil
	case len(best) == 0:
		return Result{Detail: "No reconcile of " + tally + " has failed yet: switch on its " + controller.PitfallNonIdempotentCreate + " pitfall."}, nil
	}
	return Result{Detail: fmt.Sprintf("%s failed so far (backoff %s); waiting for %d failures in a row with a growing backoff.",
		lessons.Plural(len(best), "reconcile"), joinDurations(best), backoffStreak)}, nil
}

// convergedRun returns the index (in runs) of db's first reconcile after
// the growing streak that finished done with no pitfall switched on, or -1.
func convergedRun(runs []reconcileRun) int {
	end, _ := growingStreak(runs)
	if end < 0 {
		return -1
	}
	for i := end + 1; i < len(runs); i++ {
		if res, ok := runResult(runs[i]); ok && res.Result == "done" && res.Pitfall == "" {
			return i
		}
	}
	return -1
}

func checkBackoffConverged(ctx context.Context, env Env) (Result, error) {
	runs := stepLog(env.Trace).reconciles(tally, 0)
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, tally)
	if err != nil {
		return Result{}, err
	}
	switch {
	case !found:
		return Result{Detail: tally + " is gone: restart the challenge to try again."}, nil
	case controller.PitfallOf(db) != "":
		return Result{Detail: tally + " still has the " + controller.PitfallOf(db) + " pitfall switched on: switch it off."}, nil
	}
	at := convergedRun(runs)
	switch {
	case at < 0:
		if end, _ := growingStreak(runs); end < 0 {
			return Result{Detail: "Waiting for the failures with a growing backoff first (task 1)."}, nil
		}
		return Result{Detail: "The pitfall is off; waiting for a reconcile of " + tally + " that ends done."}, nil
	case !isReady(db):
		return Result{Detail: "A reconcile of " + tally + " ended done; waiting for Ready True for its generation."}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("With the pitfall off, the reconcile triggered by %s ended done and %s is Ready: the failures are forgotten.",
		runs[at].trigger(), tally)}, nil
}

// trigger says what started the run, in words.
func (r reconcileRun) trigger() string {
	s, ok := r.first(controller.StepReconcileStart)
	switch {
	case !ok:
		return "something"
	case s.FirstEvent != "":
		return "the event " + s.FirstEvent
	}
	return "a " + s.Trigger
}

func checkBackoffResync(_ context.Context, env Env) (Result, error) {
	runs := stepLog(env.Trace).reconciles(tally, 0)
	at := convergedRun(runs)
	if at < 0 {
		return Result{Detail: "Waiting for " + tally + " to converge first (task 2)."}, nil
	}
	for _, r := range runs[at+1:] {
		if s, ok := r.first(controller.StepReconcileStart); ok && s.Trigger == controller.TriggerResync {
			return Result{Done: true, Detail: fmt.Sprintf("At %s a reconcile of %s started with no event and no error: the periodic resync.",
				s.Time.UTC().Format(time.TimeOnly), tally)}, nil
		}
	}
	res, _ := runResult(runs[at])
	return Result{Detail: fmt.Sprintf("%s converged; the next resync is due %s after that reconcile, with no event needed.",
		tally, res.RequeueAfter)}, nil
}
