package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
)

// deadline is generous: tests poll until something happens or this passes,
// and never assert on how long anything took.
const deadline = 20 * time.Second

// harness is a Recorder and its Hub running behind an httptest server on
// 127.0.0.1. A viewer's namespace is its ?ns= query parameter.
type harness struct {
	t      *testing.T
	rec    *trace.Recorder
	hub    *Hub
	srv    *httptest.Server
	cancel context.CancelFunc
	done   chan struct{} // closed when both Runs have returned
}

func newHarness(t *testing.T, ro trace.RecorderOptions, ho HubOptions) *harness {
	t.Helper()
	return newHarnessSndbuf(t, ro, ho, 0)
}

// newHarnessSndbuf is newHarness with the server's socket send buffer set to
// sndbuf bytes (when > 0), so that a viewer that does not read blocks the
// server's writes after kilobytes rather than megabytes.
func newHarnessSndbuf(t *testing.T, ro trace.RecorderOptions, ho HubOptions, sndbuf int) *harness {
	t.Helper()
	rec := trace.NewRecorder(ro)
	hub := NewHub(rec, ho)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, rec: rec, hub: hub, cancel: cancel, done: make(chan struct{})}
	var runs sync.WaitGroup
	runs.Add(2)
	go func() { defer runs.Done(); rec.Run(ctx) }()
	go func() { defer runs.Done(); hub.Run(ctx) }()
	go func() { runs.Wait(); close(h.done) }()
	h.srv = httptest.NewUnstartedServer(hub.Handler(func(r *http.Request) (string, error) {
		return r.URL.Query().Get("ns"), nil
	}))
	if sndbuf > 0 {
		h.srv.Listener = smallSendBuffers{Listener: h.srv.Listener, size: sndbuf}
	}
	h.srv.Start()
	t.Cleanup(h.stop)
	return h
}

type smallSendBuffers struct {
	net.Listener
	size int
}

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, err
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
	h.srv.Close()
}

func (h *harness) url(query string) string {
	return "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/ws?" + query
}

// dial connects a viewer of ns; since < 0 means no ?since.
func (h *harness) dial(ns string, since int64) *viewer {
	h.t.Helper()
	q := "ns=" + ns
	if since >= 0 {
		q += fmt.Sprintf("&since=%d", since)
	}
	conn, resp, err := websocket.DefaultDialer.Dial(h.url(q), nil)
	if err != nil {
		h.t.Fatalf("dialling %s: %v (response %v)", q, err, resp)
	}
	h.t.Cleanup(func() { _ = conn.Close() })
	return &viewer{t: h.t, conn: conn}
}

// waitClients polls until the hub has n viewers.
func (h *harness) waitClients(n int) {
	h.t.Helper()
	waitFor(h.t, fmt.Sprintf("%d viewers", n), func() bool { return h.hub.Stats().Clients == n })
}

// viewer is a websocket client that reads batches of messages.
type viewer struct {
	t    *testing.T
	conn *websocket.Conn
	// frames counts frames read, to check that batches are arrays.
	frames int
}

// read returns the messages of the next frame.
func (v *viewer) read() ([]trace.Message, error) {
	_ = v.conn.SetReadDeadline(time.Now().Add(deadline))
	typ, data, err := v.conn.ReadMessage()
	if err != nil {
		return nil, err
	}
	if typ != websocket.TextMessage {
		return nil, fmt.Errorf("frame type %d, want text", typ)
	}
	var batch []trace.Message
	if err := json.Unmarshal(data, &batch); err != nil {
		return nil, fmt.Errorf("frame is not a JSON array of messages: %w: %s", err, data)
	}
	if len(batch) == 0 {
		return nil, errors.New("empty batch")
	}
	v.frames++
	return batch, nil
}

// readUntil reads messages until one satisfies stop, returning all of them.
func (v *viewer) readUntil(stop func(trace.Message) bool) []trace.Message {
	v.t.Helper()
	var all []trace.Message
	for {
		batch, err := v.read()
		if err != nil {
			v.t.Fatalf("reading after %d messages: %v", len(all), err)
		}
		for _, m := range batch {
			all = append(all, m)
			if stop(m) {
				return all
			}
		}
	}
}

// readN reads exactly n messages (failing if a frame overshoots).
func (v *viewer) readN(n int) []trace.Message {
	v.t.Helper()
	var all []trace.Message
	for len(all) < n {
		batch, err := v.read()
		if err != nil {
			v.t.Fatalf("reading message %d of %d: %v", len(all), n, err)
		}
		all = append(all, batch...)
	}
	if len(all) != n {
		v.t.Fatalf("read %d messages, want exactly %d: %v", len(all), n, seqs(all))
	}
	return all
}

// closeCode reads until the connection ends and returns its close code.
func (v *viewer) closeCode() int {
	v.t.Helper()
	for {
		_, err := v.read()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		v.t.Fatalf("connection ended without a close frame: %v", err)
	}
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

// marker is a step a test emits last, so viewers know when to stop reading.
func marker(ns string) controller.Step {
	s := step(ns, "marker", controller.StepResult)
	s.Message = "marker"
	return s
}

func isMarker(m trace.Message) bool { return m.Message == "marker" }

func seqs(ms []trace.Message) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

// fixedClock is a controller.Clock that always says the same time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// decoded decodes exported messages, failing the test on one that does not.
func decoded(t *testing.T, raws []json.RawMessage) []trace.Message {
	t.Helper()
	out := make([]trace.Message, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatalf("exported message %d does not decode: %v: %s", i, err, raw)
		}
	}
	return out
}

// state encodes v as a state's JSON, as the lab's watcher does.
func state(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
