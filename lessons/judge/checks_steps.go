package judge

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// This file holds what the checks of died-mid-deletion, drift-repair,
// never-ready, status-storm and level-triggering share: reading one
// Database's reconciles out of the trace, and the prepares' waits.

// stepLog is a namespace's trace, oldest first.
type stepLog []controller.Step

// isDatabaseEvent reports whether s is a watch event on the Database db itself.
func isDatabaseEvent(s controller.Step, db string) bool {
	return s.Type == controller.StepEvent && s.Object.Kind == "Database" && s.Object.Name == db
}

// isChildEvent reports whether s is a watch event on db's child of kind.
func isChildEvent(s controller.Step, db, kind string) bool {
	return s.Type == controller.StepEvent && s.Object.Kind == kind && s.Database == db
}

// childDeletedAfterReady returns the index of the first delete event of
// db's child of kind (named db, as each child but the Secret is) once db
// was first written Ready, -1 when there is none. Events before that may be
// the garbage collector removing an earlier namesake's children.
func (l stepLog) childDeletedAfterReady(db, kind string) int {
	ready := slices.IndexFunc(l, func(s controller.Step) bool {
		return s.Type == controller.StepStatus && s.Database == db && slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
			return c.Type == controller.ConditionReady && c.To == "True"
		})
	})
	if ready < 0 {
		return -1
	}
	at := slices.IndexFunc(l[ready:], func(s controller.Step) bool {
		return isChildEvent(s, db, kind) && s.Object.Name == db && s.Event == "delete"
	})
	if at < 0 {
		return -1
	}
	return ready + at
}

// isNamespacePhase reports whether s is the learner's namespace being
// paused or resumed (phase "paused" or "resumed").
func isNamespacePhase(s controller.Step, phase string) bool {
	return s.Type == controller.StepController && s.Object.Namespace != "" && s.Phase == phase
}

// reconcileRun is one reconcile of a Database: its steps from
// reconcile.start to result, in order.
type reconcileRun struct {
	ID    string
	Start time.Time
	// At is the index in the log of its reconcile.start step.
	At    int
	Steps []controller.Step
}

// reconciles returns db's reconciles that started at index from or later,
// in the order they started. Steps of one reconcile share its ReconcileID;
// reconciles of other Databases interleave with them in the log.
func (l stepLog) reconciles(db string, from int) []reconcileRun {
	var runs []reconcileRun
	index := map[string]int{}
	for i := max(from, 0); i < len(l); i++ {
		s := l[i]
		if s.ReconcileID == "" || s.Database != db {
			continue
		}
		if s.Type == controller.StepReconcileStart {
			index[s.ReconcileID] = len(runs)
			runs = append(runs, reconcileRun{ID: s.ReconcileID, Start: s.Time, At: i})
		}
		if k, ok := index[s.ReconcileID]; ok {
			runs[k].Steps = append(runs[k].Steps, s)
		}
	}
	return runs
}

// first returns the run's first step of type t.
func (r reconcileRun) first(t controller.StepType) (controller.Step, bool) {
	for _, s := range r.Steps {
		if s.Type == t {
			return s, true
		}
	}
	return controller.Step{}, false
}

// actions returns the run's actions: its writes to children.
func (r reconcileRun) actions() []controller.Step {
	var out []controller.Step
	for _, s := range r.Steps {
		if s.Type == controller.StepAction {
			out = append(out, s)
		}
	}
	return out
}

// statusWrite returns the run's status step when it wrote status (not
// skipped, no error).
func (r reconcileRun) statusWrite() (controller.Step, bool) {
	for _, s := range r.Steps {
		if s.Type == controller.StepStatus && !s.Skipped && s.Error == "" {
			return s, true
		}
	}
	return controller.Step{}, false
}

// finished reports whether the run's result step has been recorded.
func (r reconcileRun) finished() bool {
	_, ok := r.first(controller.StepResult)
	return ok
}

// phases returns the finalizer phases the run went through, in order.
func (r reconcileRun) phases() []string {
	var out []string
	for _, s := range r.Steps {
		if s.Type == controller.StepFinalizer {
			out = append(out, s.Phase)
		}
	}
	return out
}

// getDatabase reads the Database name of the learner's namespace; found is
// false when it does not exist.
func getDatabase(ctx context.Context, c client.Reader, ns, name string) (db *dbv1.Database, found bool, err error) {
	db = &dbv1.Database{}
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, db)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading database %s: %w", name, err)
	}
	return db, true, nil
}

// readyCondition returns db's Ready condition, nil when it has none.
func readyCondition(db *dbv1.Database) *metav1.Condition {
	return meta.FindStatusCondition(db.Status.Conditions, controller.ConditionReady)
}

// isReady is Ready=True for the current generation: the condition, the
// status and the spec all agree.
func isReady(db *dbv1.Database) bool {
	c := readyCondition(db)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == db.Generation &&
		db.Status.ObservedGeneration == db.Generation
}

// prepareWait bounds how long a prepare waits for its start to be reached.
const prepareWait = 90 * time.Second

// newDatabase is a postgres Database of the learner's namespace, with an
// optional pitfall switched on.
func newDatabase(ns, name string, replicas int32, pitfall string) *dbv1.Database {
	db := &dbv1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: replicas},
	}
	if pitfall != "" {
		db.Annotations = map[string]string{controller.PitfallAnnotation: pitfall}
	}
	return db
}

// waitDatabase polls the Database until ok holds or prepareWait passes; the
// error says what it was waiting for.
func waitDatabase(ctx context.Context, c client.Reader, ns, name, what string, ok func(*dbv1.Database) bool) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, prepareWait, true, func(ctx context.Context) (bool, error) {
		db, found, err := getDatabase(ctx, c, ns, name)
		if err != nil || !found {
			return false, nil
		}
		return ok(db), nil
	})
	if err != nil {
		return fmt.Errorf("database %s did not become %s within %s: is the controller running? %w", name, what, prepareWait, err)
	}
	return nil
}

// createReady creates db and waits until it is Ready with its finalizer:
// the start most challenges build on.
func createReady(ctx context.Context, env PrepareEnv, db *dbv1.Database) error {
	if err := env.Client.Create(ctx, db); err != nil {
		return fmt.Errorf("creating database %s: %w", db.Name, err)
	}
	return waitDatabase(ctx, env.Client, env.Namespace, db.Name, "Ready", func(d *dbv1.Database) bool {
		return isReady(d) && controllerutil.ContainsFinalizer(d, controller.Finalizer)
	})
}
