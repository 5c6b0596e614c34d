package conformance

import (
	"context"
	"fmt"
	"strings"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ReconcileConditions sets conditions as a status write does: the
// transition time moves only when the status flips.
func ReconcileConditions() string {
	var db dbv1.Database
	db.Generation = 2
	t0 := metav1.Unix(100, 0)
	changed := meta.SetStatusCondition(&db.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse,
		Reason: "Creating", ObservedGeneration: db.Generation, LastTransitionTime: t0})
	again := meta.SetStatusCondition(&db.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse,
		Reason: "Creating", ObservedGeneration: db.Generation, LastTransitionTime: metav1.Unix(200, 0)})
	ready, want := int32(3), db.Spec.Replicas
	status, reason := metav1.ConditionFalse, "Scaling"
	if ready >= want {
		status, reason = metav1.ConditionTrue, fmt.Sprint("Available", ready)
	}
	flipped := meta.SetStatusCondition(&db.Status.Conditions, metav1.Condition{Type: "Ready", Status: status, Reason: reason,
		LastTransitionTime: metav1.Unix(300, 0)})
	c := meta.FindStatusCondition(db.Status.Conditions, "Ready")
	return fmt.Sprint(changed, again, flipped, " ", c.Status, " ", c.Reason, " ", c.LastTransitionTime.Unix(), " ",
		meta.IsStatusConditionTrue(db.Status.Conditions, "Ready"), " ", len(db.Status.Conditions))
}

// ReconcileFinalizers adds and removes a finalizer.
func ReconcileFinalizers() string {
	const finalizer = "db.oplab.dev/final-snapshot"
	db := &dbv1.Database{}
	added := controllerutil.AddFinalizer(db, finalizer)
	addedAgain := controllerutil.AddFinalizer(db, finalizer)
	has := controllerutil.ContainsFinalizer(db, finalizer)
	removed := controllerutil.RemoveFinalizer(db, finalizer)
	return fmt.Sprint(added, addedAgain, has, removed, len(db.Finalizers))
}

// ReconcileChildren builds children of a Database: labels merged, a
// pointer to a replica count, quantities compared.
func ReconcileChildren() string {
	db := dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}}
	db.Spec.Replicas = 2
	db.Spec.Storage = resource.MustParse("1Gi")
	ptr := func(i int32) *int32 { return &i }
	labels := map[string]string{"app": db.Name}
	for k, v := range db.Labels {
		labels[k] = v
	}
	replicas := []*int32{ptr(db.Spec.Replicas), ptr(5)}
	var ports []corev1.ServicePort
	for i, name := range []string{"sql", "metrics"} {
		ports = append(ports, corev1.ServicePort{Name: name, Port: int32(5432 + i)})
	}
	bigger := resource.MustParse("2Gi")
	var keys []string
	for k := range labels {
		keys = append(keys, k)
	}
	if keys[0] > keys[1] {
		keys[0], keys[1] = keys[1], keys[0]
	}
	return fmt.Sprint(strings.Join(keys, ","), " ", *replicas[0], *replicas[1], " ", ports[1].Port, " ",
		db.Spec.Storage.Cmp(bigger), " ", db.Spec.Storage.String())
}

// ReconcileCreateOrUpdate creates and then updates a ConfigMap through
// the client, with a mutate function that closes over the loop's
// variable.
func ReconcileCreateOrUpdate(ctx context.Context, c client.Client) string {
	var out []string
	for i := 0; i < 2; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "learner", Name: "shop-config"}}
		op, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data["round"] = fmt.Sprint(i)
			return nil
		})
		out = append(out, fmt.Sprint(op, " ", err, " ", cm.Data["round"]))
	}
	var got corev1.ConfigMap
	err := c.Get(ctx, client.ObjectKey{Namespace: "learner", Name: "shop-config"}, &got)
	return strings.Join(out, ",") + fmt.Sprint(" ", err, " ", got.Data["round"])
}
