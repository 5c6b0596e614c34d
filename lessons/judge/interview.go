package judge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// The interview walk-through (the material's "walk a Database reconcile").
// Its find and read steps are input tasks (inputs.go): the learner types
// what they found. The delete is a check. Each looks at any Database of
// the namespace, so the learner may name theirs as they like. The checks
// below it are the write-your-own and fix-the-finalizer challenges' too,
// there counting only the learner's own code's steps.
func init() {
	RegisterCheck("interview-walkthrough/finalized-delete", checkFinalizedDelete)
}

func checkOwnedStatefulSet(ctx context.Context, env Env) (Result, error) {
	dbs, err := env.Databases(ctx)
	if err != nil || len(dbs) == 0 {
		return Result{Detail: "No Database in " + env.Namespace + " yet: create one."}, err
	}
	var missing []string
	for i := range dbs {
		db := &dbs[i]
		var sts appsv1.StatefulSet
		found, err := env.Get(ctx, db.Name, &sts)
		switch {
		case err != nil:
			return Result{}, err
		case !found:
			missing = append(missing, fmt.Sprintf("Database %s has no StatefulSet %s yet", db.Name, db.Name))
		case !Controls(db, &sts):
			missing = append(missing, fmt.Sprintf("StatefulSet %s has no ownerReference with controller: true to Database %s", sts.Name, db.Name))
		default:
			return Result{Done: true, Detail: fmt.Sprintf("StatefulSet %s is controlled by Database %s (uid %s).", sts.Name, db.Name, db.UID)}, nil
		}
	}
	return Result{Detail: strings.Join(missing, "; ") + "."}, nil
}

func checkConnectionInfo(ctx context.Context, env Env) (Result, error) {
	dbs, err := env.Databases(ctx)
	if err != nil || len(dbs) == 0 {
		return Result{Detail: "No Database in " + env.Namespace + "."}, err
	}
	detail := ""
	for i := range dbs {
		db := &dbs[i]
		if !IsReady(db) || db.Status.Endpoint == "" || db.Status.SecretName == "" {
			detail = fmt.Sprintf("Database %s has not published status.endpoint and status.secretName yet.", db.Name)
			continue
		}
		var secret corev1.Secret
		found, err := env.Get(ctx, db.Status.SecretName, &secret)
		if err != nil {
			return Result{}, err
		}
		if !found {
			detail = fmt.Sprintf("Database %s names Secret %s, which does not exist.", db.Name, db.Status.SecretName)
			continue
		}
		return Result{Done: true, Detail: fmt.Sprintf("Database %s publishes endpoint %s and Secret %s.", db.Name, db.Status.Endpoint, secret.Name)}, nil
	}
	return Result{Detail: detail}, nil
}

// finalizedNames are the Databases whose trace shows the finalizer removed,
// in the order they first appear.
func finalizedNames(env Env) []string {
	var out []string
	for _, s := range env.Trace {
		if s.Type == controller.StepFinalizer && s.Phase == "removed" && s.Object.Name != "" && !slices.Contains(out, s.Object.Name) {
			out = append(out, s.Object.Name)
		}
	}
	return out
}

func checkFinalizedDelete(ctx context.Context, env Env) (Result, error) {
	names := finalizedNames(env)
	if len(names) == 0 {
		return Result{Detail: "No Database has gone through its finalizer yet: delete your Database."}, nil
	}
	for _, name := range names {
		phases := env.FinalizerPhases(name)
		if !slices.Contains(phases, "snapshot") {
			continue
		}
		found, err := env.Get(ctx, name, &dbv1.Database{})
		if err != nil {
			return Result{}, err
		}
		if !found {
			return Result{Done: true, Detail: fmt.Sprintf("Database %s went through the finalizer (%s) and is gone.", name, strings.Join(phases, " → "))}, nil
		}
	}
	return Result{Detail: fmt.Sprintf("Database %s released its finalizer without a snapshot (%s).", names[0], strings.Join(env.FinalizerPhases(names[0]), " → "))}, nil
}

func checkSnapshotKept(ctx context.Context, env Env) (Result, error) {
	names := finalizedNames(env)
	if len(names) == 0 {
		return Result{Detail: "No Database has been deleted through its finalizer yet."}, nil
	}
	for _, name := range names {
		var cm corev1.ConfigMap
		found, err := env.Get(ctx, controller.SnapshotName(name), &cm)
		if err != nil {
			return Result{}, err
		}
		if found && len(cm.OwnerReferences) == 0 {
			return Result{Done: true, Detail: fmt.Sprintf("ConfigMap %s outlived Database %s: generation %s, taken %s.", cm.Name, name, cm.Data["generation"], cm.Data["time"])}, nil
		}
	}
	return Result{Detail: fmt.Sprintf("No snapshot ConfigMap %s without owner is there.", controller.SnapshotName(names[0]))}, nil
}
