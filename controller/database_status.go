package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// observation is what one reconcile learned. The status is computed from it
// in memory, then written once at the end of the reconcile.
type observation struct {
	// sts is the StatefulSet as last read or written; nil when the reconcile
	// did not get that far.
	sts *appsv1.StatefulSet
	// err is the error that ends the reconcile, if any.
	err error
	// deleting is the Progressing reason of the deletion phase under way
	// (ReasonDrainingConnections, ReasonTakingSnapshot), "" when not deleting.
	deleting string
	// message explains the deletion phase.
	message string
	// snapshot is set once the final snapshot has been written.
	snapshot *dbv1.SnapshotReference
	// pods is what the Pods say of replicas that are late (lookAtPods).
	pods podReport
}

// computeStatus derives the next status from the current one and what the
// reconcile observed. It is pure: now is passed in, nothing is written.
func computeStatus(db *dbv1.Database, obs observation, now time.Time) dbv1.DatabaseStatus {
	st := *db.Status.DeepCopy()
	gen := db.Generation
	st.ObservedGeneration = gen
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
		}, now)
	}

	switch {
	case obs.deleting != "":
		set(ConditionReady, metav1.ConditionFalse, ReasonDeleting, "The Database is being deleted.")
		set(ConditionProgressing, metav1.ConditionTrue, obs.deleting, obs.message)
		st.Endpoint = ""
	case obs.sts != nil:
		want := replicas(db)
		st.ReadyReplicas = obs.sts.Status.ReadyReplicas
		msg := fmt.Sprintf("%d/%d replicas ready.", obs.sts.Status.ReadyReplicas, want)
		if statefulSetReady(obs.sts, want) {
			set(ConditionReady, metav1.ConditionTrue, ReasonAvailable, msg)
			set(ConditionProgressing, metav1.ConditionFalse, ReasonReconciled, "The cluster matches the spec.")
			st.Endpoint = Endpoint(db)
			st.SecretName = SecretName(db.Name)
			break
		}
		if obs.pods.progress != "" {
			msg += " " + obs.pods.progress
		}
		set(ConditionReady, metav1.ConditionFalse, ReasonWaitingForReplicas, msg)
		set(ConditionProgressing, metav1.ConditionTrue, ReasonWaitingForReplicas, msg)
	case meta.FindStatusCondition(st.Conditions, ConditionReady) == nil:
		// An error came before the StatefulSet could be observed, and no
		// earlier reconcile said anything: say so rather than guess.
		set(ConditionReady, metav1.ConditionUnknown, ReasonNotObservedYet, "The StatefulSet has not been observed yet.")
	}

	switch {
	case obs.err != nil:
		set(ConditionDegraded, metav1.ConditionTrue, ReasonReconcileError, obs.err.Error())
	case obs.pods.reason != "":
		set(ConditionDegraded, metav1.ConditionTrue, obs.pods.reason, obs.pods.message)
	default:
		set(ConditionDegraded, metav1.ConditionFalse, ReasonNoErrors, "The last reconcile succeeded.")
	}
	if obs.snapshot != nil {
		st.LastSnapshot = obs.snapshot
	}
	return st
}

// statefulSetReady is true once the StatefulSet controller has seen the
// current spec and every wanted replica runs it and is ready.
func statefulSetReady(s *appsv1.StatefulSet, want int32) bool {
	st := s.Status
	return st.ObservedGeneration >= s.Generation &&
		ptr.Deref(s.Spec.Replicas, 1) == want &&
		st.Replicas == want && st.ReadyReplicas == want && st.UpdatedReplicas == want
}

// setCondition sets c in conds. lastTransitionTime moves only when the
// condition's status flips: a Ready condition that has been True for an hour
// still says so after a thousand reconciles. Reason, message and
// observedGeneration are always updated. meta.SetStatusCondition implements
// exactly this rule; now comes from the injected clock, truncated to the
// second that metav1.Time keeps on the wire, so an in-memory status compares
// equal to the one read back.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	meta.SetStatusCondition(conds, c)
}

// lesson:begin status-write

// writeStatus writes next as the Database's status, once, and only when it
// differs from what the API server already has: a write that changes nothing
// still costs a request and, worse, fires a watch event that triggers yet
// another reconcile.
func (r *DatabaseReconciler) writeStatus(ctx context.Context, db *dbv1.Database, next dbv1.DatabaseStatus) error {
	if equality.Semantic.DeepEqual(db.Status, next) {
		return nil
	}
	// A merge patch of the status subresource carries only what changed
	// and needs no resourceVersion, so a status computed from a slightly
	// stale cache never fails with a conflict.
	patch := client.MergeFrom(db.DeepCopy())
	db.Status = next
	if err := r.Client.Status().Patch(ctx, db, patch); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// lesson:end status-write
