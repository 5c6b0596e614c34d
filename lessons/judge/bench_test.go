package judge_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons/judge"
)

// BenchmarkTrace measures what each status request of an open challenge
// page costs in decoding: a full ring (4096 messages, a third of them state
// snapshots of about 6 KiB as the lab's watcher publishes), half of it
// before the challenge's start.
func BenchmarkTrace(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	html := strings.Repeat("<div class=\"x\">state</div>", 240)
	var e trace.Export
	e.Namespace = "lab-bench"
	for i := range trace.DefaultRingSize {
		at := t0.Add(time.Duration(i-trace.DefaultRingSize/2) * time.Millisecond)
		var m trace.Message
		m.Seq, m.Time, m.Object = uint64(i+1), at, controller.ObjectRef{Kind: "Database", Namespace: e.Namespace, Name: fmt.Sprintf("db%d", i%5)}
		if i%3 == 0 {
			m.Type, m.State = trace.TypeState, json.RawMessage(fmt.Sprintf(`{"html":%q}`, html))
		} else {
			m.Type, m.Database, m.Event, m.Generation, m.Message = controller.StepEvent, m.Object.Name, "update", 3, "an update"
		}
		raw, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		e.Messages = append(e.Messages, raw)
	}
	b.ReportAllocs()
	var steps []controller.Step
	for b.Loop() {
		var err error
		if steps, err = judge.Trace(e, t0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(steps)), "steps")
}
