package demo

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web/stream"
)

// timeline is a recorder's timeline of one namespace, as Export hands it out.
type timeline struct {
	mu    sync.Mutex
	steps []json.RawMessage
}

func (tl *timeline) add(t *testing.T, s controller.Step) {
	t.Helper()
	raw, err := json.Marshal(stream.Message{Step: s})
	if err != nil {
		t.Fatal(err)
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.steps = append(tl.steps, raw)
}

func (tl *timeline) Export(ns string) stream.Export {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return stream.Export{Namespace: ns, Messages: append([]json.RawMessage(nil), tl.steps...)}
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
	env := &Env{Namespace: "lab-a", Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(db).Build(), Timeline: tl}
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
