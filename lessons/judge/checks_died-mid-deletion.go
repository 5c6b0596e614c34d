package judge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oplab-dev/oplab/controller"
)

// The challenge died-mid-deletion is the course's second interview tip: the
// controller is gone (here: the learner's namespace is paused) when a delete
// arrives, so the Database hangs in Terminating; the right recovery brings
// the controller back, which finishes the finalizer and keeps the snapshot,
// where the escape hatch (removing the finalizer by hand) loses it.

// ledger is the Database the challenge deletes.
const ledger = "ledger"

func init() {
	RegisterPrepare("died-mid-deletion", prepareDiedMidDeletion)
	RegisterCheck("died-mid-deletion/paused", checkLedgerPaused)
	RegisterCheck("died-mid-deletion/stuck", checkLedgerStuck)
	RegisterCheck("died-mid-deletion/finalized", checkLedgerFinalized)
	RegisterCheck("died-mid-deletion/snapshot", checkLedgerSnapshot)
}

// prepareDiedMidDeletion makes a Ready ledger with its finalizer, and no
// snapshot of an earlier ledger, so the snapshot the check finds is this
// run's.
func prepareDiedMidDeletion(ctx context.Context, env PrepareEnv) error {
	if err := resumeAndWaitGone(ctx, env, ledger); err != nil {
		return err
	}
	old := &corev1.ConfigMap{}
	old.Namespace, old.Name = env.Namespace, controller.SnapshotName(ledger)
	if err := env.Client.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the snapshot of an earlier %s: %w", ledger, err)
	}
	return createReady(ctx, env, newDatabase(env.Namespace, ledger, 1, ""))
}

// resumeAndWaitGone resumes the namespace (a challenge starts with the
// controller running) and waits until no Database called name is left from
// before: the wipe that precedes a prepare may still be finalizing it.
func resumeAndWaitGone(ctx context.Context, env PrepareEnv, name string) error {
	if env.Resume != nil {
		if err := env.Resume(ctx); err != nil {
			return fmt.Errorf("resuming the namespace: %w", err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, prepareWait, true, func(ctx context.Context) (bool, error) {
		_, found, err := getDatabase(ctx, env.Client, env.Namespace, name)
		return err == nil && !found, nil
	})
	if err != nil {
		return fmt.Errorf("an earlier database %s was still there after %s: %w", name, prepareWait, err)
	}
	return nil
}

func checkLedgerPaused(_ context.Context, env Env) (Result, error) {
	if env.Paused || slices.ContainsFunc(env.Trace, func(s controller.Step) bool { return isNamespacePhase(s, "paused") }) {
		return Result{Done: true, Detail: "Your namespace was paused: from now on nothing reconciles " + ledger + "."}, nil
	}
	return Result{Detail: "Your namespace is not paused yet: press Pause my namespace."}, nil
}

func checkLedgerStuck(ctx context.Context, env Env) (Result, error) {
	if deletedWhilePaused(stepLog(env.Trace), ledger) {
		return Result{Done: true, Detail: ledger + " was deleted while nothing could reconcile it: it waited in Terminating."}, nil
	}
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, ledger)
	if err != nil {
		return Result{}, err
	}
	switch {
	case !found:
		return Result{Detail: ledger + " is gone without having waited in Terminating while paused. Restart the challenge to try again."}, nil
	case db.DeletionTimestamp.IsZero() && env.Paused:
		return Result{Detail: "Your namespace is paused. Now delete " + ledger + "."}, nil
	case db.DeletionTimestamp.IsZero():
		return Result{Detail: "Pause your namespace, then delete " + ledger + "."}, nil
	case !controllerutil.ContainsFinalizer(db, controller.Finalizer):
		return Result{Detail: ledger + " is being deleted but holds no " + controller.Finalizer + " finalizer any more."}, nil
	case env.Paused:
		return Result{Done: true, Detail: fmt.Sprintf("%s is Terminating (deletionTimestamp %s), held by %s, and nothing reconciles it.",
			ledger, db.DeletionTimestamp.UTC().Format(time.RFC3339), controller.Finalizer)}, nil
	}
	return Result{Detail: ledger + " is being deleted while the controller runs for it, so it is not stuck: pause your namespace first."}, nil
}

// deletedWhilePaused reports whether the trace shows db's deletion arriving
// while the namespace was paused: a held event on the Database, and the
// first reconcile after the resume running the finalizer. A spec change
// held instead of a delete would reconcile without any finalizer phase.
func deletedWhilePaused(l stepLog, db string) bool {
	paused, held := false, false
	for i, s := range l {
		switch {
		case isNamespacePhase(s, "paused"):
			paused, held = true, false
		case paused && isDatabaseEvent(s, db) && s.Held:
			held = true
		case isNamespacePhase(s, "resumed"):
			if paused && held {
				if runs := l.reconciles(db, i); len(runs) > 0 && len(runs[0].phases()) > 0 {
					return true
				}
			}
			paused, held = false, false
		}
	}
	return false
}

// finalizerAfterResume returns the finalizer phases db's reconciles went
// through after the namespace's first resume, in order; resumed is false
// when it was never resumed.
func finalizerAfterResume(l stepLog, db string) (phases []string, resumed bool) {
	at := slices.IndexFunc(l, func(s controller.Step) bool { return isNamespacePhase(s, "resumed") })
	if at < 0 {
		return nil, false
	}
	for _, r := range l.reconciles(db, at) {
		phases = append(phases, r.phases()...)
	}
	return phases, true
}

// escapeHatch is the Detail for a Database let go by hand.
const escapeHatch = " is gone, but the controller never removed its finalizer: it was removed by hand (the escape hatch), " +
	"so the final snapshot was never taken. Restart the challenge and recover with Resume instead."

func checkLedgerFinalized(ctx context.Context, env Env) (Result, error) {
	phases, resumed := finalizerAfterResume(stepLog(env.Trace), ledger)
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, ledger)
	if err != nil {
		return Result{}, err
	}
	snap, removed := slices.Index(phases, "snapshot"), slices.Index(phases, "removed")
	switch {
	case !found && snap >= 0 && removed > snap:
		return Result{Done: true, Detail: "After the resume the controller finished the job: " + joinPhases(phases) + ", and " + ledger + " is gone."}, nil
	case !found:
		return Result{Detail: ledger + escapeHatch}, nil
	case env.Paused && !db.DeletionTimestamp.IsZero():
		return Result{Detail: ledger + " is still Terminating: press Resume to bring the controller back for your namespace."}, nil
	case !resumed:
		return Result{Detail: "Waiting for you to resume your namespace."}, nil
	case len(phases) == 0:
		return Result{Detail: "The controller is back; waiting for it to start finalizing " + ledger + "."}, nil
	}
	return Result{Detail: "The controller is finalizing " + ledger + ": " + joinPhases(phases) + " so far."}, nil
}

func checkLedgerSnapshot(ctx context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	phases, _ := finalizerAfterResume(l, ledger)
	var cm corev1.ConfigMap
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: controller.SnapshotName(ledger)}, &cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("reading snapshot configmap: %w", err)
	}
	_, found, gerr := getDatabase(ctx, env.Client, env.Namespace, ledger)
	if gerr != nil {
		return Result{}, gerr
	}
	switch {
	case apierrors.IsNotFound(err) && !found && !slices.Contains(phases, "removed"):
		return Result{Detail: ledger + escapeHatch}, nil
	case apierrors.IsNotFound(err):
		return Result{Detail: "No ConfigMap " + controller.SnapshotName(ledger) + " yet: the snapshot is written once the Pods are drained."}, nil
	case !slices.Contains(phases, "snapshot"):
		return Result{Detail: "ConfigMap " + cm.Name + " exists, but the trace shows no snapshot taken by the finalizer after the resume."}, nil
	case cm.Data["spec"] == "":
		return Result{Detail: "ConfigMap " + cm.Name + " holds no spec: it is not a snapshot the controller wrote."}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("%s survived %s: it keeps generation %s's spec, taken at %s, and nothing owns it.",
		cm.Name, ledger, cm.Data["generation"], cm.Data["time"])}, nil
}

// joinPhases writes phases as the timeline reads them, a phase repeated in
// a row (draining, looked at until the Pods are gone) once with its count:
// "draining ×3 → snapshot → removed".
func joinPhases(phases []string) string {
	var parts []string
	for i := 0; i < len(phases); {
		j := i
		for j < len(phases) && phases[j] == phases[i] {
			j++
		}
		part := phases[i]
		if j-i > 1 {
			part += fmt.Sprintf(" ×%d", j-i)
		}
		parts = append(parts, part)
		i = j
	}
	return strings.Join(parts, " → ")
}
