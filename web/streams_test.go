package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Issue 19 (c): 300 websockets were open on one cookie. A session holds
// maxStreamsPerSession; the next is refused with 429 before the upgrade,
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
	srv := httptest.NewServer(limitStreams(maxStreamsPerSession, owner, hold))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?who="
	dial := func(who string) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.Dial(url+who, nil)
	}
	var conns []*websocket.Conn
	for i := range maxStreamsPerSession {
		c, _, err := dial("a")
		if err != nil {
			t.Fatalf("stream %d of session a: %v", i+1, err)
		}
		conns = append(conns, c)
	}
	_, resp, err := dial("a")
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream %d of session a: %v (response %v), want 429", maxStreamsPerSession+1, err, resp)
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
	h := securityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	for _, path := range []string{"/lab", "/static/lab.js", "/nowhere"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: CSP %q, nosniff %q", path, csp, w.Header().Get("X-Content-Type-Options"))
		}
	}
}
