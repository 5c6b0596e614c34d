package judge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
)

// The challenge level-triggering makes several spec changes while the
// namespace is paused. Their events are held, not replayed: on resume one
// reconcile reads the Database as it is now and reaches the final spec in
// one go, which is what level-triggered means.

const (
	// tide is the Database the learner changes while paused.
	tide = "tide"
	// heldChanges is how many spec changes the learner makes while paused.
	heldChanges = 3
)

func init() {
	RegisterPrepare("level-triggering", prepareLevelTriggering)
	RegisterCheck("level-triggering/paused", checkTidePaused)
	RegisterCheck("level-triggering/held-changes", checkTideHeldChanges)
	RegisterCheck("level-triggering/coalesced", checkTideCoalesced)
}

func prepareLevelTriggering(ctx context.Context, env PrepareEnv) error {
	if err := resumeAndWaitGone(ctx, env, tide); err != nil {
		return err
	}
	return createReady(ctx, env, newDatabase(env.Namespace, tide, 1, ""))
}

// pauseWindow is one stretch of the namespace being paused: the spec
// changes of tide held in it and, once resumed, where the resume is.
type pauseWindow struct {
	// generations are the distinct generations of tide's held events, in order.
	generations []int64
	// resumed is the log index of the resume, -1 while still paused.
	resumed int
	// reconciled is set when a reconcile of tide ran inside the window.
	reconciled bool
}

// pauseWindows splits the log into the namespace's pauses.
func (l stepLog) pauseWindows() []pauseWindow {
	var out []pauseWindow
	cur := -1
	for i, s := range l {
		switch {
		case isNamespacePhase(s, "paused"):
			out = append(out, pauseWindow{resumed: -1})
			cur = len(out) - 1
		case cur < 0:
		case isNamespacePhase(s, "resumed"):
			out[cur].resumed, cur = i, -1
		case isDatabaseEvent(s, tide) && s.Held:
			w := &out[cur]
			if n := len(w.generations); s.Generation > 0 && (n == 0 || s.Generation > w.generations[n-1]) {
				w.generations = append(w.generations, s.Generation)
			}
		case s.Type == controller.StepReconcileStart && s.Database == tide:
			out[cur].reconciled = true
		}
	}
	return out
}

// changes is how many spec changes a window held. Each change bumps the
// generation and its held event carries the new one, so every distinct
// generation held is one change.
func (w pauseWindow) changes() int { return len(w.generations) }

func (w pauseWindow) final() int64 {
	if len(w.generations) == 0 {
		return 0
	}
	return w.generations[len(w.generations)-1]
}

func checkTidePaused(_ context.Context, env Env) (Result, error) {
	if env.Paused || len(stepLog(env.Trace).pauseWindows()) > 0 {
		return Result{Done: true, Detail: "Your namespace was paused: events about " + tide + " are now held."}, nil
	}
	return Result{Detail: "Your namespace is not paused yet: press Pause my namespace."}, nil
}

// bestWindow is the pause that held the most changes of tide.
func (l stepLog) bestWindow() (pauseWindow, bool) {
	ws := l.pauseWindows()
	if len(ws) == 0 {
		return pauseWindow{}, false
	}
	return slices.MaxFunc(ws, func(a, b pauseWindow) int { return a.changes() - b.changes() }), true
}

func checkTideHeldChanges(_ context.Context, env Env) (Result, error) {
	w, ok := stepLog(env.Trace).bestWindow()
	switch {
	case !ok:
		return Result{Detail: "Pause your namespace first."}, nil
	case w.changes() < heldChanges && w.resumed >= 0:
		return Result{Detail: fmt.Sprintf("Your namespace was resumed after %s. Pause again and make %d changes before resuming.",
			lessons.Plural(w.changes(), "held change"), heldChanges)}, nil
	case w.changes() < heldChanges:
		return Result{Detail: fmt.Sprintf("%s of %s's spec held so far; make %d.", lessons.Plural(w.changes(), "change"), tide, heldChanges)}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("%d changes held while paused: %s went to generation %d and nothing reconciled it.",
		w.changes(), tide, w.final())}, nil
}

func checkTideCoalesced(_ context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	var w pauseWindow
	found := false
	for _, c := range l.pauseWindows() {
		if c.changes() >= heldChanges && c.resumed >= 0 {
			w, found = c, true
		}
	}
	if !found {
		return Result{Detail: fmt.Sprintf("Make %d changes to %s while paused, then press Resume.", heldChanges, tide)}, nil
	}
	if w.reconciled {
		return Result{Detail: "A reconcile of " + tide + " ran while your namespace was paused: pause again and make the changes then."}, nil
	}
	runs := l.reconciles(tide, w.resumed)
	if len(runs) == 0 || !runs[0].finished() {
		return Result{Detail: "Resumed: waiting for the reconcile of " + tide + "."}, nil
	}
	first := runs[0]
	start, _ := first.first(controller.StepReconcileStart)
	fetch, ok := first.first(controller.StepFetch)
	if !ok || fetch.Generation != w.final() {
		return Result{Detail: fmt.Sprintf("The first reconcile after the resume read generation %d, not the final %d.", fetch.Generation, w.final())}, nil
	}
	st, wrote := first.statusWrite()
	if !wrote || st.ObservedGeneration != w.final() {
		return Result{Detail: fmt.Sprintf("The first reconcile after the resume did not record observedGeneration %d.", w.final())}, nil
	}
	detail := fmt.Sprintf("One reconcile (%s: %s) read generation %d, acted on the spec as it is now and wrote observedGeneration %d: %d changes, one reconcile, no replay.",
		shortID(first.ID), start.Message, fetch.Generation, st.ObservedGeneration, w.changes())
	if diff := statefulSetDiff(first); len(diff) > 0 {
		detail += " Its StatefulSet went straight to the final spec: " + strings.Join(diff, "; ") + "."
	}
	return Result{Done: true, Detail: detail}, nil
}

// statefulSetDiff is what the run found different in tide's StatefulSet.
func statefulSetDiff(r reconcileRun) []string {
	for _, s := range r.Steps {
		if s.Type == controller.StepDiff && s.Target != nil && s.Target.Kind == "StatefulSet" {
			return s.Differences
		}
	}
	return nil
}
