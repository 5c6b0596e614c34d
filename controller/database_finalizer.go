package controller

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// Finalizer holds a Database's deletion until the controller has drained its
// Pods and written the final snapshot.
const Finalizer = "db.oplab.dev/final-snapshot"

// drainPoll is how soon a draining Database is looked at again. The
// StatefulSet's status updates usually wake the reconciler first; the poll is
// the level-triggered safety net.
const drainPoll = time.Second

// lesson:begin finalizer

// ensureFinalizer adds the finalizer to a live Database. The patch carries
// the resourceVersion (optimistic lock): the finalizers list is replaced as a
// whole, and another controller's finalizer added meanwhile must not be lost.
func (r *DatabaseReconciler) ensureFinalizer(ctx context.Context, db *dbv1.Database) error {
	if controllerutil.ContainsFinalizer(db, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(db.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(db, Finalizer)
	if err := r.Client.Patch(ctx, db, patch); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}

// finalize runs the deletion of a Database, one phase per reconcile when a
// phase has to wait: 1. drop connections (scale to zero, wait for the Pods
// to go), 2. snapshot the data, 3. remove the finalizer. The garbage
// collector then deletes the children through their ownerReferences.
func (r *DatabaseReconciler) finalize(ctx context.Context, db *dbv1.Database) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(db, Finalizer) {
		return ctrl.Result{}, nil
	}

	// 1. Drop connections: scale the StatefulSet to zero and wait, across
	//    reconciles, until its Pods are gone.
	remaining, err := r.drain(ctx, db)
	if err != nil {
		return r.finish(ctx, db, observation{err: err, deleting: ReasonDrainingConnections, message: "Draining failed."})
	}
	if remaining > 0 {
		msg := fmt.Sprintf("Waiting for %d Pod(s) to terminate.", remaining)
		if _, err := r.finish(ctx, db, observation{deleting: ReasonDrainingConnections, message: msg}); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: drainPoll}, nil
	}

	// 2. Snapshot the data into a ConfigMap that outlives the Database.
	snap, err := r.snapshot(ctx, db)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// The whole namespace is being deleted: the API server creates
		// nothing in it any more, and a snapshot there would go with it.
		// Waiting would hold the namespace in Terminating forever, so let go.
		return ctrl.Result{}, r.removeFinalizer(ctx, db)
	}
	obs := observation{err: err, deleting: ReasonTakingSnapshot, message: "Final snapshot written.", snapshot: snap}
	if err != nil {
		return r.finish(ctx, db, obs)
	}
	if _, err := r.finish(ctx, db, obs); err != nil {
		return ctrl.Result{}, err
	}

	// 3. Let go: with the finalizer gone the API server deletes the
	//    Database, and the garbage collector its children.
	return ctrl.Result{}, r.removeFinalizer(ctx, db)
}

// lesson:end finalizer

// removeFinalizer removes our finalizer, if present. A Database already
// gone, or changed since we read it while being deleted, is not an error:
// gone means someone let it go first (the escape hatch), and a change comes
// with its own watch event and reconcile, which finds the finalizer still
// there or the Database gone.
func (r *DatabaseReconciler) removeFinalizer(ctx context.Context, db *dbv1.Database) error {
	if !controllerutil.ContainsFinalizer(db, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(db.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(db, Finalizer)
	err := r.Client.Patch(ctx, db, patch)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err) && !db.DeletionTimestamp.IsZero():
		ctrl.LoggerFrom(ctx).Info("Left finalizer to the next reconcile: the Database changed")
		return nil
	case err != nil:
		return fmt.Errorf("removing finalizer: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Removed finalizer")
	return nil
}

// drain scales the StatefulSet to zero and returns how many of its Pods
// still exist. Pods are listed from the API server rather than a cache: the
// controller watches no Pods, and this read happens only during deletion.
func (r *DatabaseReconciler) drain(ctx context.Context, db *dbv1.Database) (int, error) {
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.Name}, &sts)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("reading statefulset for draining: %w", err)
	}
	if err == nil && ptr.Deref(sts.Spec.Replicas, 1) != 0 {
		if err := r.scaleToZero(ctx, db, &sts); err != nil {
			return 0, err
		}
	}
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(db.Namespace), client.MatchingLabels(selectorLabels(db))); err != nil {
		return 0, fmt.Errorf("listing pods for draining: %w", err)
	}
	return len(pods.Items), nil
}

func (r *DatabaseReconciler) scaleToZero(ctx context.Context, db *dbv1.Database, sts *appsv1.StatefulSet) error {
	patch := client.MergeFrom(sts.DeepCopy())
	sts.Spec.Replicas = ptr.To[int32](0)
	if err := r.Client.Patch(ctx, sts, patch); err != nil {
		return fmt.Errorf("scaling statefulset to zero: %w", err)
	}
	r.Recorder.Eventf(db, sts, corev1.EventTypeNormal, "DrainingConnections", "Delete", "Scaled StatefulSet %s to 0", sts.Name)
	return nil
}

// snapshot writes the final snapshot: a ConfigMap with the spec, generation
// and time. It has no ownerReference on purpose: the garbage collector
// deletes every object whose owner is gone, and the snapshot must outlive
// the Database. A snapshot of this very Database (same UID) that exists
// already, from an attempt whose later step failed, is kept as it is: a
// delete writes its snapshot once.
func (r *DatabaseReconciler) snapshot(ctx context.Context, db *dbv1.Database) (*dbv1.SnapshotReference, error) {
	now := r.Clock.Now()
	spec, err := yaml.Marshal(db.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding spec for snapshot: %w", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: SnapshotName(db.Name), Namespace: db.Namespace,
			Labels: map[string]string{LabelDatabase: db.Name, labelManagedBy: managedBy},
		},
		Data: map[string]string{
			"spec":       string(spec),
			"generation": strconv.FormatInt(db.Generation, 10),
			"time":       now.UTC().Format(time.RFC3339),
			"uid":        string(db.UID),
		},
	}
	taken, err := r.writeSnapshot(ctx, db, cm)
	if err != nil {
		return nil, err
	}
	r.Recorder.Eventf(db, cm, corev1.EventTypeNormal, "SnapshotTaken", "Snapshot", "Wrote final snapshot to ConfigMap %s", cm.Name)
	ctrl.LoggerFrom(ctx).Info("Took final snapshot", "configmap", cm.Name)
	return &dbv1.SnapshotReference{Name: cm.Name, Time: metav1.NewTime(taken.Truncate(time.Second))}, nil
}

// writeSnapshot creates cm and returns the time the snapshot was taken. An
// existing ConfigMap of the same name is this Database's snapshot already
// (its UID matches: kept, with its own time) or an earlier Database's of
// the same name (overwritten).
func (r *DatabaseReconciler) writeSnapshot(ctx context.Context, db *dbv1.Database, cm *corev1.ConfigMap) (time.Time, error) {
	now := r.Clock.Now()
	err := r.Client.Create(ctx, cm)
	if err == nil {
		return now, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return time.Time{}, fmt.Errorf("creating snapshot configmap: %w", err)
	}
	var existing corev1.ConfigMap
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cm), &existing); err != nil {
		return time.Time{}, fmt.Errorf("reading snapshot configmap: %w", err)
	}
	if existing.Data["uid"] == string(db.UID) {
		if t, err := time.Parse(time.RFC3339, existing.Data["time"]); err == nil {
			return t, nil
		}
		return now, nil
	}
	existing.Data = cm.Data
	existing.Labels = cm.Labels
	if err := r.Client.Update(ctx, &existing); err != nil {
		return time.Time{}, fmt.Errorf("updating snapshot configmap: %w", err)
	}
	return now, nil
}
