package stream

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
)

// Keepalive timings for these tests: pings far more often than the pong
// wait, so a viewer that answers is never near its deadline however slow
// the machine, while one that does not is cut within a second.
const (
	testPongWait   = 500 * time.Millisecond
	testPingPeriod = 50 * time.Millisecond
)

func TestViewerThatAnswersPingsStaysConnected(t *testing.T) {
	h := newHarness(t, trace.RecorderOptions{}, HubOptions{PongWait: testPongWait, PingPeriod: testPingPeriod})
	v := h.dial("a", -1)
	h.waitClients(1)
	// Count pings, then let gorilla's default handler answer them.
	var pings atomic.Int64
	answer := v.conn.PingHandler()
	v.conn.SetPingHandler(func(data string) error {
		pings.Add(1)
		return answer(data)
	})

	// Stay well past several pong waits, receiving a step each round; the
	// pings are answered while the viewer reads.
	want := int64(4 * testPongWait / testPingPeriod)
	end := time.Now().Add(deadline)
	for i := 0; pings.Load() < want; i++ {
		if time.Now().After(end) {
			t.Fatalf("gave up after %d pings, want %d", pings.Load(), want)
		}
		s := step("a", "db", controller.StepEvent)
		s.Message = strconv.Itoa(i)
		h.rec.Emit(s)
		v.readUntil(func(m trace.Message) bool { return m.Message == s.Message })
		time.Sleep(testPingPeriod)
	}

	if st := h.hub.Stats(); st.Clients != 1 || st.DroppedClients != 0 {
		t.Errorf("stats %+v; want the viewer still connected and none dropped", st)
	}
	h.rec.Emit(marker("a"))
	v.readUntil(isMarker)
}

func TestViewerThatDoesNotAnswerPingsIsClosed(t *testing.T) {
	t.Run("never reads", func(t *testing.T) {
		h := newHarness(t, trace.RecorderOptions{}, HubOptions{PongWait: testPongWait, PingPeriod: testPingPeriod})
		v := h.dial("a", -1) // never reads, so never answers a ping
		h.waitClients(1)
		h.waitClients(0)
		if st := h.hub.Stats(); st.DroppedClients != 0 {
			t.Errorf("stats %+v; want the viewer timed out, not dropped as slow", st)
		}
		// Whatever was queued for it, the connection then ends.
		for {
			if _, err := v.read(); err != nil {
				break
			}
		}
	})

	t.Run("ignores pings", func(t *testing.T) {
		h := newHarness(t, trace.RecorderOptions{}, HubOptions{PongWait: testPongWait, PingPeriod: testPingPeriod})
		v := h.dial("a", -1)
		var pings atomic.Int64
		v.conn.SetPingHandler(func(string) error { pings.Add(1); return nil })
		ended := make(chan error, 1)
		go func() {
			for {
				if _, _, err := v.conn.ReadMessage(); err != nil {
					ended <- err
					return
				}
			}
		}()
		h.waitClients(1)
		h.waitClients(0)
		select {
		case <-ended:
		case <-time.After(deadline):
			t.Fatal("the server did not close a viewer that ignores pings")
		}
		if pings.Load() == 0 {
			t.Error("the viewer saw no ping before it was closed")
		}
	})
}

func TestPingPeriodDefaults(t *testing.T) {
	tests := []struct {
		name           string
		pongWait, ping time.Duration
		want           time.Duration
	}{
		{"zero options", 0, 0, DefaultPongWait * 9 / 10},
		{"shorter than the pong wait", time.Second, 100 * time.Millisecond, 100 * time.Millisecond},
		{"equal to the pong wait", time.Second, time.Second, 900 * time.Millisecond},
		{"longer than the pong wait", time.Second, time.Minute, 900 * time.Millisecond},
		{"negative", time.Second, -time.Second, 900 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HubOptions{PongWait: tt.pongWait, PingPeriod: tt.ping}.withDefaults().PingPeriod
			if got != tt.want {
				t.Errorf("PingPeriod = %v, want %v", got, tt.want)
			}
		})
	}
}
