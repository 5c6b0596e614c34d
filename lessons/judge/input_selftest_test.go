package judge_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// What the self-tests of input tasks read the way a learner finds it: an
// ID off a timeline row (the trace the row is drawn from), a field of an
// object through the learner's own kubectl identity.

// noSuchUID is a well-formed uid no object has.
const noSuchUID = "00000000-0000-4000-8000-000000000000"

// rowID is a reconcile ID as the timeline row shows it: "#" and its first
// eight characters.
func rowID(id string) string { return "#" + id[:8] }

// readUntil polls read until it returns a non-empty string.
func readUntil(ctx context.Context, what string, read func(ctx context.Context) (string, error)) (string, error) {
	var got string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		v, err := read(ctx)
		got = v
		return v != "", err
	})
	if err != nil {
		return "", fmt.Errorf("read %s: %w", what, err)
	}
	return got, nil
}

// traceUntil waits until the trace has a step that pick accepts and
// returns the first such step.
func traceUntil(ctx context.Context, env judgetest.SolveEnv, what string, pick func(controller.Step) bool) (controller.Step, error) {
	var found controller.Step
	_, err := readUntil(ctx, what, func(context.Context) (string, error) {
		steps := env.Trace()
		if i := slices.IndexFunc(steps, pick); i >= 0 {
			found = steps[i]
			return steps[i].ReconcileID, nil
		}
		return "", nil
	})
	return found, err
}

// otherReconcile is the ID of a reconcile of the trace other than id, as
// a learner copying the wrong row would type it.
func otherReconcile(env judgetest.SolveEnv, id string) string {
	for _, s := range env.Trace() {
		if s.Type == controller.StepReconcileStart && s.ReconcileID != "" && s.ReconcileID != id {
			return rowID(s.ReconcileID)
		}
	}
	return "#deadbeef"
}

// snapshotUID reads the uid a final snapshot ConfigMap records, with the
// learner's kubectl.
func snapshotUID(ctx context.Context, env judgetest.SolveEnv, db string) (string, error) {
	return readUntil(ctx, "the uid in "+controller.SnapshotName(db), func(ctx context.Context) (string, error) {
		var cm corev1.ConfigMap
		err := env.Learner.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: controller.SnapshotName(db)}, &cm)
		return cm.Data["uid"], client.IgnoreNotFound(err)
	})
}

// databaseStatus reads a field of Database name's status with the
// learner's kubectl, once it is there.
func databaseStatus(ctx context.Context, env judgetest.SolveEnv, name, what string, field func(*dbv1.Database) string) (string, error) {
	return readUntil(ctx, what, func(ctx context.Context) (string, error) {
		var db dbv1.Database
		err := env.Learner.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &db)
		return field(&db), client.IgnoreNotFound(err)
	})
}
