package judge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestStatusStorm finds the thrasher as a learner reads the timeline, by a
// status write that moved a condition's lastTransitionTime without changing
// its status, and switches its pitfall off.
func TestStatusStorm(t *testing.T) {
	t.Parallel() // its own namespace (judgetest.Run); it mostly waits on backoffs and resyncs
	judgetest.Run(t, "status-storm", func(ctx context.Context, env judgetest.SolveEnv) error {
		thrasher, err := findThrasher(ctx, env)
		if err != nil {
			return err
		}
		return setPitfall(ctx, env.Learner, env.Namespace, thrasher, "")
	})
}

// TestStatusStormDecoy switches off every pitfall, the decoy's too, and
// expects the first task to say the decoy was not the storm.
func TestStatusStormDecoy(t *testing.T) {
	t.Parallel() // its own namespace
	e := judgetest.Shared(t)
	c, _ := e.Set.Get("status-storm")
	ns := e.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), judgetest.Deadline)
	defer cancel()
	started, err := c.Start(ctx, e.PrepareEnv(ns))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	// The test, unlike the learner, may read the answer from the API.
	var decoy string
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		var db dbv1.Database
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &db); err != nil {
			t.Fatal(err)
		}
		if db.Annotations[controller.PitfallHiddenAnnotation] != "true" {
			t.Errorf("%s: annotations %v, want its pitfall hidden", name, db.Annotations)
		}
		if controller.PitfallOf(&db) == controller.PitfallNonIdempotentCreate {
			decoy = name
		}
	}
	if decoy == "" {
		t.Fatal("no Database has the decoy's pitfall")
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		trace := e.CheckEnv(t, ns, started).Trace
		return slices.ContainsFunc(trace, func(s controller.Step) bool {
			return s.Type == controller.StepResult && s.Database == decoy && s.Result == "error"
		}) && slices.ContainsFunc(trace, isRewrite), nil
	})
	if err != nil {
		t.Fatalf("no failed reconcile of the decoy %s and no status rewrite in the trace: %v", decoy, err)
	}
	// The trace tells the three apart by what they do, never by name.
	for _, s := range e.CheckEnv(t, ns, started).Trace {
		if s.Pitfall != "" && s.Pitfall != controller.PitfallHidden {
			t.Errorf("%s step of %s says pitfall %q, want %q", s.Type, s.Database, s.Pitfall, controller.PitfallHidden)
		}
	}
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		if err := setPitfall(ctx, e.Client, ns, name, ""); err != nil {
			t.Fatal(err)
		}
	}
	r := mustCheck(t, ctx, "status-storm/switched-off", e.CheckEnv(t, ns, started))
	if r.Done || !containsAll(r.Detail, decoy, controller.PitfallNonIdempotentCreate) {
		t.Errorf("switched-off with the decoy %s switched off too: done=%v, detail %q; want not done, naming the decoy and its pitfall", decoy, r.Done, r.Detail)
	}
}

// findThrasher watches the trace for the storm's mark.
func findThrasher(ctx context.Context, env judgetest.SolveEnv) (string, error) {
	var thrasher string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, s := range env.Trace() {
			if isRewrite(s) {
				thrasher = s.Database
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("no status rewrite seen on the timeline: %w", err)
	}
	return thrasher, nil
}

// isRewrite reports a status write that moved a condition's
// lastTransitionTime without changing its status.
func isRewrite(s controller.Step) bool {
	return s.Type == controller.StepStatus && !s.Skipped && slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
		return !c.Transition && c.FromLastTransitionTime != "" && c.LastTransitionTime != c.FromLastTransitionTime
	})
}

func setPitfall(ctx context.Context, c client.Client, ns, name, pitfall string) error {
	value := "null"
	if pitfall != "" {
		value = `"` + pitfall + `"`
	}
	db := &dbv1.Database{}
	db.Namespace, db.Name = ns, name
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+controller.PitfallAnnotation+`":`+value+`}}}`))
	if err := c.Patch(ctx, db, patch); err != nil {
		return fmt.Errorf("set pitfall of %s to %q: %w", name, pitfall, err)
	}
	return nil
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
