package controller

import (
	"fmt"
	"slices"
	"testing"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// TestManyCreatesAndDeletesMakeNoMistakes creates and deletes 20 Databases
// at once, the load under which a stale informer cache shows: the
// controller must not write a status twice, write a snapshot twice, or
// fail a reconcile on its own earlier write.
func TestManyCreatesAndDeletesMakeNoMistakes(t *testing.T) {
	t.Parallel() // its own namespace and controller (newEnv); it mostly waits on resyncs and Pods
	const n = 20
	e := newEnv(t)
	e.startController(e.testOptions())
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("many-%02d", i)
		e.mustCreate(newDB(names[i], 1, ""))
	}
	for _, name := range names {
		e.expectReady(name)
	}
	for _, name := range names {
		e.expectSettled(name)
	}
	statusWrites := map[string]int{}
	for _, name := range names {
		for _, s := range e.sink.forDatabase(name) {
			if s.Type == StepStatus && !s.Skipped {
				statusWrites[name]++
			}
		}
	}

	for _, name := range names {
		if err := e.c.Delete(e.ctx, e.getDB(name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		e.expectGone(&dbv1.Database{}, name)
		e.expectSnapshot(name)
	}
	// Every Database is reconciled once more after it is gone (the delete
	// event), on a cache that may still hold it with its finalizer.
	for _, name := range names {
		polltest.Until(e.t, deadline, "a reconcile finding "+name+" gone", func() (bool, error) {
			return slices.ContainsFunc(e.sink.forDatabase(name), func(s Step) bool {
				return s.Type == StepFetch && s.Found == "not-found"
			}), nil
		})
	}

	var errors, snapshots, badStatus, badSnapshot int
	for _, name := range names {
		steps := e.sink.forDatabase(name)
		errs := countSteps(steps, func(s Step) bool { return s.Result == "error" || s.Outcome == OutcomeError || s.Error != "" })
		snaps := countSteps(steps, func(s Step) bool {
			return s.Type == StepAction && s.Target != nil && s.Target.Name == SnapshotName(name) &&
				(s.Outcome == OutcomeCreated || s.Outcome == OutcomeUpdated)
		})
		errors += errs
		snapshots += snaps
		if errs > 0 {
			t.Errorf("%s: %d error rows:\n%s", name, errs, describe(steps))
		}
		if snaps != 1 {
			badSnapshot++
			t.Errorf("%s: %d snapshot writes, want 1:\n%s", name, snaps, describe(steps))
		}
		if statusWrites[name] != 2 {
			badStatus++
			t.Errorf("%s: %d status writes before the delete, want 2 (Progressing, then Ready)", name, statusWrites[name])
		}
	}
	total := 0
	for _, w := range statusWrites {
		total += w
	}
	t.Logf("%d Databases: %d error rows (results, actions, status), %d snapshot writes (%d Databases not exactly one), %d status writes (%d Databases not exactly two)",
		n, errors, snapshots, badSnapshot, total, badStatus)
}
