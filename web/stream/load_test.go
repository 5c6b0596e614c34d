package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/stream/streamtest"
)

// dialCompressed connects a viewer of ns that offers permessage-deflate, as
// browsers do, and counts the bytes it reads off the wire.
func (h *harness) dialCompressed(ns string) (*viewer, *atomic.Int64, string) {
	h.t.Helper()
	var wire atomic.Int64
	conn, resp, err := streamtest.Dial(context.Background(), h.url("ns="+ns), &wire)
	if err != nil {
		h.t.Fatalf("dialling %s: %v", ns, err)
	}
	h.t.Cleanup(func() { _ = conn.Close() })
	return &viewer{t: h.t, conn: conn}, &wire, resp.Header.Get("Sec-WebSocket-Extensions")
}

func TestFramesAreCompressedForViewersThatOfferIt(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableCompression=%v", disabled), func(t *testing.T) {
			h := newHarness(t, trace.RecorderOptions{}, HubOptions{DisableCompression: disabled})
			v, wire, ext := h.dialCompressed("a")
			h.waitClients(1)
			if got := strings.Contains(ext, "permessage-deflate"); got == disabled {
				t.Fatalf("Sec-WebSocket-Extensions = %q; compression negotiated %v, want %v", ext, got, !disabled)
			}
			// Trace JSON repeats itself: 200 steps of the same object.
			before := wire.Load()
			for i := range 200 {
				s := step("a", "orders", controller.StepAction)
				s.Message = fmt.Sprintf("created StatefulSet orders (%d)", i)
				h.rec.Emit(s)
			}
			h.rec.Emit(marker("a"))
			got := v.readUntil(isMarker)
			if len(got) != 201 {
				t.Fatalf("got %d messages, want 201", len(got))
			}
			var plain int
			for _, m := range got {
				plain += len(m.Message) + 150 // a step's JSON is at least this long
			}
			onWire := int(wire.Load() - before)
			if compressed := onWire < plain/3; compressed == disabled {
				t.Errorf("%d bytes on the wire for at least %d bytes of JSON; compressed %v, want %v", onWire, plain, compressed, !disabled)
			}
		})
	}
}

func TestBusyControllerWidensTheWindow(t *testing.T) {
	// One viewer and a frame budget of 10 a second: once messages arrive
	// faster than 100 a second, frames go out at most every 100ms.
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{BusyStepRate: 100, BusyFrameRate: 10})
	v := h.dial("a", -1)
	h.waitClients(1)
	if w := h.hub.Stats().Window; w >= 100*time.Millisecond {
		t.Fatalf("window before any load = %v, want below 100ms", w)
	}
	// About 2,000 messages a second for a little over three rate intervals.
	read := make(chan []trace.Message)
	go func() { read <- v.readUntil(isMarker) }()
	const steps = 1600
	for i := range steps {
		h.rec.Emit(step("a", "db", controller.StepEvent))
		if i%20 == 19 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	st := h.hub.Stats()
	h.rec.Emit(marker("a"))
	got := <-read
	if len(got) != steps+1 {
		t.Fatalf("viewer got %d messages, want %d: busy or not, nothing is dropped", len(got), steps+1)
	}
	if st.StepRate <= 100 {
		t.Errorf("measured rate %.0f messages/s, want above BusyStepRate 100", st.StepRate)
	}
	if st.Window != 100*time.Millisecond {
		t.Errorf("window while busy = %v, want 1 viewer / 10 frames/s = 100ms", st.Window)
	}
	// 80 sleeps of 10ms: unbatched that is 80 frames or more; busy, the
	// first interval (500ms) is not yet known to be busy, then at most 10
	// frames a second.
	if v.frames >= 80 {
		t.Errorf("viewer got %d frames for %d messages, want fewer than 80", v.frames, steps+1)
	}
}

func TestQuietStreamKeepsTheWindowNarrow(t *testing.T) {
	// Only the stream's own rate paces it: one viewer of a quiet namespace,
	// with a budget of 10 frames a second, gets no window of 100ms, and
	// nine viewers of another namespace, which gets nothing, do not widen
	// it either.
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{BusyFrameRate: 10})
	v := h.dial("a", -1)
	for range 9 {
		h.dial("b", -1)
	}
	h.waitClients(10)
	h.rec.Emit(step("a", "db", controller.StepEvent))
	h.rec.Emit(marker("a"))
	v.readUntil(isMarker)
	st := h.hub.Stats()
	if st.StepRate > DefaultBusyStepRate {
		t.Fatalf("message rate %.0f: the test wants a quiet controller", st.StepRate)
	}
	if st.Window >= 100*time.Millisecond {
		t.Errorf("window %v for one viewer of a quiet stream, want below 100ms", st.Window)
	}
}

func TestFramesOfOneStepGoUncompressed(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{})
	v, wire, ext := h.dialCompressed("a")
	h.waitClients(1)
	if !strings.Contains(ext, "permessage-deflate") {
		t.Fatalf("Sec-WebSocket-Extensions = %q, want permessage-deflate", ext)
	}
	before := wire.Load()
	// A step's JSON repeats itself enough that deflate would shrink it.
	s := marker("a")
	s.ReconcileID = strings.Repeat("ab", 40)
	h.rec.Emit(s)
	got := v.readUntil(isMarker)
	if len(got) != 1 {
		t.Fatalf("got %d messages, want 1", len(got))
	}
	raw, err := json.Marshal([]trace.Message{got[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) >= compressMin {
		t.Fatalf("test frame is %d bytes, want it under compressMin %d", len(raw), compressMin)
	}
	// Uncompressed, the wire carries the JSON itself plus a frame header.
	if onWire := int(wire.Load() - before); onWire < len(raw) {
		t.Errorf("%d bytes on the wire for a %d-byte frame: it was compressed", onWire, len(raw))
	}
}
