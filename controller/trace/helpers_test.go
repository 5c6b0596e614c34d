package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// deadline is generous: tests poll until something happens or this passes,
// and never assert on how long anything took.
const deadline = 20 * time.Second

// harness is a running Recorder whose Feed a small stand-in for the web's
// hub takes: it hands each joining viewer its catch-up, then the entries
// of its namespace and the global ones, a batch per update. What the hub
// does beyond that (coalescing, websockets) is web/stream's to test.
type harness struct {
	t       *testing.T
	rec     *Recorder
	viewers atomic.Int64
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run and the feed's reader have returned
}

func newHarness(t *testing.T, ro RecorderOptions) *harness {
	t.Helper()
	updates, stopped := make(chan Update), make(chan struct{})
	rec := NewRecorder(ro)
	rec.Attach(Feed{Updates: updates, Stopped: stopped, Frame: func(b []byte) any { return &b }})
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, rec: rec, cancel: cancel, done: make(chan struct{})}
	var runs sync.WaitGroup
	runs.Add(2)
	go func() { defer runs.Done(); rec.Run(ctx) }()
	go func() {
		defer runs.Done()
		defer close(stopped)
		var joined []*viewer
		for {
			select {
			case <-ctx.Done():
				return
			case u := <-updates:
				if u.Join != nil {
					v := u.Join.(*viewer)
					for _, b := range u.Catchup {
						v.batches <- b.JSON
					}
					joined = append(joined, v)
					h.viewers.Add(1)
					continue
				}
				for _, v := range joined {
					var es []*Entry
					for _, e := range u.Entries {
						if ns := e.Namespace(); ns == "" || ns == v.ns {
							es = append(es, e)
						}
					}
					if len(es) > 0 {
						v.batches <- NewBatch(es, nil).JSON
					}
				}
			}
		}
	}()
	go func() { runs.Wait(); close(h.done) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
}

// dial joins a viewer of ns; since < 0 means a fresh one.
func (h *harness) dial(ns string, since int64) *viewer {
	h.t.Helper()
	v := &viewer{t: h.t, ns: ns, since: uint64(max(since, 0)), resume: since >= 0, batches: make(chan []byte, 1024)}
	if !h.rec.Join(v) {
		h.t.Fatal("the recorder refused a viewer")
	}
	return v
}

// waitClients polls until n viewers have joined.
func (h *harness) waitClients(n int) {
	h.t.Helper()
	waitFor(h.t, fmt.Sprintf("%d viewers", n), func() bool { return h.viewers.Load() == int64(n) })
}

// viewer is a Viewer that reads the batches the harness hands it.
type viewer struct {
	t       *testing.T
	ns      string
	since   uint64
	resume  bool
	batches chan []byte
}

func (v *viewer) Namespace() string     { return v.ns }
func (v *viewer) Since() (uint64, bool) { return v.since, v.resume }
func (v *viewer) Refuse()               {}
func fresh(ns string) *viewer           { return &viewer{ns: ns} }

// readN reads exactly n messages (failing if a batch overshoots).
func (v *viewer) readN(n int) []Message {
	v.t.Helper()
	var all []Message
	for len(all) < n {
		select {
		case data := <-v.batches:
			var batch []Message
			if err := json.Unmarshal(data, &batch); err != nil {
				v.t.Fatalf("batch is not a JSON array of messages: %v: %s", err, data)
			}
			all = append(all, batch...)
		case <-time.After(deadline):
			v.t.Fatalf("gave up reading message %d of %d", len(all), n)
		}
	}
	if len(all) != n {
		v.t.Fatalf("read %d messages, want exactly %d: %v", len(all), n, seqs(all))
	}
	return all
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func step(ns, name string, typ controller.StepType) controller.Step {
	return controller.Step{Type: typ, Object: controller.ObjectRef{Kind: "Database", Namespace: ns, Name: name}}
}

func seqs(ms []Message) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

// decoded decodes exported messages, failing the test on one that does not.
func decoded(t *testing.T, raws []json.RawMessage) []Message {
	t.Helper()
	out := make([]Message, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatalf("exported message %d does not decode: %v: %s", i, err, raw)
		}
	}
	return out
}
