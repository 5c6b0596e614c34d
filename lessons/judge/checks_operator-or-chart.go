package judge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// The challenge operator-or-chart sets one database up twice: as a
// Database the operator runs, and as the same StatefulSet and Service
// installed once as plain manifests, which is what a Helm chart's install
// leaves behind. The learner does the same day-2 things to both and sees
// which one anything answers; then judges, in a question, when an operator
// earns its cost.

const (
	// billing is the Database; billingChart the plain manifests' name.
	billing      = "billing"
	billingChart = "billing-chart"
)

func init() {
	RegisterPrepare("operator-or-chart", prepareOperatorOrChart)
	RegisterCheck("operator-or-chart/self-heal", checkSelfHeal)
	RegisterCheck("operator-or-chart/uninstalled", checkUninstalled)
}

func prepareOperatorOrChart(ctx context.Context, env PrepareEnv) error {
	if err := resumeAndWaitGone(ctx, env, billing); err != nil {
		return err
	}
	labels := map[string]string{
		"app.kubernetes.io/name":       billingChart,
		"app.kubernetes.io/managed-by": "plain-manifests",
		LabelChallenge:                 "operator-or-chart",
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: billingChart, Namespace: env.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{"app.kubernetes.io/name": billingChart},
			Ports:     []corev1.ServicePort{{Name: "postgres", Port: 5432, TargetPort: intstr.FromInt32(5432), Protocol: corev1.ProtocolTCP}},
		},
	}
	podSec, containerSec := controller.RestrictedSecurity()
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: billingChart, Namespace: env.Namespace, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: billingChart,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": billingChart}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// A learner namespace enforces Pod Security "restricted", as
				// a chart installed there would have to comply with too.
				Spec: corev1.PodSpec{SecurityContext: podSec, Containers: []corev1.Container{{
					Name:            "postgres",
					Image:           "postgres:" + dbv1.DefaultVersion(dbv1.EnginePostgres),
					Ports:           []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432}},
					SecurityContext: containerSec,
				}}},
			},
		},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		return fmt.Errorf("create the plain Service %s: %w", billingChart, err)
	}
	if err := env.Client.Create(ctx, sts); err != nil {
		return fmt.Errorf("create the plain StatefulSet %s: %w", billingChart, err)
	}
	if err := createReady(ctx, env, newDatabase(env.Namespace, billing, 1, "")); err != nil {
		return err
	}
	// Both installs run before the learner touches them.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, prepareWait, true, func(ctx context.Context) (bool, error) {
		var got appsv1.StatefulSet
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: billingChart}, &got); err != nil {
			return false, nil
		}
		return got.Status.ReadyReplicas == 1, nil
	})
	if err != nil {
		return fmt.Errorf("the plain StatefulSet %s had no ready Pod within %s: %w", billingChart, prepareWait, err)
	}
	return nil
}

// serviceRepair finds, after billing was first Ready, the delete event of
// its Service, the reconcile that created it again and that create:
// deleted < 0 when there is no delete yet, repair nil when nothing has put
// it back.
func serviceRepair(l stepLog) (deleted int, repair *reconcileRun, create controller.Step) {
	deleted = l.childDeletedAfterReady(billing, "Service")
	if deleted < 0 {
		return -1, nil, controller.Step{}
	}
	for _, r := range l.reconciles(billing, deleted) {
		for _, s := range r.actions() {
			if s.Action == "create" && s.Target != nil && s.Target.Kind == "Service" && s.Target.Name == billing &&
				s.Outcome == controller.OutcomeCreated {
				return deleted, &r, s
			}
		}
	}
	return deleted, nil, controller.Step{}
}

// checkSelfHeal: both Services were deleted; the operator's came back in
// a reconcile, the plain one is still gone. It stays done after the
// uninstall, so a page reloaded without JavaScript still finds it done.
func checkSelfHeal(ctx context.Context, env Env) (Result, error) {
	l := stepLog(env.Trace)
	deleted, repair, create := serviceRepair(l)
	chartFound, err := env.Get(ctx, billingChart, &corev1.Service{})
	if err != nil {
		return Result{}, err
	}
	if repair == nil && env.DeletedInTrace(billing) {
		// Deleted first: the garbage collector took its Service, and no
		// reconcile of a Database that is gone puts it back.
		return Result{Detail: "Database " + billing + " was deleted before its Service came back: press Start again, and delete the Services first."}, nil
	}
	var todo []string
	switch {
	case deleted < 0:
		todo = append(todo, "delete Service "+billing)
	case repair == nil: // the trace, not the Service: an uninstall later takes it again
		todo = append(todo, "wait for a reconcile of "+billing+" to put its Service back")
	}
	if chartFound {
		todo = append(todo, "delete Service "+billingChart)
	}
	if len(todo) > 0 {
		detail := "Still to do: " + strings.Join(todo, "; ") + "."
		if repair != nil {
			detail += fmt.Sprintf(" The operator's Service is back already (reconcile %s).", shortID(repair.ID))
		}
		if !chartFound {
			detail += " Service " + billingChart + " is gone, and stays gone: nothing watches it."
		}
		return Result{Detail: detail}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("Reconcile %s put Service %s back, %s after its delete: the delete was a watch event on a child, "+
		"and the operator closed the gap. Service %s is still gone, and will be until a person notices and applies the manifests again.",
		shortID(repair.ID), billing, delayInWords(create.Time.Sub(l[deleted].Time)), billingChart)}, nil
}

// delayInWords says a short delay in words: "4 ms", or "under a millisecond".
func delayInWords(d time.Duration) string {
	if d < time.Millisecond {
		return "under a millisecond"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// checkUninstalled: billing was deleted through its finalizer, which wrote
// the final snapshot; the plain StatefulSet is deleted and left nothing.
func checkUninstalled(ctx context.Context, env Env) (Result, error) {
	dbFound, err := env.Get(ctx, billing, &dbv1.Database{})
	if err != nil {
		return Result{}, err
	}
	chartFound, err := env.Get(ctx, billingChart, &appsv1.StatefulSet{})
	if err != nil {
		return Result{}, err
	}
	var snap corev1.ConfigMap
	snapFound, err := env.Get(ctx, controller.SnapshotName(billing), &snap)
	if err != nil {
		return Result{}, err
	}
	snapshotted := slices.Contains(env.FinalizerPhases(billing), "snapshot")
	var todo []string
	switch {
	case dbFound && !env.DeletedInTrace(billing):
		todo = append(todo, "delete Database "+billing)
	case dbFound:
		todo = append(todo, "wait for "+billing+"'s finalizer to finish")
	case !env.DeletedInTrace(billing):
		return Result{Detail: "Database " + billing + " is gone, but the trace shows no delete of it: press Start again."}, nil
	case !snapshotted || !snapFound:
		return Result{Detail: "Database " + billing + " is gone without its final snapshot (was the finalizer removed by hand?): press Start again."}, nil
	}
	if chartFound {
		todo = append(todo, "delete StatefulSet "+billingChart)
	}
	if len(todo) > 0 {
		return Result{Detail: "Still to do: " + strings.Join(todo, "; ") + "."}, nil
	}
	return Result{Done: true, Detail: "Before " + billing + " went, its finalizer wrote the final snapshot, ConfigMap " + snap.Name +
		" (taken " + snap.CreationTimestamp.UTC().Format(time.TimeOnly) + " UTC). StatefulSet " + billingChart +
		" went with nothing saved: an uninstall of plain manifests knows nothing of the data in them."}, nil
}
