package judge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
)

// The challenge drift-repair deletes a child behind the controller's back
// and proves, from the trace, that one reconcile put it back and touched
// nothing else: the Secret keeps its password, the Service stays.

// shop is the Database whose StatefulSet the learner deletes.
const shop = "shop"

func init() {
	RegisterPrepare("drift-repair", prepareDriftRepair)
	RegisterCheck("drift-repair/child-deleted", checkShopChildDeleted)
	RegisterCheck("drift-repair/repaired-once", checkShopRepairedOnce)
	RegisterCheck("drift-repair/ready-again", checkShopReadyAgain)
}

func prepareDriftRepair(ctx context.Context, env PrepareEnv) error {
	if err := resumeAndWaitGone(ctx, env, shop); err != nil {
		return err
	}
	return createReady(ctx, env, newDatabase(env.Namespace, shop, 1, ""))
}

// statefulSetDeleted returns the index of the first delete event of shop's
// StatefulSet once shop was Ready, -1 when there is none.
func statefulSetDeleted(l stepLog) int { return l.childDeletedAfterReady(shop, "StatefulSet") }

func checkShopChildDeleted(_ context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	at := statefulSetDeleted(l)
	if at < 0 {
		return Result{Detail: "StatefulSet " + shop + " has not been deleted yet."}, nil
	}
	return Result{Done: true, Detail: "StatefulSet " + shop + " was deleted at " + l[at].Time.UTC().Format(time.TimeOnly) +
		" UTC: the delete event reached the controller."}, nil
}

// repairRun returns the reconciles of shop after the StatefulSet's deletion
// that acted (wrote to a child), and the first of them.
func repairRuns(l stepLog) (acting []reconcileRun, ok bool) {
	at := statefulSetDeleted(l)
	if at < 0 {
		return nil, false
	}
	for _, r := range l.reconciles(shop, at) {
		if len(r.actions()) > 0 {
			acting = append(acting, r)
		}
	}
	return acting, true
}

func isStatefulSetCreate(s controller.Step) bool {
	return s.Action == "create" && s.Target != nil && s.Target.Kind == "StatefulSet" && s.Target.Name == shop &&
		s.Outcome == controller.OutcomeCreated
}

func describeAction(s controller.Step) string {
	if s.Target == nil {
		return fmt.Sprintf("%s (%s)", s.Action, s.Outcome)
	}
	return fmt.Sprintf("%s %s %s (%s)", s.Action, s.Target.Kind, s.Target.Name, s.Outcome)
}

func checkShopRepairedOnce(_ context.Context, env Env) (Result, error) {
	acting, deleted := repairRuns(stepLog(env.Trace))
	if !deleted {
		return Result{Detail: "Delete StatefulSet " + shop + " first."}, nil
	}
	if len(acting) == 0 || !acting[0].finished() {
		return Result{Detail: "Waiting for a reconcile to put StatefulSet " + shop + " back."}, nil
	}
	first := acting[0]
	var others []string
	for _, a := range first.actions() {
		if !isStatefulSetCreate(a) {
			others = append(others, describeAction(a))
		}
	}
	switch {
	case !slices.ContainsFunc(first.actions(), isStatefulSetCreate):
		return Result{Detail: "The first reconcile that acted after the delete did not create StatefulSet " + shop + ": it did " +
			strings.Join(others, ", ") + "."}, nil
	case len(others) > 0:
		return Result{Detail: "The reconcile that put StatefulSet " + shop + " back also did " + strings.Join(others, ", ") +
			": a repair should change only what drifted."}, nil
	case len(acting) > 1:
		var later []string
		for _, r := range acting[1:] {
			for _, a := range r.actions() {
				later = append(later, describeAction(a))
			}
		}
		return Result{Detail: fmt.Sprintf("StatefulSet %s was put back, but %s after it acted again: %s.",
			shop, lessons.Plural(len(acting)-1, "more reconcile"), strings.Join(later, ", "))}, nil
	}
	detail := fmt.Sprintf("Reconcile %s put StatefulSet %s back with one create and touched nothing else.", shortID(first.ID), shop)
	if synced := inSync(first); len(synced) > 0 {
		detail += " It compared " + strings.Join(synced, " and ") + " and found them in sync."
	}
	if st, ok := first.statusWrite(); ok {
		detail += " Its status write only reported what it saw: " + describeConditions(st.Conditions) + "."
	}
	return Result{Done: true, Detail: detail}, nil
}

func checkShopReadyAgain(ctx context.Context, env Env) (Result, error) {
	acting, deleted := repairRuns(stepLog(env.Trace))
	if !deleted || len(acting) == 0 {
		return Result{Detail: "Waiting for StatefulSet " + shop + " to be put back."}, nil
	}
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, shop)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return Result{Detail: "Database " + shop + " is gone: restart the challenge."}, nil
	}
	wroteReady := false
	for _, r := range stepLog(env.Trace).reconciles(shop, acting[0].At) {
		if st, ok := r.statusWrite(); ok && slices.ContainsFunc(st.Conditions, func(c controller.ConditionChange) bool {
			return c.Type == controller.ConditionReady && c.To == "True"
		}) {
			wroteReady = true
		}
	}
	if !isReady(db) || !wroteReady {
		msg := "no Ready condition yet"
		if c := readyCondition(db); c != nil {
			msg = fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
		}
		return Result{Detail: shop + " is " + msg + " — waiting for the new StatefulSet's Pod."}, nil
	}
	return Result{Done: true, Detail: shop + " is Ready again: a later reconcile saw the new StatefulSet's Pod ready and wrote Ready=True."}, nil
}

// shortID is the first eight characters of a reconcile ID, as the timeline shows it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// describeConditions says what a status write changed: "Ready True → False (WaitingForReplicas)".
func describeConditions(cs []controller.ConditionChange) string {
	if len(cs) == 0 {
		return "no condition changed"
	}
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		from := c.From
		if from == "" {
			from = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s (%s)", c.Type, from, c.To, c.Reason))
	}
	return strings.Join(parts, ", ")
}

// inSync lists the children the run compared and found unchanged.
func inSync(r reconcileRun) []string {
	var out []string
	for _, s := range r.Steps {
		if s.Type == controller.StepDiff && s.Target != nil && len(s.Differences) == 0 {
			out = append(out, s.Target.Kind+" "+s.Target.Name)
		}
	}
	return out
}
