package trace

import (
	"context"
	"testing"

	"github.com/oplab-dev/oplab/controller"
)

// BenchmarkEmit is the controller's cost of tracing one step while Run
// records it: a channel send, never a wait.
func BenchmarkEmit(b *testing.B) {
	rec := NewRecorder(RecorderOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	defer func() { cancel(); <-done }()
	s := step("a", "db", controller.StepAction)
	s.Message = "created the StatefulSet"
	for b.Loop() {
		rec.Emit(s)
	}
	b.ReportMetric(float64(rec.Stats().DroppedSteps)/float64(b.N), "dropped/op")
}
