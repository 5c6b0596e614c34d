package judge

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// The challenge never-ready is a real fault, not a pitfall: the namespace
// has a pod budget (a ResourceQuota) smaller than the Database asks for.
// The StatefulSet controller cannot create the last Pods, so the Database
// waits with Ready=False, reason WaitingForReplicas, for ever; the events
// of its StatefulSet say why. The fix is the spec's, a replica count the
// namespace allows, and the controller then turns it Ready by itself.

const (
	// orders is the Database that never becomes Ready.
	orders = "orders"
	// podBudget is the namespace's ResourceQuota on Pods.
	podBudget = "pod-budget"
	// podBudgetPods is how many Pods the quota allows; ordersReplicas,
	// what orders asks for at the start, is more.
	podBudgetPods  = 2
	ordersReplicas = 4
)

func init() {
	RegisterPrepare("never-ready", prepareNeverReady)
	RegisterInput("never-ready/refuser", Input{
		Label: "Name", Shape: "the name of one object, lowercase letters, digits, dots and dashes, as kubectl prints it", MaxLen: 253,
		Pattern: objectName, Judge: judgeRefuser,
	})
	RegisterCheck("never-ready/spec-fixed", checkOrdersSpecFixed)
	RegisterCheck("never-ready/ready", checkOrdersReady)
}

// prepareNeverReady puts the pod budget in place before orders exists (or
// its first Pods would slip in before the quota) and waits until orders
// runs the Pods the budget allows. The quota is then given orders as its
// owner, so it goes with orders and later challenges find no budget.
func prepareNeverReady(ctx context.Context, env PrepareEnv) error {
	if err := resumeAndWaitGone(ctx, env, orders); err != nil {
		return err
	}
	if err := waitNoPods(ctx, env); err != nil {
		return err
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: podBudget}}
	if err := env.Client.Delete(ctx, quota); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting an earlier resourcequota %s: %w", podBudget, err)
	}
	if err := waitQuotaGone(ctx, env); err != nil {
		return err
	}
	quota = &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: podBudget,
			Annotations: map[string]string{"oplab.dev/challenge": "never-ready"}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(podBudgetPods, resource.DecimalSI)}},
	}
	if err := env.Client.Create(ctx, quota); err != nil {
		return fmt.Errorf("creating resourcequota %s: %w", podBudget, err)
	}
	// The API server enforces a quota only for what its status lists, and
	// the embedded cluster runs no quota controller to write it. The
	// namespace has no Pod left, so the status can be written now (the
	// admission then counts each Pod created); a conflict means a quota
	// controller was first.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if err := env.Client.Status().Update(ctx, quota); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("writing the status of resourcequota %s: %w", podBudget, err)
	}
	db := newDatabase(env.Namespace, orders, ordersReplicas, "")
	if err := env.Client.Create(ctx, db); err != nil {
		return fmt.Errorf("creating database %s: %w", orders, err)
	}
	patch := client.MergeFrom(quota.DeepCopy())
	quota.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: dbv1.GroupVersion.String(), Kind: "Database", Name: db.Name, UID: db.UID,
	}}
	if err := env.Client.Patch(ctx, quota, patch); err != nil {
		return fmt.Errorf("making database %s the owner of resourcequota %s: %w", orders, podBudget, err)
	}
	err := waitDatabase(ctx, env.Client, env.Namespace, orders, fmt.Sprintf("stuck at %d ready replicas", podBudgetPods),
		func(d *dbv1.Database) bool {
			c := readyCondition(d)
			return d.Status.ReadyReplicas == podBudgetPods && c != nil && c.Reason == controller.ReasonWaitingForReplicas
		})
	if err != nil {
		return err
	}
	return waitRefusal(ctx, env)
}

// waitRefusal waits for the FailedCreate event naming the budget on this
// start's StatefulSet (an earlier start's events outlive its StatefulSet).
// The event recorder sends it a moment after the refusal, and the
// challenge opens with the trail complete: a learner who reads the events
// at once finds the name the first task asks for.
func waitRefusal(ctx context.Context, env PrepareEnv) error {
	var sts appsv1.StatefulSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: orders}, &sts); err != nil {
		return fmt.Errorf("reading statefulset %s: %w", orders, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, prepareWait, true, func(ctx context.Context) (bool, error) {
		named, err := refusers(ctx, env.Client, env.Namespace, sts.UID)
		return err == nil && slices.Contains(named, podBudget), nil
	})
	if err != nil {
		return fmt.Errorf("no FailedCreate event on statefulset %s named resourcequota %s after %s: %w", orders, podBudget, prepareWait, err)
	}
	return nil
}

// waitNoPods waits until the Pods of the Databases wiped before the
// prepare are gone: they would count against the pod budget.
func waitNoPods(ctx context.Context, env PrepareEnv) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, prepareWait, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(env.Namespace)); err != nil {
			return false, nil
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("pods of earlier databases were still in namespace %s after %s: %w", env.Namespace, prepareWait, err)
	}
	return nil
}

func waitQuotaGone(ctx context.Context, env PrepareEnv) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, prepareWait, true, func(ctx context.Context) (bool, error) {
		var q corev1.ResourceQuota
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: podBudget}, &q)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("an earlier resourcequota %s was still there after %s: %w", podBudget, prepareWait, err)
	}
	return nil
}

// budgetIntact reads the pod budget and says, when it is not as prepared,
// what happened to it.
func budgetIntact(ctx context.Context, env Env) (problem string, err error) {
	var q corev1.ResourceQuota
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: podBudget}, &q)
	if apierrors.IsNotFound(err) {
		return "The ResourceQuota " + podBudget + " is gone. It is the namespace's rule, not the fault: restart the challenge and fit orders to it.", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading resourcequota %s: %w", podBudget, err)
	}
	if got := q.Spec.Hard[corev1.ResourcePods]; got.Value() != podBudgetPods {
		return fmt.Sprintf("The ResourceQuota %s now allows %s Pods instead of %d. It is the namespace's rule, not the fault: restart the challenge and fit orders to it.",
			podBudget, got.String(), podBudgetPods), nil
	}
	return "", nil
}

func checkOrdersSpecFixed(ctx context.Context, env Env) (Result, error) {
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, orders)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return Result{Detail: "Database " + orders + " is gone: fix it, don't replace it. Restart the challenge."}, nil
	}
	if problem, err := budgetIntact(ctx, env); err != nil || problem != "" {
		return Result{Detail: problem}, err
	}
	switch {
	case db.Generation < 2:
		return Result{Detail: fmt.Sprintf("%s: its spec has not changed yet (generation %d). Read its Ready condition, then the events of its StatefulSet, to find what it waits for.",
			orders, db.Generation)}, nil
	case db.Spec.Replicas > podBudgetPods:
		return Result{Detail: fmt.Sprintf("%s: its spec changed (generation %d) but it still asks for %d replicas: what does the namespace allow?",
			orders, db.Generation, db.Spec.Replicas)}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("%s now asks for %d replica(s), which the namespace's pod budget of %d allows (generation %d).",
		orders, db.Spec.Replicas, podBudgetPods, db.Generation)}, nil
}

func checkOrdersReady(ctx context.Context, env Env) (Result, error) {
	db, found, err := getDatabase(ctx, env.Client, env.Namespace, orders)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return Result{Detail: "Database " + orders + " is gone: restart the challenge."}, nil
	}
	if problem, err := budgetIntact(ctx, env); err != nil || problem != "" {
		return Result{Detail: problem}, err
	}
	if !isReady(db) || db.Generation < 2 {
		msg := "has no Ready condition yet"
		if c := readyCondition(db); c != nil {
			msg = fmt.Sprintf("is Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
		}
		return Result{Detail: fmt.Sprintf("%s %s at generation %d, observed %d.", orders, msg, db.Generation, db.Status.ObservedGeneration)}, nil
	}
	wrote := slices.ContainsFunc(stepLog(env.Trace), func(s controller.Step) bool {
		return s.Type == controller.StepStatus && s.Database == orders && !s.Skipped && s.Error == "" &&
			s.ObservedGeneration == db.Generation && slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
			return c.Type == controller.ConditionReady && c.To == string(metav1.ConditionTrue)
		})
	})
	if !wrote {
		return Result{Detail: fmt.Sprintf("%s shows Ready=True, but the trace has no status write of the controller setting it for generation %d.",
			orders, db.Generation)}, nil
	}
	return Result{Done: true, Detail: fmt.Sprintf("The controller wrote Ready=True for generation %d itself: the fix was the spec's.", db.Generation)}, nil
}

// exceededQuota reads the quota's name out of a FailedCreate event's
// message, as the API server's quota admission words it: "exceeded quota:
// pod-budget, requested: pods=1, used: pods=2, limited: pods=2".
var exceededQuota = regexp.MustCompile(`exceeded quota: ([a-z0-9]([-a-z0-9.]*[a-z0-9])?)`)

// refusers lists the quotas that StatefulSet orders' FailedCreate events
// name: those of the StatefulSet with that uid, or of any when uid is "".
func refusers(ctx context.Context, c client.Reader, ns string, uid types.UID) ([]string, error) {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list Events in %s: %w", ns, err)
	}
	var named []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "StatefulSet" || e.InvolvedObject.Name != orders || e.Reason != "FailedCreate" ||
			(uid != "" && e.InvolvedObject.UID != uid) {
			continue
		}
		if m := exceededQuota.FindStringSubmatch(e.Message); m != nil && !slices.Contains(named, m[1]) {
			named = append(named, m[1])
		}
	}
	return named, nil
}

// judgeRefuser: the learner names the object that refuses orders' Pods.
// The truth is what the StatefulSet's FailedCreate events name, among the
// quotas that exist: never a name written here.
func judgeRefuser(ctx context.Context, env Env, answer string) (Result, error) {
	named, err := refusers(ctx, env.Client, env.Namespace, "")
	if err != nil {
		return Result{}, err
	}
	if len(named) == 0 {
		return Result{Detail: "No event says yet that StatefulSet " + orders + " was refused a Pod: wait a few seconds and look again."}, nil
	}
	if slices.Contains(named, answer) {
		var q corev1.ResourceQuota
		found, err := env.Get(ctx, answer, &q)
		if err != nil {
			return Result{}, err
		}
		if found {
			hard := q.Spec.Hard[corev1.ResourcePods]
			return Result{Done: true, Detail: fmt.Sprintf("Right: ResourceQuota %s allows %s Pods in %s, and the API server refuses the StatefulSet controller every Pod beyond it (FailedCreate). The Database controller only waits: its Ready condition says WaitingForReplicas.", q.Name, hard.String(), env.Namespace)}, nil
		}
	}
	switch answer {
	case orders:
		return Result{Detail: fmt.Sprintf("%s is the Database and its StatefulSet, the ones refused. Name what refuses them: read the StatefulSet's events.", orders)}, nil
	case env.Namespace:
		return Result{Detail: "The namespace holds the rule, but the rule is an object of its own: read StatefulSet " + orders + "'s events, which name it."}, nil
	}
	var q corev1.ResourceQuota
	found, err := env.Get(ctx, answer, &q)
	if err != nil {
		return Result{}, err
	}
	if found {
		return Result{Detail: fmt.Sprintf("ResourceQuota %s is in your namespace, but no event says it refused a Pod of %s: read the StatefulSet's events.", answer, orders)}, nil
	}
	return Result{Detail: fmt.Sprintf("No event names %q. The Database's Ready condition says what it waits for; the StatefulSet's events say who refuses its Pods.", answer)}, nil
}
