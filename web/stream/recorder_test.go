package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
)

func TestEmitStampsSeqAndTime(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	given := now.Add(-time.Hour)
	h := newHarness(t, trace.RecorderOptions{Clock: fixedClock{now}}, HubOptions{})
	v := h.dial("a", -1)
	h.waitClients(1)

	withTime := step("a", "db", controller.StepFetch)
	withTime.Time = given
	withTime.Seq = 999 // the recorder owns seq: this is overwritten
	h.rec.Emit(step("a", "db", controller.StepEvent))
	h.rec.Emit(withTime)
	h.rec.Emit(step("a", "db", controller.StepDiff))
	h.rec.Emit(marker("a"))

	got := v.readUntil(isMarker)
	if diff := cmp.Diff([]uint64{1, 2, 3, 4}, seqs(got)); diff != "" {
		t.Errorf("seqs (-want +got):\n%s", diff)
	}
	wantTimes := []time.Time{now, given, now, now}
	for i, m := range got {
		if !m.Time.Equal(wantTimes[i]) {
			t.Errorf("message %d: time %v, want %v", i, m.Time, wantTimes[i])
		}
	}
}

func TestNamespaceIsolation(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{})
	va, vb := h.dial("a", -1), h.dial("b", -1)
	h.waitClients(2)

	h.rec.Emit(step("a", "one", controller.StepEvent))
	h.rec.Emit(step("b", "two", controller.StepEvent))
	h.rec.Emit(controller.Step{Type: controller.StepController, Object: controller.ObjectRef{Kind: "Controller", Name: "database"}, Message: "started"})
	h.rec.PublishState(controller.ObjectRef{Kind: "Database", Namespace: "b", Name: "two"}, state(t, map[string]int{"replicas": 3}))
	h.rec.Emit(step("a", "three", controller.StepAction))
	h.rec.Emit(marker("a"))
	h.rec.Emit(marker("b"))

	for _, tc := range []struct {
		v    *viewer
		ns   string
		want []uint64
	}{
		{va, "a", []uint64{1, 3, 5, 6}},
		{vb, "b", []uint64{2, 3, 4, 7}},
	} {
		got := tc.v.readUntil(isMarker)
		if diff := cmp.Diff(tc.want, seqs(got)); diff != "" {
			t.Errorf("viewer of %s: seqs (-want +got):\n%s", tc.ns, diff)
		}
		for _, m := range got {
			if m.Object.Namespace != "" && m.Object.Namespace != tc.ns {
				t.Errorf("viewer of %s received seq %d of namespace %s", tc.ns, m.Seq, m.Object.Namespace)
			}
		}
	}
}

func TestFreshViewerGetsSnapshotThenRing(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{RingSize: 3}, HubOptions{})
	obj := func(name string) controller.ObjectRef {
		return controller.ObjectRef{Kind: "Database", Namespace: "a", Name: name}
	}
	h.rec.PublishState(obj("gone"), state(t, map[string]string{"phase": "Ready"})) // 1
	h.rec.PublishState(obj("kept"), state(t, map[string]string{"phase": "Ready"})) // 2
	h.rec.PublishState(obj("gone"), nil)                                           // 3: deleted
	h.rec.Emit(step("b", "other", controller.StepEvent))                           // 4: other namespace
	for range 3 {
		h.rec.Emit(step("a", "kept", controller.StepEvent)) // 5, 6, 7: ring of a is now 5..7
	}
	waitFor(t, "7 messages", func() bool { return h.rec.Stats().Seq == 7 })

	got := h.dial("a", -1).readN(4)
	if diff := cmp.Diff([]uint64{2, 5, 6, 7}, seqs(got)); diff != "" {
		t.Errorf("seqs (-want +got):\n%s", diff)
	}
	if got[0].Type != trace.TypeState || got[0].Object.Name != "kept" || string(got[0].State) != `{"phase":"Ready"}` {
		t.Errorf("first message = %+v, want the snapshot of kept", got[0])
	}
}

func TestResumeInsideRing(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{})
	v := h.dial("a", -1)
	h.waitClients(1)
	for range 5 {
		h.rec.Emit(step("a", "db", controller.StepEvent))
	}
	first := v.readN(5)
	_ = v.conn.Close()
	h.waitClients(0)
	for range 5 {
		h.rec.Emit(step("a", "db", controller.StepAction))
	}
	h.rec.Emit(marker("a"))

	got := h.dial("a", int64(first[4].Seq)).readUntil(isMarker)
	if diff := cmp.Diff([]uint64{6, 7, 8, 9, 10, 11}, seqs(got)); diff != "" {
		t.Errorf("resumed seqs (-want +got):\n%s", diff)
	}
	for _, m := range got {
		if m.Type == trace.TypeReset {
			t.Errorf("got a reset resuming inside the ring: %+v", m)
		}
	}
}

func TestResumeOutsideRingResets(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{RingSize: 2}, HubOptions{})
	h.rec.PublishState(controller.ObjectRef{Kind: "Database", Namespace: "a", Name: "db"}, state(t, map[string]int{"replicas": 1})) // 1
	for range 4 {
		h.rec.Emit(step("a", "db", controller.StepEvent)) // 2..5; ring keeps 4, 5
	}
	waitFor(t, "5 messages", func() bool { return h.rec.Stats().Seq == 5 })

	for _, tc := range []struct {
		name  string
		since int64
	}{
		{"older than the ring", 1},
		{"newer than the last seq, as after a restart", 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.dial("a", tc.since).readN(4)
			if got[0].Type != trace.TypeReset || got[0].Seq != 0 {
				t.Fatalf("first message = %+v, want a reset with seq 0", got[0])
			}
			if diff := cmp.Diff([]uint64{0, 1, 4, 5}, seqs(got)); diff != "" {
				t.Errorf("seqs (-want +got):\n%s", diff)
			}
			if got[1].Type != trace.TypeState {
				t.Errorf("second message type %q, want the state snapshot", got[1].Type)
			}
		})
	}
}

func TestSlowViewerIsDroppedAndNeverBlocksEmit(t *testing.T) {
	h := newHarnessSndbuf(t, trace.RecorderOptions{RingSize: 16, InboxSize: 1 << 14}, HubOptions{ClientBuffer: 64}, 16<<10)
	// The slow viewer never reads; with small socket buffers on both ends
	// the server's writes to it block after some tens of kilobytes.
	dialer := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4096)
		}
		return c, err
	}}
	slow, _, err := dialer.Dial(h.url("ns=a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast := h.dial("a", -1)
	h.waitClients(2)

	// Emit from another goroutine: if Emit ever waited on the slow viewer,
	// emitted would not close and the test would fail at the deadline.
	big := strings.Repeat("x", 1<<10)
	const n = 3000
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for i := range n {
			s := step("a", "db", controller.StepAction)
			s.Message = big
			if i == n-1 {
				s = marker("a")
			}
			h.rec.Emit(s)
			if i%4 == 0 {
				// Pace the steps (about a frame a millisecond) so that
				// the fast viewer is well inside its buffer.
				time.Sleep(time.Millisecond)
			}
		}
	}()
	// Meanwhile the fast viewer reads raw frames, without decoding, to keep up.
	var frames, size int
	for {
		_ = fast.conn.SetReadDeadline(time.Now().Add(deadline))
		_, data, err := fast.conn.ReadMessage()
		if err != nil {
			t.Fatalf("fast viewer after %d frames, %d bytes: %v (stats %+v)", frames, size, err, h.hub.Stats())
		}
		frames++
		size += len(data)
		if bytes.Contains(data, []byte(`"message":"marker"`)) {
			break
		}
	}
	select {
	case <-emitted:
	case <-time.After(deadline):
		t.Fatal("Emit blocked")
	}
	waitFor(t, "the slow viewer to be dropped", func() bool { return h.hub.Stats().DroppedClients == 1 })
	if c := h.hub.Stats().Clients; c != 1 {
		t.Errorf("clients after the drop = %d, want 1 (the fast one)", c)
	}
	// The slow viewer's connection ends: with 1013 (try again later) when
	// its writer was between writes, or cut when it was stuck in one.
	for {
		_ = slow.SetReadDeadline(time.Now().Add(deadline))
		_, _, err := slow.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code != websocket.CloseTryAgainLater && ce.Code != websocket.CloseAbnormalClosure {
			t.Errorf("slow viewer closed with %d, want %d (try again later) or cut (1006)", ce.Code, websocket.CloseTryAgainLater)
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("slow viewer's connection was not closed: %v", err)
		}
		break
	}
}

func TestHandshakeRejections(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{AllowedOrigins: []string{"http://teacher.localhost:9000"}})
	host := strings.TrimPrefix(h.srv.URL, "http://")
	for _, tc := range []struct {
		name       string
		query      string
		origin     string
		wantStatus int
		wantBody   string
	}{
		{"other origin", "ns=a", "http://evil.example", http.StatusForbidden, "origin"},
		{"other port on the same name", "ns=a", "http://127.0.0.1:1", http.StatusForbidden, "origin"},
		{"no namespace for the session", "", "http://" + host, http.StatusForbidden, "no namespace"},
		{"since not a number", "ns=a&since=abc", "http://" + host, http.StatusBadRequest, `since="abc"`},
		{"since negative", "ns=a&since=-1", "http://" + host, http.StatusBadRequest, `since="-1"`},
		{"same host", "ns=a", "http://" + host, http.StatusSwitchingProtocols, ""},
		{"allowed origin", "ns=a", "http://teacher.localhost:9000", http.StatusSwitchingProtocols, ""},
		{"no origin (not a browser)", "ns=a", "", http.StatusSwitchingProtocols, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{}
			if tc.origin != "" {
				hdr.Set("Origin", tc.origin)
			}
			conn, resp, err := websocket.DefaultDialer.Dial(h.url(tc.query), hdr)
			if conn != nil {
				defer conn.Close()
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d (err %v)", resp.StatusCode, tc.wantStatus, err)
			}
			if tc.wantBody == "" {
				return
			}
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			if !strings.Contains(body.String(), tc.wantBody) {
				t.Errorf("body %q does not mention %q", body.String(), tc.wantBody)
			}
		})
	}
}

func TestReadLimitClosesConnection(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{ReadLimit: 256})
	v := h.dial("a", -1)
	h.waitClients(1)
	if err := v.conn.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("x"), 1024)); err != nil {
		t.Fatal(err)
	}
	if code := v.closeCode(); code != websocket.CloseMessageTooBig {
		t.Errorf("close code %d, want %d (message too big)", code, websocket.CloseMessageTooBig)
	}
	h.waitClients(0)
}

func TestSmallMessagesFromViewerAreIgnored(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{ReadLimit: 256})
	v := h.dial("a", -1)
	h.waitClients(1)
	if err := v.conn.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	h.rec.Emit(marker("a"))
	if got := v.readUntil(isMarker); len(got) != 1 {
		t.Errorf("got %d messages, want just the marker", len(got))
	}
}

func TestRunCancelClosesViewersAndEndsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{})
	vs := []*viewer{h.dial("a", -1), h.dial("a", -1), h.dial("b", -1)}
	h.waitClients(3)

	h.cancel()
	select {
	case <-h.done:
	case <-time.After(deadline):
		t.Fatal("Run did not return after its context was cancelled")
	}
	for i, v := range vs {
		if code := v.closeCode(); code != websocket.CloseGoingAway {
			t.Errorf("viewer %d closed with %d, want %d (going away)", i, code, websocket.CloseGoingAway)
		}
		_ = v.conn.Close()
	}
	h.srv.Close()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before+1 })

	// After Run: Emit still returns, Export returns an empty timeline, and
	// new viewers are turned away.
	for range trace.DefaultInboxSize + 10 {
		h.rec.Emit(step("a", "db", controller.StepEvent))
	}
	if e := h.rec.Export("a"); len(e.Messages) != 0 {
		t.Errorf("export after Run has %d messages, want 0", len(e.Messages))
	}
}

func TestDroppedStepsAreAnnounced(t *testing.T) {
	rec := trace.NewRecorder(trace.RecorderOptions{InboxSize: 4})
	// Run is not running yet, so the inbox fills: Emit must drop, not wait.
	for range 10 {
		rec.Emit(step("a", "db", controller.StepEvent))
	}
	if got := rec.Stats().DroppedSteps; got != 6 {
		t.Fatalf("dropped steps = %d, want 6", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	defer func() { cancel(); <-done }()

	var e trace.Export
	waitFor(t, "the drop to be recorded", func() bool { e = rec.Export("a"); return len(e.Messages) == 5 })
	last := decoded(t, e.Messages)[4]
	if last.Type != trace.TypeDropped || last.Object.Namespace != "" || !strings.Contains(last.Message, "dropped 6 steps") {
		t.Errorf("last message = %+v, want a global dropped message saying 6", last)
	}
}

func TestForgetDropsHistory(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{})
	h.rec.Emit(step("a", "db", controller.StepEvent))
	h.rec.PublishState(controller.ObjectRef{Kind: "Database", Namespace: "a", Name: "db"}, state(t, map[string]int{"replicas": 1}))
	h.rec.Emit(step("b", "db", controller.StepEvent))
	waitFor(t, "3 messages", func() bool { return h.rec.Stats().Seq == 3 })

	h.rec.Forget("a")
	if got := h.rec.Export("a").Messages; len(got) != 0 {
		t.Errorf("namespace a after Forget has %d messages, want 0", len(got))
	}
	if got := h.rec.Export("b").Messages; len(got) != 1 {
		t.Errorf("namespace b after forgetting a has %d messages, want 1", len(got))
	}
}

func TestExportRoundTrip(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{RingSize: 3}, HubOptions{})
	ref := controller.ObjectRef{Kind: "Database", Namespace: "a", Name: "db"}
	h.rec.PublishState(ref, state(t, map[string]int{"replicas": 1}))                                                                             // 1, snapshot
	h.rec.Emit(controller.Step{Type: controller.StepController, Object: controller.ObjectRef{Kind: "Controller", Name: "database"}})             // 2, global
	h.rec.Emit(step("b", "db", controller.StepEvent))                                                                                            // 3, other namespace
	h.rec.Emit(controller.Step{Type: controller.StepStatus, Object: ref, Conditions: []controller.ConditionChange{{Type: "Ready", To: "True"}}}) // 4
	h.rec.Emit(step("a", "db", controller.StepResult))                                                                                           // 5
	h.rec.Emit(step("a", "db", controller.StepEvent))                                                                                            // 6
	waitFor(t, "6 messages", func() bool { return h.rec.Stats().Seq == 6 })

	exp := h.rec.Export("a")
	if diff := cmp.Diff([]uint64{1, 2, 4, 5, 6}, seqs(decoded(t, exp.Messages))); diff != "" {
		t.Errorf("exported seqs (-want +got):\n%s", diff)
	}
	if got := decoded(t, exp.Messages)[0]; got.Type != trace.TypeState || string(got.State) != `{"replicas":1}` {
		t.Errorf("first exported message = %+v, want the state as published", got)
	}
	// Written as the recorder stored it, or by encoding/json: either reads
	// back the same.
	var written, encoded bytes.Buffer
	if _, err := exp.WriteTo(&written); err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(&encoded).Encode(exp); err != nil {
		t.Fatal(err)
	}
	for name, buf := range map[string]*bytes.Buffer{"WriteTo": &written, "encoding/json": &encoded} {
		back, err := trace.ReadExport(buf, 1<<20)
		if err != nil {
			t.Fatalf("ReadExport of an export written by %s: %v", name, err)
		}
		if diff := cmp.Diff(exp, back); diff != "" {
			t.Errorf("round trip through %s (-exported +read):\n%s", name, diff)
		}
	}
}

func TestFramesAreBatchedAndShared(t *testing.T) {
	// With many viewers the window opens; here 100 viewers are the full
	// batch, so the window is 100ms.
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{FullBatchViewers: 100, BatchInterval: 100 * time.Millisecond})
	var vs []*viewer
	for range 100 {
		vs = append(vs, h.dial("a", -1))
	}
	h.waitClients(100)
	for range 20 {
		h.rec.Emit(step("a", "db", controller.StepEvent))
	}
	h.rec.Emit(marker("a"))
	for i, v := range vs {
		got := v.readUntil(isMarker)
		if len(got) != 21 {
			t.Fatalf("viewer %d got %d messages, want 21", i, len(got))
		}
		if v.frames >= 21 {
			t.Errorf("viewer %d got %d frames for 21 messages, want fewer (batched)", i, v.frames)
		}
	}
}

func TestRunReturnsWithAViewerThatDoesNotRead(t *testing.T) {
	// A long WriteWait and a buffer that never fills: only cutting the
	// stuck write lets Run return before the test's deadline.
	h := newHarnessSndbuf(t, trace.RecorderOptions{}, HubOptions{ClientBuffer: 1 << 14, WriteWait: 10 * time.Minute}, 16<<10)
	stuck := h.dial("a", -1) // never reads
	h.waitClients(1)
	big := strings.Repeat("x", 4<<10)
	for range 1000 {
		s := step("a", "db", controller.StepAction)
		s.Message = big
		h.rec.Emit(s)
		time.Sleep(50 * time.Microsecond) // many frames, not one
	}
	waitFor(t, "1000 messages", func() bool { return h.rec.Stats().Messages == 1000 })

	h.cancel()
	select {
	case <-h.done:
	case <-time.After(deadline):
		t.Fatal("Run did not return while a viewer's write was stuck")
	}
	_ = stuck.conn.Close()
}

func TestStepThatCannotBeEncodedKeepsItsSeq(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{})
	v := h.dial("a", -1)
	h.waitClients(1)
	bad := step("a", "db", controller.StepEvent)
	bad.Time = time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC) // JSON cannot carry it
	h.rec.Emit(bad)
	h.rec.Emit(marker("a"))
	got := v.readUntil(isMarker)
	if diff := cmp.Diff([]uint64{1, 2}, seqs(got)); diff != "" {
		t.Fatalf("seqs (-want +got):\n%s", diff)
	}
	if !strings.Contains(got[0].Error, "could not encode") || got[0].Type != controller.StepEvent {
		t.Errorf("first message = %+v, want the event with an encoding error", got[0])
	}
}

func TestViewersJoiningMidStreamGetEveryMessageOnce(t *testing.T) {
	// A viewer's catch-up comes from the Recorder and its live messages
	// from the Hub: joining while steps stream in, each viewer must still
	// get every seq exactly once, in order, fresh or resuming.
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{})
	const n, viewers = 3000, 12
	upTo := func(from, to uint64) []uint64 {
		out := []uint64{}
		for s := from; s <= to; s++ {
			out = append(out, s)
		}
		return out
	}
	// readAll reads one connection until the marker, or until it has read
	// one frame when leaveEarly.
	readAll := func(query string, leaveEarly bool) ([]trace.Message, error) {
		conn, _, err := websocket.DefaultDialer.Dial(h.url(query), nil)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		v := &viewer{t: t, conn: conn}
		var all []trace.Message
		for {
			batch, err := v.read()
			if err != nil {
				return all, err
			}
			all = append(all, batch...)
			if leaveEarly || isMarker(all[len(all)-1]) {
				return all, nil
			}
		}
	}
	var wg sync.WaitGroup
	for i := range viewers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 25 * time.Millisecond) // joining at different points
			resume := i%2 == 1
			got, err := readAll("ns=a", resume)
			if err != nil {
				t.Errorf("viewer %d: %v", i, err)
				return
			}
			from := uint64(1)
			if last := got[len(got)-1]; resume && !isMarker(last) {
				from = last.Seq + 1
				if got, err = readAll(fmt.Sprintf("ns=a&since=%d", last.Seq), false); err != nil {
					t.Errorf("viewer %d resuming: %v", i, err)
					return
				}
			}
			if diff := cmp.Diff(upTo(from, n), seqs(got)); diff != "" {
				t.Errorf("viewer %d (resumed %v) (-want +got):\n%s", i, from > 1, diff)
			}
		}()
	}
	for i := range n - 1 {
		h.rec.Emit(step("a", "db", controller.StepEvent))
		if i%10 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	h.rec.Emit(marker("a"))
	wg.Wait()
}

func TestRecorderGoesOnAfterItsHubStopped(t *testing.T) {
	// The Recorder hands the Hub what it records; once the Hub is gone it
	// must not wait for it, and a viewer connecting then is turned away.
	rec := trace.NewRecorder(trace.RecorderOptions{})
	hub := NewHub(rec, HubOptions{})
	recCtx, stopRec := context.WithCancel(context.Background())
	hubCtx, stopHub := context.WithCancel(context.Background())
	recDone, hubDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(recDone); rec.Run(recCtx) }()
	go func() { defer close(hubDone); hub.Run(hubCtx) }()
	defer func() { stopRec(); <-recDone }()
	srv := httptest.NewServer(hub.Handler(func(*http.Request) (string, error) { return "a", nil }))
	defer srv.Close()

	stopHub()
	<-hubDone
	for range 10 {
		rec.Emit(step("a", "db", controller.StepEvent))
	}
	waitFor(t, "10 messages recorded", func() bool { return len(rec.Export("a").Messages) == 10 })
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(deadline))
	_, _, err = conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("viewer after the hub stopped: %v, want closed with %d (going away)", err, websocket.CloseGoingAway)
	}
}

// An Export holds every step Emitted before it was asked for: the recorder
// records what waits in its inbox before it answers, so a goroutine that
// Emits and then Exports reads its own steps.
func TestExportReadsTheStepsEmittedBeforeIt(t *testing.T) {
	rec := trace.NewRecorder(trace.RecorderOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go rec.Run(ctx)
	obj := controller.ObjectRef{Kind: "Database", Namespace: "lab-a", Name: "shop"}
	for round := range 300 {
		for i := range 20 {
			rec.Emit(controller.Step{Type: controller.StepEvent, Object: obj, Message: fmt.Sprintf("round %d step %d", round, i)})
		}
		msgs := rec.Export("lab-a").Messages
		var last trace.Message
		if len(msgs) == 0 || json.Unmarshal(msgs[len(msgs)-1], &last) != nil || last.Step.Message != fmt.Sprintf("round %d step 19", round) {
			t.Fatalf("round %d: the export ends at %q, not at the last step Emitted before it", round, last.Step.Message)
		}
	}
}
