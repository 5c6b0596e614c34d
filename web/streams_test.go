package web

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Issue 19 (c): 300 websockets were open on one cookie. A session holds
// MaxStreamsPerSession; the next is refused with 429 before the upgrade,
// another session is not affected, and closing one gives its place back.
func TestStreamsPerSessionAreBounded(t *testing.T) {
	var closed atomic.Int64
	up := websocket.Upgrader{}
	hold := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		// As the hub does: the handler returns, the connection lives on.
		go func() {
			defer func() { c.Close(); closed.Add(1) }()
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
	})
	owner := func(r *http.Request) string { return r.URL.Query().Get("who") }
	srv := httptest.NewServer(limitStreams(MaxStreamsPerSession, owner, hold))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?who="
	dial := func(who string) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.Dial(url+who, nil)
	}
	var conns []*websocket.Conn
	for i := range MaxStreamsPerSession {
		c, _, err := dial("a")
		if err != nil {
			t.Fatalf("stream %d of session a: %v", i+1, err)
		}
		conns = append(conns, c)
	}
	_, resp, err := dial("a")
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream %d of session a: %v (response %v), want 429", MaxStreamsPerSession+1, err, resp)
	}
	if c, _, err := dial("b"); err != nil {
		t.Fatalf("another session's stream: %v", err)
	} else {
		c.Close()
	}
	// A place comes back once a stream has closed on the server's side.
	conns[0].Close()
	deadline := time.Now().Add(time.Minute)
	for closed.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the server never saw the streams close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, _, err := dial("a")
	if err != nil {
		t.Fatalf("session a after closing one: %v", err)
	}
	c.Close()
	for _, c := range conns[1:] {
		c.Close()
	}
}

// Every response carries the policy: no inline script, no framing, nosniff.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	h := SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	for _, path := range []string{"/lab", "/static/lab/main.js", "/nowhere"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: CSP %q, nosniff %q", path, csp, w.Header().Get("X-Content-Type-Options"))
		}
	}
}

// Issue 19 (j): only ReadHeaderTimeout was set, so a body sent a byte at
// a time held its handler for ever. Every request but a websocket upgrade
// now has a read deadline; the test drips a body over loopback and waits
// (with a generous bound, so a hang fails) for the handler's read to fail.
func TestSlowBodyIsCut(t *testing.T) {
	defer func(d time.Duration) { bodyTimeout = d }(bodyTimeout)
	bodyTimeout = 500 * time.Millisecond
	readErr := make(chan error, 1)
	srv := httptest.NewServer(bodyDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /lab/progress HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	select {
	case err := <-readErr:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("reading the slow body: %v, want the deadline exceeded", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the slow body was never cut")
	}
}
