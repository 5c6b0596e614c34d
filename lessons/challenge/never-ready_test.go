package challenge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/challenge/challengetest"
)

// TestNeverReady follows the trail a learner follows: the Ready condition
// names what it waits for, the StatefulSet's events name the quota, the
// quota says how many Pods fit, and the fix is the spec's replica count.
func TestNeverReady(t *testing.T) {
	challengetest.Run(t, "never-ready", func(ctx context.Context, env challengetest.SolveEnv) error {
		var db dbv1.Database
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "orders"}, &db); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(db.Status.Conditions, controller.ConditionReady)
		if ready == nil || ready.Reason != controller.ReasonWaitingForReplicas {
			return fmt.Errorf("orders' Ready condition is %+v; want reason %s", ready, controller.ReasonWaitingForReplicas)
		}
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "StatefulSet" && e.InvolvedObject.Name == "orders" &&
				e.Reason == "FailedCreate" && strings.Contains(e.Message, "exceeded quota")
		}) {
			return fmt.Errorf("no FailedCreate event naming the quota on StatefulSet orders among %d events", len(events.Items))
		}
		var quota corev1.ResourceQuota
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "pod-budget"}, &quota); err != nil {
			return err
		}
		pods := quota.Spec.Hard[corev1.ResourcePods]
		patch := client.MergeFrom(db.DeepCopy())
		db.Spec.Replicas = int32(pods.Value())
		return env.Client.Patch(ctx, &db, patch)
	})
}
