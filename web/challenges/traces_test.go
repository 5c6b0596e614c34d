package challenges

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons/judge"
)

// recorded runs a real Recorder with a small ring.
func recorded(t testing.TB, ring int) (*trace.Recorder, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rec := trace.NewRecorder(trace.RecorderOptions{RingSize: ring})
	go rec.Run(ctx)
	return rec, ctx
}

// emitAndWait emits n event steps for ns and waits until the recorder has them.
func emitAndWait(t testing.TB, rec *trace.Recorder, ns string, from, n int, at time.Time) {
	t.Helper()
	want := rec.Stats().Seq + uint64(n)
	for i := range n {
		rec.Emit(controller.Step{Type: controller.StepEvent, Time: at, Event: "update", Database: "db",
			Object: controller.ObjectRef{Kind: "Database", Namespace: ns, Name: "db"}, Message: fmt.Sprint(from + i)})
	}
	deadline := time.Now().Add(10 * time.Second)
	for rec.Stats().Seq < want {
		if time.Now().After(deadline) {
			t.Fatalf("the recorder did not record %d steps", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func messages(steps []controller.Step) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Message)
	}
	return strings.Join(out, ",")
}

// The cache returns what a fresh decode returns, keeps up with new steps,
// drops what fell out of the ring, and filters by the start.
func TestTracesMatchAFreshDecode(t *testing.T) {
	rec, ctx := recorded(t, 8)
	tr := newTraces(rec)
	go tr.run(ctx)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	emitAndWait(t, rec, "lab-a", 0, 3, t0)
	rec.PublishState(controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "db"}, json.RawMessage(`{"x":1}`))
	emitAndWait(t, rec, "lab-a", 3, 2, t0.Add(time.Second))
	emitAndWait(t, rec, "lab-b", 100, 1, t0)

	check := func(since time.Time, want string) {
		t.Helper()
		got, err := tr.steps(ctx, "lab-a", since)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := judge.Trace(rec.Export("lab-a"), since)
		if err != nil {
			t.Fatal(err)
		}
		if messages(got) != want || messages(fresh) != want {
			t.Errorf("since %v: cached %q, fresh %q, want %q", since, messages(got), messages(fresh), want)
		}
	}
	check(time.Time{}, "0,1,2,3,4")
	check(t0.Add(time.Second), "3,4")
	emitAndWait(t, rec, "lab-a", 5, 6, t0.Add(2*time.Second)) // the ring of 8 now holds 3..10; 0..2 fell out
	check(time.Time{}, "3,4,5,6,7,8,9,10")
}

// BenchmarkStatusTrace measures a status request's trace once the cache is
// warm: a full ring (4096 messages, a third of them state snapshots of
// about 6 KiB) and 10 new steps between two requests, as a busy learner's
// namespace records them.
func BenchmarkStatusTrace(b *testing.B) {
	rec, ctx := recorded(b, trace.DefaultRingSize)
	tr := newTraces(rec)
	go tr.run(ctx)
	html := json.RawMessage(fmt.Sprintf(`{"html":%q}`, strings.Repeat(`<div class="x">state</div>`, 240)))
	t0 := time.Now()
	for i := range trace.DefaultRingSize / 3 {
		rec.PublishState(controller.ObjectRef{Kind: "Database", Namespace: "lab-bench", Name: fmt.Sprintf("db%d", i%5)}, html)
		emitAndWait(b, rec, "lab-bench", 2*i, 2, t0)
	}
	if _, err := tr.steps(ctx, "lab-bench", t0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		b.StopTimer()
		emitAndWait(b, rec, "lab-bench", n, 10, time.Now())
		n += 10
		b.StartTimer()
		steps, err := tr.steps(ctx, "lab-bench", t0)
		if err != nil || len(steps) == 0 {
			b.Fatal(err)
		}
	}
}

// One Start at a time per namespace.
func TestStartsOnePerNamespace(t *testing.T) {
	var s starts
	if !s.begin("lab-a") || !s.begin("lab-b") {
		t.Fatal("a first Start was refused")
	}
	if s.begin("lab-a") {
		t.Error("a second Start in lab-a was let through")
	}
	s.end("lab-a")
	if !s.begin("lab-a") {
		t.Error("a Start after the first ended was refused")
	}
}
