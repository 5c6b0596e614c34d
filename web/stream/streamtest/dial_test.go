package streamtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gorilla/websocket"
)

func TestDialOffersCompressionAndCountsWireBytes(t *testing.T) {
	const msg = "hello, viewer"
	up := websocket.Upgrader{EnableCompression: true}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.EnableWriteCompression(false) // so the wire carries msg as it is
		_ = c.WriteMessage(websocket.TextMessage, []byte(msg))
		_, _, _ = c.ReadMessage() // until the client goes
	}))
	defer srv.Close()

	var wire atomic.Int64
	conn, resp, err := Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), &wire)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.Contains(ext, "permessage-deflate") {
		t.Errorf("Sec-WebSocket-Extensions = %q, want permessage-deflate negotiated", ext)
	}
	_, data, err := conn.ReadMessage()
	if err != nil || string(data) != msg {
		t.Fatalf("read %q, %v; want %q", data, err, msg)
	}
	// The handshake's response and the message may arrive in one read.
	if got, want := wire.Load(), int64(len("HTTP/1.1 101 Switching Protocols\r\n")+len(msg)); got < want {
		t.Errorf("%d bytes counted, want at least the handshake status line and the message, %d", got, want)
	}
}

func TestCommandRunsAtTheNicenessAsked(t *testing.T) {
	// nice(1) adds to the niceness it runs at, capped at 19.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := 20 - prio // the raw system call answers 20 - niceness
	for _, nice := range []int{0, 7} {
		out, err := Command(context.Background(), nice, "sh", "-c", "cut -d' ' -f19 /proc/self/stat").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(out)), strconv.Itoa(min(own+nice, 19)); got != want {
			t.Errorf("Command(%d) ran at niceness %s, want %s (this test runs at %d)", nice, got, want, own)
		}
	}
}
