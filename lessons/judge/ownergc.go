package judge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// gcDatabase is the Database the owner-gc challenge prepares.
const gcDatabase = "cart"

func init() {
	RegisterPrepare("owner-gc", prepareOwnerGC)
	RegisterCheck("owner-gc/adopted", checkAdopted)
	RegisterCheck("owner-gc/owner-deleted", checkOwnerDeleted)
	RegisterCheck("owner-gc/children-collected", checkChildrenCollected)
}

func prepareOwnerGC(ctx context.Context, env PrepareEnv) error {
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: gcDatabase, Namespace: env.Namespace}}
	if err := env.Client.Create(ctx, db); err != nil {
		return fmt.Errorf("create Database %s: %w", gcDatabase, err)
	}
	return nil
}

// checkAdopted: the learner removed the StatefulSet's ownerReference and
// the controller put it back (the trace's diff "no owner: adopting it").
func checkAdopted(ctx context.Context, env Env) (Result, error) {
	adopted := slices.ContainsFunc(env.StepsOf(gcDatabase), func(s controller.Step) bool {
		return s.Type == controller.StepDiff && s.Target != nil && s.Target.Kind == "StatefulSet" &&
			slices.Contains(s.Differences, "no owner: adopting it")
	})
	if !adopted {
		return Result{Detail: "The trace shows no adoption of StatefulSet " + gcDatabase + " yet: remove its ownerReference, then wait for the next resync."}, nil
	}
	var db dbv1.Database
	var sts appsv1.StatefulSet
	dbFound, err := env.Get(ctx, gcDatabase, &db)
	if err != nil {
		return Result{}, err
	}
	stsFound, err := env.Get(ctx, gcDatabase, &sts)
	if err != nil {
		return Result{}, err
	}
	if !dbFound || !stsFound || !Controls(&db, &sts) {
		return Result{Detail: "The controller is adopting StatefulSet " + gcDatabase + "; its ownerReference is not back yet."}, nil
	}
	return Result{Done: true, Detail: "The controller adopted StatefulSet " + gcDatabase + " again: its ownerReference to Database " + gcDatabase + " is back."}, nil
}

func checkOwnerDeleted(ctx context.Context, env Env) (Result, error) {
	found, err := env.Get(ctx, gcDatabase, &dbv1.Database{})
	switch {
	case err != nil:
		return Result{}, err
	case found:
		return Result{Detail: "Database " + gcDatabase + " is still there."}, nil
	case !env.DeletedInTrace(gcDatabase):
		return Result{Detail: "Database " + gcDatabase + " is not there, but the trace shows no delete of it: press Start again."}, nil
	}
	return Result{Done: true, Detail: "Database " + gcDatabase + " is deleted."}, nil
}

// gcChildren are the children the controller makes for cart.
func gcChildren() map[string]client.Object {
	return map[string]client.Object{
		"StatefulSet " + gcDatabase:                   &appsv1.StatefulSet{},
		"Service " + gcDatabase:                       &corev1.Service{},
		"Secret " + controller.SecretName(gcDatabase): &corev1.Secret{},
	}
}

// checkChildrenCollected: cart's children are gone, and no step of the
// trace is the controller deleting them: the garbage collector did, because
// they named cart as their owner.
func checkChildrenCollected(ctx context.Context, env Env) (Result, error) {
	if r, err := checkOwnerDeleted(ctx, env); err != nil || !r.Done {
		return Result{Detail: "Delete the Database first."}, err
	}
	var left []string
	for what, obj := range gcChildren() {
		_, name, _ := strings.Cut(what, " ")
		found, err := env.Get(ctx, name, obj)
		if err != nil {
			return Result{}, err
		}
		if found {
			left = append(left, what)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		return Result{Detail: "Still there: " + strings.Join(left, ", ") + " (the garbage collector works in the background)."}, nil
	}
	for _, s := range env.StepsOf(gcDatabase) {
		if s.Type == controller.StepAction && s.Action == "delete" && s.Target != nil && s.Target.Kind != "Pod" {
			return Result{Detail: fmt.Sprintf("The controller deleted %s %s itself (seq %d): that is not garbage collection.", s.Target.Kind, s.Target.Name, s.Seq)}, nil
		}
	}
	return Result{Done: true, Detail: "StatefulSet, Service and Secret are gone, and the controller deleted none of them: the garbage collector followed their ownerReferences."}, nil
}

func checkSnapshotOutlives(ctx context.Context, env Env) (Result, error) {
	if r, err := checkOwnerDeleted(ctx, env); err != nil || !r.Done {
		return Result{Detail: "Delete the Database first."}, err
	}
	var cm corev1.ConfigMap
	found, err := env.Get(ctx, controller.SnapshotName(gcDatabase), &cm)
	switch {
	case err != nil:
		return Result{}, err
	case !found:
		return Result{Detail: "ConfigMap " + controller.SnapshotName(gcDatabase) + " is not there."}, nil
	case len(cm.OwnerReferences) > 0:
		return Result{Detail: "ConfigMap " + cm.Name + " has an owner: the garbage collector would take it."}, nil
	}
	return Result{Done: true, Detail: "ConfigMap " + cm.Name + " has no ownerReference, so the garbage collector left it."}, nil
}
