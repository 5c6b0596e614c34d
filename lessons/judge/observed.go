package judge

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// observedDatabase is the Database the observed-generation challenge
// prepares and its checks read.
const observedDatabase = "orders"

func init() {
	RegisterPrepare("observed-generation", prepareObservedGeneration)
	RegisterCheck("observed-generation/spec-changed", checkSpecChanged)
	RegisterCheck("observed-generation/caught-up", checkCaughtUp)
	RegisterInput("observed-generation/status-writer", Input{
		Label: "Reconcile ID", Shape: reconcileIDShape, MaxLen: 37, Pattern: reconcileIDPattern,
		Judge: judgeStatusWriter,
	})
}

func prepareObservedGeneration(ctx context.Context, env PrepareEnv) error {
	db := &dbv1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: observedDatabase, Namespace: env.Namespace},
		Spec:       dbv1.DatabaseSpec{Replicas: 1},
	}
	if err := env.Client.Create(ctx, db); err != nil {
		return fmt.Errorf("create Database %s: %w", observedDatabase, err)
	}
	return nil
}

// getOrders reads the challenge's Database; the Result explains when it is gone.
func getOrders(ctx context.Context, env Env) (*dbv1.Database, *Result, error) {
	var db dbv1.Database
	found, err := env.Get(ctx, observedDatabase, &db)
	if err != nil {
		return nil, &Result{}, err
	}
	if !found {
		return nil, &Result{Detail: "Database " + observedDatabase + " is gone: press Start to set the challenge up again."}, nil
	}
	return &db, nil, nil
}

func checkSpecChanged(ctx context.Context, env Env) (Result, error) {
	db, r, err := getOrders(ctx, env)
	if r != nil {
		return *r, err
	}
	if db.Generation < 2 {
		return Result{Detail: fmt.Sprintf("%s is at generation %d: its spec has not changed since it was created.", db.Name, db.Generation)}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("The API server bumped %s's generation to %d.", db.Name, db.Generation)}, nil
}

func checkCaughtUp(ctx context.Context, env Env) (Result, error) {
	db, r, err := getOrders(ctx, env)
	if r != nil {
		return *r, err
	}
	g, o := db.Generation, db.Status.ObservedGeneration
	switch {
	case g < 2:
		return Result{Detail: "Change the spec first."}, nil
	case o < g:
		return Result{Detail: fmt.Sprintf("observedGeneration %d lags generation %d: the status describes an older spec.", o, g)}, nil
	case !wroteObserved(env, g):
		return Result{Detail: fmt.Sprintf("No status write at observedGeneration %d on the trace yet.", g)}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("observedGeneration caught up with generation %d.", g)}, nil
}

// wroteObserved reports whether the trace shows a status write of orders
// that set observedGeneration to g.
func wroteObserved(env Env, g int64) bool {
	for _, s := range env.StepsOf(observedDatabase) {
		if s.Type == controller.StepStatus && !s.Skipped && s.ObservedGeneration == g {
			return true
		}
	}
	return false
}

// noBumps finds, on the trace, the status writes made after the spec
// change that came back as a watch event: an update of the Database whose
// generation is still the one the status write was made at. The status
// subresource never moves metadata.generation. Each is the write and the
// event.
func noBumps(env Env) [][2]controller.Step {
	var out [][2]controller.Step
	steps := env.StepsOf(observedDatabase)
	for i, s := range steps {
		if s.Type != controller.StepStatus || s.Skipped || s.Generation < 2 {
			continue
		}
		for _, later := range steps[i+1:] {
			if later.Type == controller.StepEvent && later.Event == "update" && later.Object.Kind == "Database" {
				if later.Generation == s.Generation {
					out = append(out, [2]controller.Step{s, later})
				}
				break
			}
		}
	}
	return out
}

// judgeStatusWriter: the learner names the reconcile whose status write,
// after their spec change, came back as an update event at the same
// generation; they find it on the timeline.
func judgeStatusWriter(_ context.Context, env Env, answer string) (Result, error) {
	found := noBumps(env)
	if len(found) == 0 {
		return Result{Detail: "Not yet: no status write after the spec change on the trace yet, followed by its update event."}, nil
	}
	for _, f := range found {
		if w, ev := f[0], f[1]; matchesID(answer, w.ReconcileID) {
			return Result{Done: true, Detail: fmt.Sprintf("Right: reconcile #%s wrote status at generation %d (status write #%d), and it came back as an update event still at generation %d: writing status never bumps generation.",
				shortID(w.ReconcileID), w.Generation, w.StatusWrites, ev.Generation)}, nil
		}
	}
	steps := reconcileOf(env, answer)
	if len(steps) == 0 {
		return Result{Detail: noSuchReconcile(answer)}, nil
	}
	for _, s := range steps {
		if s.Type == controller.StepFetch && s.Generation < 2 {
			return Result{Detail: fmt.Sprintf("Reconcile #%s read generation %d: it ran before your spec change. Look below the change on the timeline.", shortID(s.ReconcileID), s.Generation)}, nil
		}
	}
	return Result{Detail: fmt.Sprintf("Reconcile #%s made no status write that came back as an update event; %s. Look for a row whose status step says “written”, followed by an update event of Database %s.", shortID(steps[0].ReconcileID), whatItDid(steps), observedDatabase)}, nil
}
