package dbview

import (
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// BenchmarkBuild measures one rebuild of a Database's view model (what the
// watcher does on every change in its namespace), and reports the size of
// the state message it becomes.
func BenchmarkBuild(b *testing.B) {
	for _, tc := range []struct{ pods, neighbours int }{{1, 0}, {5, 0}, {1, 99}} {
		pods := tc.pods
		b.Run(fmt.Sprintf("pods=%d/neighbours=%d", pods, tc.neighbours), func(b *testing.B) {
			db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "db"}}
			h := &history{}
			for i := range 20 {
				h.observe("db", []metav1.Condition{cond("Ready", "False", fmt.Sprint("R", i), int64(i))}, t0)
			}
			db.Status.Conditions = []metav1.Condition{cond("Ready", "False", "R19", 19), cond("Degraded", "False", "NoErrors", 19)}
			rel := Related{StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "sts", OwnerReferences: owned("db")}}}}
			for i := range pods {
				rel.Pods = append(rel.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("orders-", i), UID: types.UID(fmt.Sprint("p", i)), OwnerReferences: owned("sts")}})
			}
			// Other Databases of the namespace, each with a StatefulSet,
			// a Pod, a Service and a Secret: what a burst of 100 looks like.
			for i := range tc.neighbours {
				uid := types.UID(fmt.Sprint("n", i))
				rel.StatefulSets = append(rel.StatefulSets, appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("db-", i), UID: uid + "-sts", OwnerReferences: owned(uid)}})
				rel.Pods = append(rel.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("db-", i, "-0"), UID: uid + "-pod", OwnerReferences: owned(uid + "-sts")}})
				rel.Services = append(rel.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("db-", i), UID: uid + "-svc", OwnerReferences: owned(uid)}})
				rel.Secrets = append(rel.Secrets, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("db-", i), UID: uid + "-sec", OwnerReferences: owned(uid)}})
			}
			for i := range 20 {
				rel.Events = append(rel.Events, corev1.Event{InvolvedObject: corev1.ObjectReference{UID: "db"}, Reason: "Created", Message: fmt.Sprint("event ", i)})
			}
			var size int
			b.ReportAllocs()
			for b.Loop() {
				v := build(db, rel, h, "spec:\n  replicas: 1\n") // the watcher keeps it per generation
				j, _ := json.Marshal(v)
				size = len(j)
			}
			b.ReportMetric(float64(size), "state-bytes")
		})
	}
}
