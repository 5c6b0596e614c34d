package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// BenchmarkWorstLearnerMemory is what the recorder holds for learners who
// do the worst their kubeconfig allows to their trace: 600 Pods churning
// (6,000 watch events each) and their 5 Databases' cards, each listing the
// Pods (64 KiB a state, half of it the view model), published again 100
// times. It prints the heap
// and RSS per learner after a GC, and the largest ring, with the byte
// bound; figures, not assertions.
//
//	go test -run '^$' -bench WorstLearnerMemory -benchtime 1x ./controller/trace/
func BenchmarkWorstLearnerMemory(b *testing.B) {
	const (
		learners  = 20
		podEvents = 6000
		databases = 5
		states    = 100
		stateSize = 64 << 10
	)
	// A card listing 600 Pods: its view model lists them too (half the
	// bytes), and each publish changes one Pod's line, as churn does.
	pods := `{"pods":"` + strings.Repeat("db-0-0 Running 1/1; ", stateSize/2/20) + `","changed":`
	html := `,"html":"` + strings.Repeat("x", stateSize/2) + `"}`
	card := func(i int) (state, view json.RawMessage) {
		v := pods + strconv.Itoa(i)
		return json.RawMessage(v + html), json.RawMessage(v + "}")
	}
	for b.Loop() {
		heap0, rss0 := memory()
		rec := NewRecorder(RecorderOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); rec.Run(ctx) }()
		sent := uint64(0)
		// pace keeps the inbox from overflowing: the benchmark measures
		// what is kept, not what is dropped.
		pace := func() {
			if sent%1000 != 0 {
				return
			}
			for rec.Stats().Messages < sent {
				time.Sleep(time.Millisecond)
			}
		}
		for l := range learners {
			ns := fmt.Sprintf("lab-worst%02d", l)
			for i := range podEvents {
				s := controller.Step{Type: controller.StepEvent, Object: controller.ObjectRef{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("db-%d-%d", i%databases, i%600)},
					Event: "update", Database: fmt.Sprintf("db-%d", i%databases), Message: "the Pod's status changed: Running, 1 of 1 containers ready"}
				rec.Emit(s)
				sent++
				pace()
			}
			for i := range databases * states {
				state, view := card(i)
				rec.PublishRendered(controller.ObjectRef{Kind: "Database", Namespace: ns, Name: fmt.Sprintf("db-%d", i%databases)}, state, view)
				sent++
				pace()
			}
		}
		for rec.Stats().Messages < sent {
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		maxRing := 0
		for _, s := range rec.spaces {
			maxRing = max(maxRing, s.ring.bytes)
		}
		heap1, rss1 := memory()
		perHeap := float64(heap1-heap0) / learners / (1 << 20)
		perRSS := float64(rss1-rss0) / learners / (1 << 20)
		b.ReportMetric(perHeap, "heap-MiB/learner")
		b.ReportMetric(perRSS, "RSS-MiB/learner")
		b.ReportMetric(float64(maxRing)/(1<<20), "ring-MiB/namespace")
		b.Logf("%d learners, each %d Pod events and %d states of %d KiB: heap %.1f MiB, RSS %.1f MiB per learner; largest ring %.2f MiB (bound %d MiB); dropped %d",
			learners, podEvents, databases*states, stateSize>>10, perHeap, perRSS, float64(maxRing)/(1<<20), DefaultRingBytes>>20, rec.Stats().DroppedSteps)
		runtime.KeepAlive(rec)
	}
}

// memory returns the heap in use after a GC, and the process's RSS.
func memory() (heap, rss uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		var size, resident uint64
		if _, err := fmt.Sscan(string(b), &size, &resident); err == nil {
			rss = resident * uint64(os.Getpagesize())
		}
	}
	return m.HeapInuse, rss
}
