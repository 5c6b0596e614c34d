package tester

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
)

// Trace is one schedule's timeline: every step the driver traced and the
// tester noted, numbered from 1, and the versions of the objects it saw,
// for a replay with time travel.
type Trace struct {
	Schedule  int
	Name      string
	Namespace string
	Steps     []controller.Step
	Observed  []Observation
	// Marked is the step where the schedule went wrong (Finding.Step).
	Marked int
	// Took is how long the schedule ran.
	Took time.Duration
}

// Observation is an object as the tester saw it, after step After.
type Observation struct {
	After  int
	Event  string
	Ref    controller.ObjectRef
	Object any
}

// TesterKind is the object kind of the steps the tester notes itself (its
// actions, its faults, what it found), type controller.StepController with
// phase "tester".
const TesterKind = "Tester"

// traceSink records a schedule's trace: the controller.Sink and Observer
// of its driver. One schedule runs on one goroutine, the driver's hooks
// included; the mutex is for the reader.
type traceSink struct {
	mu    sync.Mutex
	trace *Trace
	seen  map[objKey]string // the objects last read → their resourceVersion
}

func (s *traceSink) Emit(st controller.Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Seq = uint64(len(s.trace.Steps) + 1)
	s.trace.Steps = append(s.trace.Steps, st)
}

func (s *traceSink) Observe(event string, ref controller.ObjectRef, obj any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trace.Observed = append(s.trace.Observed, Observation{After: len(s.trace.Steps), Event: event, Ref: ref, Object: obj})
}

// noteStep puts a step of the tester's own on the trace and returns its
// number.
func (s *traceSink) noteStep(d *controller.Driver, ns, message string) int {
	d.Note(controller.Step{Type: controller.StepController, Phase: "tester", Message: message,
		Object: controller.ObjectRef{Kind: TesterKind, Namespace: ns, Name: "tester"}})
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.trace.Steps)
}

// observeAll records the objects of a read of the namespace: each version
// once, and each object gone since the last read as deleted, so the
// history after a step is what was there.
func (s *traceSink) observeAll(d *controller.Driver, objs []client.Object) {
	s.mu.Lock()
	if s.seen == nil {
		s.seen = map[objKey]string{}
	}
	var changed []client.Object
	now := map[objKey]bool{}
	for _, o := range objs {
		k := keyOf(o)
		now[k] = true
		if s.seen[k] != o.GetResourceVersion() {
			s.seen[k] = o.GetResourceVersion()
			changed = append(changed, o)
		}
	}
	var gone []objKey
	for k := range s.seen {
		if !now[k] {
			gone = append(gone, k)
			delete(s.seen, k)
		}
	}
	s.mu.Unlock()
	for _, o := range changed {
		d.Observe("update", o)
	}
	for _, k := range gone {
		d.ObserveGone(k.kind, k.name)
	}
}
