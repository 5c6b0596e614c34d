package judge

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// Helpers the checks share. They read through Env, so every check sees the
// API server's current state and the namespace's trace since the start.

// Databases lists the Databases in the learner's namespace, sorted by name.
func (e Env) Databases(ctx context.Context) ([]dbv1.Database, error) {
	var list dbv1.DatabaseList
	if err := e.Client.List(ctx, &list, client.InNamespace(e.Namespace)); err != nil {
		return nil, fmt.Errorf("list Databases in %s: %w", e.Namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b dbv1.Database) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return list.Items, nil
}

// Get reads one object of the learner's namespace; found is false when it
// does not exist.
func (e Env) Get(ctx context.Context, name string, obj client.Object) (found bool, err error) {
	err = e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get %T %s/%s: %w", obj, e.Namespace, name, err)
	}
	return true, nil
}

// StepsOf returns the trace's steps about Database name: its own events and
// every step of its reconciles.
func (e Env) StepsOf(name string) []controller.Step {
	var out []controller.Step
	for _, s := range e.Trace {
		if s.Database == name || (s.Object.Kind == "Database" && s.Object.Name == name) {
			out = append(out, s)
		}
	}
	return out
}

// FinalizerPhases lists the finalizer phases the trace shows for Database
// name, in order ("added", "draining", "snapshot", "removed", "skipped").
func (e Env) FinalizerPhases(name string) []string {
	var out []string
	for _, s := range e.StepsOf(name) {
		if s.Type == controller.StepFinalizer {
			out = append(out, s.Phase)
		}
	}
	return out
}

// DeletedInTrace reports whether the trace shows a delete event for
// Database name.
func (e Env) DeletedInTrace(name string) bool {
	return slices.ContainsFunc(e.StepsOf(name), func(s controller.Step) bool {
		return s.Type == controller.StepEvent && s.Event == "delete" && s.Object.Kind == "Database"
	})
}

// IsReady reports whether db's Ready condition is True for its current
// generation.
func IsReady(db *dbv1.Database) bool {
	c := meta.FindStatusCondition(db.Status.Conditions, controller.ConditionReady)
	return c != nil && c.Status == "True" && db.Status.ObservedGeneration == db.Generation
}

// Controls reports whether obj carries an ownerReference to db with
// controller=true (matching UID, so a namesake from before does not count).
func Controls(db *dbv1.Database, obj client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == db.UID && ref.Kind == "Database" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}
