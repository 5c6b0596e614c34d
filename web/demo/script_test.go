package demo

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/trace"
)

// timeline is a recorder's timeline of one namespace, as Export hands it out.
type timeline struct {
	mu    sync.Mutex
	steps []json.RawMessage
}

func (tl *timeline) add(t *testing.T, s controller.Step) {
	t.Helper()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	s.Seq = uint64(len(tl.steps) + 1)
	raw, err := json.Marshal(trace.Message{Step: s})
	if err != nil {
		t.Fatal(err)
	}
	tl.steps = append(tl.steps, raw)
}

func (tl *timeline) Export(ns string) trace.Export {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return trace.Export{Namespace: ns, Messages: append([]json.RawMessage(nil), tl.steps...)}
}

// The finalizer on the Database is not enough: the controller writes it
// first and puts its step on the timeline after, so the wait holds until
// the timeline shows it, and the next step's narration comes below that
// row. Without a timeline the cluster alone decides.
func TestFinalizerAddedWaitsForTheTimeline(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: "shop", Finalizers: []string{controller.Finalizer}}}
	tl := &timeline{}
	at := time.Now()
	env := &Env{Namespace: "lab-a", Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(db).Build(), Timeline: tl,
		now: func() time.Time { return at }}
	wait := finalizerAdded("shop")

	// Another Database's finalizer, and shop's event, are not it.
	tl.add(t, controller.Step{Type: controller.StepFinalizer, Phase: "added", Object: controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "orders"}})
	tl.add(t, controller.Step{Type: controller.StepEvent, Event: "create", Object: controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "shop"}})
	ok, seen, err := wait.Done(t.Context(), env)
	if ok || err != nil || !strings.Contains(seen, "not yet on the timeline") {
		t.Fatalf("before the timeline shows it: ok %v, seen %q, err %v; want a wait naming the timeline", ok, seen, err)
	}
	tl.add(t, controller.Step{Type: controller.StepFinalizer, Phase: "added", Object: controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "shop"}})
	if ok, seen, err := wait.Done(t.Context(), env); !ok || err != nil {
		t.Errorf("once the timeline shows it: ok %v, seen %q, err %v; want done", ok, seen, err)
	}

	env.Timeline = &timeline{}
	if ok, _, _ := wait.Done(t.Context(), env); ok {
		t.Error("done with an empty timeline")
	}
	env.Timeline = nil
	if ok, seen, err := wait.Done(t.Context(), env); !ok || err != nil {
		t.Errorf("with no timeline: ok %v, seen %q, err %v; want the cluster alone to decide", ok, seen, err)
	}
}

// The other waits hold, like finalizer-added, until the timeline shows
// what the cluster already does: the status write that made the Database
// Ready at its generation, the StatefulSet's create after the drift's
// delete, the delete's watch event (held, while the namespace is paused),
// the finalizer's removal. Otherwise a Step pressed at once could narrate
// the next step above the row of what the wait was for. Only rows after
// the action count (an earlier run of the demo left the same rows), and
// the cluster alone decides once it has been as awaited for
// timelineGrace, so that a row that never comes cannot hang the demo.
func TestWaitsWaitForTheTimeline(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	shop := controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "shop"}
	shopSts := &controller.ObjectRef{Kind: "StatefulSet", Namespace: "lab-a", Name: "shop"}
	deleted := metav1.Now()
	readyTo := func(to string) []controller.ConditionChange {
		return []controller.ConditionChange{{Type: controller.ConditionReady, To: to, Transition: true}}
	}
	for _, tc := range []struct {
		name    string
		objects []client.Object
		wait    *Wait
		mark    string               // the action's mark, as the action notes it
		uids    map[string]types.UID // what the script's earlier steps noted
		notIt   []controller.Step    // after the mark: near, but not what the wait needs
		it      controller.Step
	}{{
		name: "ready",
		objects: []client.Object{&v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: "shop", Generation: 2},
			Status: v1alpha1.DatabaseStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
				{Type: controller.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2, Reason: "Ready", LastTransitionTime: deleted}}}}},
		wait: ready("shop", 0),
		mark: "database/shop",
		notIt: []controller.Step{
			{Type: controller.StepStatus, Object: shop, Database: "shop", ObservedGeneration: 1, Conditions: readyTo("True")}, // before the scale
			{Type: controller.StepStatus, Object: shop, Database: "shop", ObservedGeneration: 2, Conditions: readyTo("False")},
			{Type: controller.StepStatus, Object: shop, Database: "shop", ObservedGeneration: 2, Conditions: readyTo("True"), Error: "conflict"},
		},
		it: controller.Step{Type: controller.StepStatus, Object: shop, Database: "shop", ObservedGeneration: 2, Conditions: readyTo("True")},
	}, {
		name: "statefulset-recreated",
		objects: []client.Object{
			&v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: "shop", UID: "db-1"}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: "shop", UID: "sts-2",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "db.oplab.dev/v1alpha1", Kind: "Database", Name: "shop", UID: "db-1", Controller: ptr.To(true)}}}},
		},
		wait: statefulSetRecreated("shop"),
		mark: "statefulset/shop",
		uids: map[string]types.UID{"statefulset/shop": "sts-1"},
		notIt: []controller.Step{
			{Type: controller.StepEvent, Event: "delete", Object: *shopSts, Database: "shop"},
			{Type: controller.StepAction, Action: "create", Outcome: controller.OutcomeAlreadyExists, Object: shop, Database: "shop", Target: shopSts},
			{Type: controller.StepAction, Action: "create", Outcome: controller.OutcomeCreated, Object: shop, Database: "shop", Target: &controller.ObjectRef{Kind: "Service", Namespace: "lab-a", Name: "shop"}},
		},
		it: controller.Step{Type: controller.StepAction, Action: "create", Outcome: controller.OutcomeCreated, Object: shop, Database: "shop", Target: shopSts},
	}, {
		name: "terminating",
		objects: []client.Object{&v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: "shop", Generation: 3,
			Finalizers: []string{controller.Finalizer}, DeletionTimestamp: &deleted}}},
		wait: heldTerminating("shop"),
		mark: "delete/shop",
		notIt: []controller.Step{
			{Type: controller.StepEvent, Event: "update", Object: shop, Database: "shop", Generation: 2},     // an earlier spec
			{Type: controller.StepEvent, Event: "update", Object: *shopSts, Database: "shop", Generation: 3}, // its child's
			{Type: controller.StepEvent, Event: "update", Object: controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "orders"}, Database: "orders", Generation: 3},
		},
		it: controller.Step{Type: controller.StepEvent, Event: "update", Object: shop, Database: "shop", Generation: 3, Held: true},
	}, {
		name:    "snapshot-taken",
		objects: []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "lab-a", Name: controller.SnapshotName("shop")}, Data: map[string]string{"uid": "u-1"}}},
		wait:    snapshotTaken("shop"),
		mark:    "delete/shop",
		uids:    map[string]types.UID{"database/shop": "u-1"},
		notIt: []controller.Step{
			{Type: controller.StepFinalizer, Phase: "snapshot", Object: shop, Database: "shop"},
			{Type: controller.StepFinalizer, Phase: "removed", Object: controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "orders"}, Database: "orders"},
		},
		it: controller.Step{Type: controller.StepFinalizer, Phase: "removed", Object: shop, Database: "shop"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			at := time.Now()
			newEnv := func() (*Env, *timeline) {
				tl := &timeline{}
				env := &Env{Namespace: "lab-a", Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build(),
					Timeline: tl, now: func() time.Time { return at }}
				for k, uid := range tc.uids {
					env.note(k, uid)
				}
				// An earlier run of the demo left the very row awaited.
				tl.add(t, tc.it)
				env.mark(tc.mark)
				for _, s := range tc.notIt {
					tl.add(t, s)
				}
				return env, tl
			}
			env, tl := newEnv()
			ok, seen, err := tc.wait.Done(t.Context(), env)
			if ok || err != nil || !strings.Contains(seen, "not yet on the timeline") {
				t.Fatalf("before the timeline shows it: ok %v, seen %q, err %v; want a wait naming the timeline", ok, seen, err)
			}
			tl.add(t, tc.it)
			if ok, seen, err := tc.wait.Done(t.Context(), env); !ok || err != nil {
				t.Errorf("once the timeline shows it: ok %v, seen %q, err %v; want done", ok, seen, err)
			}
			env.Timeline = nil
			if ok, seen, err := tc.wait.Done(t.Context(), env); !ok || err != nil {
				t.Errorf("with no timeline: ok %v, seen %q, err %v; want the cluster alone to decide", ok, seen, err)
			}

			// The row never comes: the cluster decides once it has been
			// as awaited for timelineGrace.
			env, _ = newEnv()
			for _, wait := range []time.Duration{0, timelineGrace - time.Millisecond} {
				at = at.Add(wait)
				if ok, _, _ := tc.wait.Done(t.Context(), env); ok {
					t.Fatalf("done %s after the cluster was as awaited, without the row; want it to wait %s", wait, timelineGrace)
				}
			}
			at = at.Add(time.Millisecond)
			if ok, seen, err := tc.wait.Done(t.Context(), env); !ok || err != nil {
				t.Errorf("%s after the cluster was as awaited, without the row: ok %v, seen %q, err %v; want done", timelineGrace, ok, seen, err)
			}
		})
	}
}
