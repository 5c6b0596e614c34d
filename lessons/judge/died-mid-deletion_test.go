package judge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestDiedMidDeletion pauses, deletes, and recovers with Resume, as the
// challenge asks.
func TestDiedMidDeletion(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "died-mid-deletion", func(ctx context.Context, env judgetest.SolveEnv) error {
		if err := env.Pause(ctx); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "pause"); err != nil {
			return err
		}
		if err := deleteLedger(ctx, env.Learner, env.Namespace); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "delete"); err != nil {
			return err
		}
		if err := env.Resume(ctx); err != nil {
			return err
		}
		if err := env.WaitDone(ctx, "recover"); err != nil {
			return err
		}
		uid, err := snapshotUID(ctx, env, "ledger")
		if err != nil {
			return err
		}
		return judgetest.SolveInput(ctx, env, "snapshot", noSuchUID, uid)
	})
}

// TestDiedMidDeletionEscapeHatch takes the wrong way out, the finalizer
// removed by hand with the learner's own kubectl identity, and expects the recovery and snapshot checks to refuse
// it and say why.
func TestDiedMidDeletionEscapeHatch(t *testing.T) {
	t.Parallel() // its own namespace
	e := judgetest.Shared(t)
	c, ok := e.Set.Get("died-mid-deletion")
	if !ok {
		t.Fatal("no challenge died-mid-deletion")
	}
	ns := e.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), judgetest.Deadline)
	defer cancel()
	started, err := c.Start(ctx, e.PrepareEnv(ns))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	learner, err := e.Learner(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	e.Runner.PauseNamespace(ns)
	if err := deleteLedger(ctx, learner, ns); err != nil {
		t.Fatal(err)
	}
	db := &dbv1.Database{}
	if err := learner.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ledger"}, db); err != nil {
		t.Fatalf("ledger should be Terminating while paused: %v", err)
	}
	if r := mustCheck(t, ctx, "died-mid-deletion/stuck", e.CheckEnv(t, ns, started)); !r.Done {
		t.Fatalf("stuck not done while ledger is Terminating and paused: %s", r.Detail)
	}
	patch := client.MergeFrom(db.DeepCopy())
	db.Finalizers = nil
	if err := learner.Patch(ctx, db, patch); err != nil {
		t.Fatalf("escape hatch, as the learner: %v", err)
	}
	e.Runner.ResumeNamespace(ns)
	// Wait for the resume's reconcile of ledger to find it gone.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, s := range e.CheckEnv(t, ns, started).Trace {
			if s.Type == controller.StepFetch && s.Database == "ledger" && s.Found == "not-found" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no reconcile of ledger after the resume found it gone: %v", err)
	}
	env := e.CheckEnv(t, ns, started)
	for _, name := range []string{"died-mid-deletion/finalized", "died-mid-deletion/snapshot"} {
		r := mustCheck(t, ctx, name, env)
		if r.Done || !strings.Contains(r.Detail, "escape hatch") {
			t.Errorf("check %s after the escape hatch: done=%v, detail %q; want not done, naming the escape hatch", name, r.Done, r.Detail)
		}
	}
}

func deleteLedger(ctx context.Context, c client.Client, ns string) error {
	db := &dbv1.Database{}
	db.Namespace, db.Name = ns, "ledger"
	if err := c.Delete(ctx, db); err != nil {
		return fmt.Errorf("delete ledger: %w", err)
	}
	return nil
}

func mustCheck(t *testing.T, ctx context.Context, name string, env judge.Env) judge.Result {
	t.Helper()
	check, ok := judge.LookupCheck(name)
	if !ok {
		t.Fatalf("no check %s", name)
	}
	r, err := check(ctx, env)
	if err != nil {
		t.Fatalf("check %s: %v", name, err)
	}
	return r
}
