package judge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestNeverReady follows the trail a learner follows: the Ready condition
// names what it waits for, the StatefulSet's events name the quota (the
// first task's answer), the quota says how many Pods fit, and the fix is
// the spec's replica count.
func TestNeverReady(t *testing.T) {
	t.Parallel() // its own namespace
	judgetest.Run(t, "never-ready", func(ctx context.Context, env judgetest.SolveEnv) error {
		var db dbv1.Database
		if err := env.Learner.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "orders"}, &db); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(db.Status.Conditions, controller.ConditionReady)
		if ready == nil || ready.Reason != controller.ReasonWaitingForReplicas {
			return fmt.Errorf("orders' Ready condition is %+v; want reason %s", ready, controller.ReasonWaitingForReplicas)
		}
		var events corev1.EventList
		if err := env.Learner.List(ctx, &events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		i := slices.IndexFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "StatefulSet" && e.InvolvedObject.Name == "orders" &&
				e.Reason == "FailedCreate" && strings.Contains(e.Message, "exceeded quota")
		})
		if i < 0 {
			return fmt.Errorf("no FailedCreate event naming the quota on StatefulSet orders among %d events", len(events.Items))
		}
		// "exceeded quota: NAME, requested: …": the name, as a learner reads it.
		_, rest, _ := strings.Cut(events.Items[i].Message, "exceeded quota: ")
		name, _, _ := strings.Cut(rest, ",")
		if err := judgetest.SolveInput(ctx, env, "why", "orders", name); err != nil {
			return err
		}
		var quota corev1.ResourceQuota
		if err := env.Learner.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &quota); err != nil {
			return err
		}
		pods := quota.Spec.Hard[corev1.ResourcePods]
		patch := client.MergeFrom(db.DeepCopy())
		db.Spec.Replicas = int32(pods.Value())
		return env.Learner.Patch(ctx, &db, patch)
	})
}

// TestNeverReadyQuotaDeleted takes the shortcut an admin could take, the
// pod budget deleted instead of the spec fixed, and expects both checks to
// refuse it: orders turns Ready, but at generation 1 and against no rule.
func TestNeverReadyQuotaDeleted(t *testing.T) {
	t.Parallel() // its own namespace
	e := judgetest.Shared(t)
	c, _ := e.Set.Get("never-ready")
	ns := e.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), judgetest.Deadline)
	defer cancel()
	started, err := c.Start(ctx, e.PrepareEnv(ns))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	quota := &corev1.ResourceQuota{}
	quota.Namespace, quota.Name = ns, "pod-budget"
	if err := e.Client.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var db dbv1.Database
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, &db); err != nil {
			return false, nil
		}
		return judge.IsReady(&db), nil
	})
	if err != nil {
		t.Fatalf("orders did not turn Ready once the quota was gone: %v", err)
	}
	env := e.CheckEnv(t, ns, started)
	for _, name := range []string{"never-ready/spec-fixed", "never-ready/ready"} {
		r := mustCheck(t, ctx, name, env)
		if r.Done || !strings.Contains(r.Detail, "pod-budget is gone") {
			t.Errorf("check %s with the quota deleted: done=%v, detail %q; want not done, saying the quota is gone", name, r.Done, r.Detail)
		}
	}
}
