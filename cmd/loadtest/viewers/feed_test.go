package viewers

// The synthetic feed of BenchmarkControllerWithViewers: controller-shaped
// steps at a steady rate, into a namespace of its own.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// feed emits synthetic controller steps into a namespace of its own at a
// steady rate, as a busy but not bursting controller would: the load the
// product requirement names (2,000 viewers at 100 steps/s).
type feed struct {
	ns       string
	interval time.Duration
	sink     controller.Sink
	cancel   context.CancelFunc
	done     chan struct{} // closes when run has returned

	// mu makes stamping a step, emitting it and counting it one event, so
	// that mark splits the steps cleanly: those it counts were stamped
	// before the time it returns, the others after.
	mu      sync.Mutex
	emitted atomic.Int64 // also the index of the next step
}

// startFeed starts emitting to sink, into ns, rate steps a second, until
// stop or ctx ends.
func startFeed(ctx context.Context, sink controller.Sink, ns string, rate float64) *feed {
	ctx, cancel := context.WithCancel(ctx)
	f := &feed{ns: ns, interval: time.Duration(float64(time.Second) / rate), sink: sink, cancel: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f
}

// run emits step k at start + k·interval. It follows that schedule rather
// than a ticker, which drops ticks when the receiver is late: a feed
// starved of CPU catches up with a burst instead of silently emitting fewer
// steps, so every phase gets the same load.
func (f *feed) run(ctx context.Context) {
	defer close(f.done)
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var k int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		// A catch-up burst ends when the feed stops: stop waits for run,
		// and must not wait out the backlog of a starved feed.
		for due := stepsDue(time.Since(start), f.interval); k < due && ctx.Err() == nil; k++ {
			f.emit(k)
		}
		timer.Reset(time.Until(start.Add(time.Duration(k) * f.interval)))
	}
}

// stepsDue is how many steps of a schedule that emits one at 0, interval,
// 2·interval, ... are due once elapsed has passed.
func stepsDue(elapsed, interval time.Duration) int64 {
	if elapsed < 0 {
		return 0
	}
	return int64(elapsed/interval) + 1
}

func (f *feed) emit(k int64) {
	s := feedStep(f.ns, k)
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Time = time.Now() // the viewers' delays run from here, as from the controller's tracer
	f.sink.Emit(s)
	f.emitted.Add(1)
}

// mark returns how many steps the feed has emitted and a time that splits
// them: those counted were stamped no later than it, the rest no earlier.
// A phase starts its viewers' measure at that time, so the steps it expects
// them to receive are exactly those emitted between its two marks. Without
// a feed it returns 0 and now.
func (f *feed) mark() (int64, time.Time) {
	if f == nil {
		return 0, time.Now()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.emitted.Load(), time.Now()
}

// stop ends the feed and returns once no step can follow. It may be called
// again, and on nil.
func (f *feed) stop() {
	if f == nil {
		return
	}
	f.cancel()
	<-f.done
}

const (
	feedDatabases = 20 // the feed cycles over this many Databases
	feedReconcile = 7  // steps per reconcile, as feedStep traces one
)

// feedStep is the feed's k-th step, Time left to emit: the steps of a
// Database being scaled up as the controller traces them (an update event,
// then one reconcile: start, fetch, diff and update of the StatefulSet,
// status, result), over feedDatabases Databases in turn, so that viewers
// decode and the recorder encodes what they would for the real controller.
func feedStep(ns string, k int64) controller.Step {
	r, i := k/feedReconcile, k%feedReconcile
	name := fmt.Sprintf("db-%04d", r%feedDatabases+1)
	gen := r/feedDatabases + 2
	sts := controller.ObjectRef{Kind: "StatefulSet", Namespace: ns, Name: name}
	s := controller.Step{
		Object:   controller.ObjectRef{Kind: "Database", Namespace: ns, Name: name},
		Database: name,
		// controller-runtime's reconcile IDs are UUIDs.
		ReconcileID: fmt.Sprintf("00000000-0000-4000-8000-%012x", r),
	}
	switch i {
	case 0:
		// The watch event precedes the reconcile: it has no reconcile ID.
		s.Type, s.ReconcileID, s.Event, s.Generation = controller.StepEvent, "", "update", gen
	case 1:
		s.Type, s.Trigger, s.Message = controller.StepReconcileStart, controller.TriggerEvent, "1 watch event"
	case 2:
		s.Type, s.Found, s.Generation = controller.StepFetch, "found", gen
		s.Message = fmt.Sprintf("generation %d, observed %d", gen, gen-1)
	case 3:
		s.Type, s.Target, s.Message = controller.StepDiff, &sts, "1 difference(s)"
		s.Differences = []string{fmt.Sprintf("replicas %d → %d", gen-1, gen)}
	case 4:
		s.Type, s.Action, s.Target, s.Outcome = controller.StepAction, "patch", &sts, controller.OutcomeUpdated
		s.Duration = 4 * time.Millisecond
	case 5:
		msg := fmt.Sprintf("%d of %d replicas ready", gen-1, gen)
		s.Type, s.ObservedGeneration, s.Duration = controller.StepStatus, gen, 3*time.Millisecond
		s.Conditions = []controller.ConditionChange{
			{Type: controller.ConditionReady, From: "True", To: "False", Reason: controller.ReasonWaitingForReplicas, Message: msg, Transition: true},
			{Type: controller.ConditionProgressing, From: "False", To: "True", Reason: controller.ReasonWaitingForReplicas, Message: msg, Transition: true},
		}
		s.Message = "status written (2 condition change(s))"
	default:
		s.Type, s.Result, s.Message, s.Duration = controller.StepResult, "done", "done", 9*time.Millisecond
	}
	return s
}

// TestStepsDue checks the feed's schedule: one step at 0, then one each
// interval, and after a stall every step missed is due at once.
func TestStepsDue(t *testing.T) {
	const iv = 10 * time.Millisecond
	for _, c := range []struct {
		elapsed time.Duration
		want    int64
	}{
		{-time.Millisecond, 0}, {0, 1}, {iv - 1, 1}, {iv, 2}, {2*iv + 1, 3}, {time.Second, 101}, {time.Minute, 6001},
	} {
		if got := stepsDue(c.elapsed, iv); got != c.want {
			t.Errorf("stepsDue(%s, %s) = %d; want %d", c.elapsed, iv, got, c.want)
		}
	}
}

// TestFeedStepsAreReconciles checks that the feed's steps look like the
// controller's: each reconcile opens with a start step, ends with a result,
// and its steps share a reconcile ID and a Database of the feed's namespace.
func TestFeedStepsAreReconciles(t *testing.T) {
	const ns = "feed-ns"
	ids := map[string]bool{}
	for r := range int64(2 * feedDatabases) {
		first := feedStep(ns, r*feedReconcile)
		if first.Type != controller.StepEvent || first.ReconcileID != "" || first.Event == "" {
			t.Errorf("reconcile %d opens with %+v; want a watch event without a reconcile ID", r, first)
		}
		id := feedStep(ns, r*feedReconcile+1).ReconcileID
		if id == "" || ids[id] {
			t.Errorf("reconcile %d has reconcile ID %q: want a fresh one", r, id)
		}
		ids[id] = true
		for i := range int64(feedReconcile) {
			s := feedStep(ns, r*feedReconcile+i)
			if s.Object.Kind != "Database" || s.Object.Namespace != ns || s.Object.Name != first.Object.Name || s.Database != s.Object.Name {
				t.Errorf("step %d of reconcile %d is about %+v (database %q); want Database %s/%s", i, r, s.Object, s.Database, ns, first.Object.Name)
			}
			if i > 0 && s.ReconcileID != id {
				t.Errorf("step %d of reconcile %d has reconcile ID %q; want %q", i, r, s.ReconcileID, id)
			}
			if !s.Time.IsZero() || s.Type == "" {
				t.Errorf("step %d of reconcile %d = %+v; want a type and no time (emit stamps it)", i, r, s)
			}
		}
		if want := []controller.StepType{controller.StepReconcileStart, controller.StepResult}; feedStep(ns, r*feedReconcile+1).Type != want[0] ||
			feedStep(ns, (r+1)*feedReconcile-1).Type != want[1] {
			t.Errorf("reconcile %d does not run from %s to %s", r, want[0], want[1])
		}
	}
	if a, b := feedStep(ns, 0).Object.Name, feedStep(ns, feedReconcile).Object.Name; a == b {
		t.Errorf("consecutive reconciles are both about %s; want the Databases in turn", a)
	}
}

// captureSink keeps the steps emitted to it; the first waits for release.
type captureSink struct {
	release chan struct{}
	mu      sync.Mutex
	steps   []controller.Step
}

func (s *captureSink) Emit(st controller.Step) {
	s.mu.Lock()
	first := len(s.steps) == 0
	s.steps = append(s.steps, st)
	s.mu.Unlock()
	if first {
		<-s.release
	}
}

func (s *captureSink) snapshot() []controller.Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.steps)
}

// TestFeedCatchesUpAndMarksCleanly stalls a feed of 1000 steps/s for 200ms:
// it must then emit the steps it missed at once, not spread over the next
// 200ms as a ticker would. And mark must split the steps by their time, as
// the viewers do: the steps counted before a mark are stamped no later
// than it, the others no earlier.
func TestFeedCatchesUpAndMarksCleanly(t *testing.T) {
	sink := &captureSink{release: make(chan struct{})}
	f := startFeed(t.Context(), sink, "ns", 1000)
	defer f.stop()
	time.Sleep(200 * time.Millisecond)
	close(sink.release)
	const missed = 150
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	waitUntil(t, "the missed steps", ctx, func() bool { return f.emitted.Load() > missed })
	steps := sink.snapshot()
	if burst := steps[missed].Time.Sub(steps[1].Time); burst > 100*time.Millisecond {
		t.Errorf("after a 200ms stall, steps 1 to %d took %s to emit; want them at once", missed, burst)
	}

	n1, at1 := f.mark()
	waitUntil(t, "20 more steps", ctx, func() bool { return f.emitted.Load() > n1+20 })
	n2, at2 := f.mark()
	steps = sink.snapshot()
	for k, s := range steps[:n2] {
		switch {
		case int64(k) < n1 && s.Time.After(at1):
			t.Errorf("step %d, counted by the first mark, at %s: after it (%s)", k, s.Time, at1)
		case int64(k) >= n1 && (s.Time.Before(at1) || s.Time.After(at2)):
			t.Errorf("step %d, between the marks, at %s: outside [%s, %s]", k, s.Time, at1, at2)
		}
	}
}

// slowSink takes 2ms over each step, so that a feed of 1000 steps/s into
// it is always mid-emit and behind.
type slowSink struct{}

func (slowSink) Emit(controller.Step) { time.Sleep(2 * time.Millisecond) }

// TestFeedStopsPromptlyWhenBehind checks that stop waits for the step being
// emitted, so none follows it, but not for the backlog of a feed that fell
// behind.
func TestFeedStopsPromptlyWhenBehind(t *testing.T) {
	f := startFeed(t.Context(), slowSink{}, "ns", 1000)
	defer f.stop()                     // a second stop is a no-op
	time.Sleep(300 * time.Millisecond) // some 150 steps behind
	began := time.Now()
	f.stop()
	if took := time.Since(began); took > 100*time.Millisecond {
		t.Errorf("stop took %s; want it not to wait for the backlog", took)
	}
	n := f.emitted.Load()
	time.Sleep(20 * time.Millisecond)
	if got := f.emitted.Load(); got != n {
		t.Errorf("%d steps emitted after stop returned", got-n)
	}
}
