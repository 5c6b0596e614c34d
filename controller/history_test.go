package controller

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// observingSink is a recordingSink that also keeps what the event filter
// observes (Observer), and how many steps there were at the time.
type observingSink struct {
	recordingSink
	omu  sync.Mutex
	seen []observed
}

type observed struct {
	steps int
	event string
	ref   ObjectRef
	obj   any
}

func (s *observingSink) Observe(event string, ref ObjectRef, obj any) {
	n := s.len()
	s.omu.Lock()
	defer s.omu.Unlock()
	s.seen = append(s.seen, observed{steps: n, event: event, ref: ref, obj: obj})
}

// The event filter hands an Observer each object version a watch delivers,
// before that event's step; a Secret without its data.
func TestEventFilterObservesEachVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sink := &observingSink{}
	opts := e.testOptions()
	opts.Sink = sink
	e.startController(opts)
	e.mustCreate(newDB("seen", 1, ""))
	e.expectReady("seen")

	steps := sink.all()
	sink.omu.Lock()
	seen := append([]observed(nil), sink.seen...)
	sink.omu.Unlock()
	events := 0
	for i, s := range steps {
		if s.Type != StepEvent || s.Event == "generic" {
			continue
		}
		events++
		found := false
		for _, o := range seen {
			if o.ref == s.Object && o.event == s.Event && o.steps <= i {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("event step %d (%s %s %s) has no observation before it", i, s.Event, s.Object.Kind, s.Object.Name)
		}
	}
	if len(seen) < events || events == 0 {
		t.Errorf("%d observations for %d watch events; want one each", len(seen), events)
	}
	kinds := map[string]bool{}
	for _, o := range seen {
		kinds[o.ref.Kind] = true
		if sec, ok := o.obj.(*corev1.Secret); ok && (len(sec.Data) > 0 || len(sec.StringData) > 0) {
			t.Errorf("the Secret %s was observed with its data", o.ref.Name)
		}
	}
	for _, k := range []string{"Database", "Secret", "Service", "StatefulSet"} {
		if !kinds[k] {
			t.Errorf("no %s observed; observed kinds %v", k, kinds)
		}
	}
}
