package lab

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Issue 19 (j): two uploads at 1 byte every 2 s held both replay slots
// for 70 s and more. Now a body that stops coming is cut (408) and frees
// its slot, and one learner holds one slot at most. The test speaks HTTP
// over loopback, as a slow client would; it waits for answers, with a
// generous bound only so that a hang fails instead of stalling.
func TestSlowUploadIsCutAndHoldsOneSlot(t *testing.T) {
	defer func(d time.Duration) { replayGrace = d }(replayGrace)
	replayGrace = time.Second
	h := newHarness(t)
	srv := httptest.NewServer(h.mux)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const boundary = "slowslowslow"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.json\"\r\nContent-Type: application/json\r\n\r\n"
	fmt.Fprintf(conn, "POST /lab/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: %s=%s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: 100000\r\n\r\n%s{\"version\":1",
		h.cookie.Name, h.cookie.Value, boundary, head)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte now and then, far below the rate asked for
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()

	// While it trickles in, the same learner cannot start a second one.
	who := "ns:" + h.ns
	deadline := time.Now().Add(time.Minute)
	for {
		replaying.Lock()
		busy := replaying.by[who]
		replaying.Unlock()
		if busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow upload never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if w := uploadAs(h, h.cookie, "192.0.2.1:4000", []byte(exportJSON(1, ""))); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Errorf("a second replay of the same learner = %d, want 429 with Retry-After", w.Code)
	}
	// Another visitor still replays.
	if w := uploadAs(h, nil, "192.0.2.77:4000", []byte(exportJSON(1, ""))); w.Code != http.StatusOK {
		t.Errorf("another visitor's replay = %d, want 200", w.Code)
	}

	// The slow one is answered 408, naming the rate, and its slot is free.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the slow upload was never answered: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(page), "came too slowly") || !strings.Contains(string(page), "64 KiB/s") {
		t.Errorf("slow upload = %s, want 408 saying the upload came too slowly, naming the rate:\n%.3000s", resp.Status, page)
	}
	if w := uploadAs(h, h.cookie, "192.0.2.1:4000", []byte(exportJSON(1, ""))); w.Code != http.StatusOK {
		t.Errorf("the learner's replay after the slow one was cut = %d, want 200", w.Code)
	}
}

// uploadAs posts body as a replay from remote, with the session cookie c
// (nil: none).
func uploadAs(h *harness, c *http.Cookie, remote string, body []byte) *httptest.ResponseRecorder {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "t.json")
	_, _ = fw.Write(body)
	_ = mw.Close()
	r := httptest.NewRequest("POST", "/lab/replay", &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	r.RemoteAddr = remote
	if c != nil {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, r)
	return w
}

// Issue 50 (4): two sessions trickling 64 KiB every 8 s held both replay
// slots for 5 minutes, and every other learner got 503. Now each session
// has its own slot, and a trickle is cut once its average falls below
// the minimum rate: over a real server, while two sessions trickle, a
// third learner and a visitor without a session replay at once, a session
// gets no second upload, and each trickle is answered 408 naming the
// rate, its spooled bytes given back.
func TestTricklingUploadsHoldNoOneElsesReplay(t *testing.T) {
	defer func(d time.Duration) { replayGrace = d }(replayGrace)
	replayGrace = time.Second
	h := newHarness(t)
	srv := httptest.NewServer(h.mux)
	defer srv.Close()
	second := newSession(t, h)

	stop := make(chan struct{})
	defer close(stop)
	trickle := func(c *http.Cookie) net.Conn {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		const boundary = "tricklet"
		fmt.Fprintf(conn, "POST /lab/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: %s=%s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n"+
			"--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.json\"\r\nContent-Type: application/json\r\n\r\n{\"version\":1,\"exportedAt\":\"",
			c.Name, c.Value, boundary, 32<<20, boundary)
		go func() { // 64 KiB of one long string every 8 s
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for {
				if _, err := conn.Write(chunk); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(8 * time.Second):
				}
			}
		}()
		return conn
	}
	conns := []net.Conn{trickle(h.cookie), trickle(second)}
	deadline := time.Now().Add(time.Minute)
	for {
		replaying.Lock()
		both := replaying.by["ns:"+h.ns] && len(replaying.by) >= 2
		replaying.Unlock()
		if both {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trickles never started")
		}
		time.Sleep(10 * time.Millisecond)
	}

	if w := uploadAs(h, newSession(t, h), "192.0.2.1:4000", []byte(exportJSON(1, ""))); w.Code != http.StatusOK {
		t.Errorf("a third learner's replay while two trickle = %d %q, want 200", w.Code, replayError(w.Body.String()))
	}
	if w := uploadAs(h, nil, "192.0.2.77:4000", []byte(exportJSON(1, ""))); w.Code != http.StatusOK {
		t.Errorf("a visitor's replay while two trickle = %d %q, want 200", w.Code, replayError(w.Body.String()))
	}
	if w := uploadAs(h, h.cookie, "192.0.2.1:4000", []byte(exportJSON(1, ""))); w.Code != http.StatusTooManyRequests {
		t.Errorf("a trickling session's second replay = %d, want 429", w.Code)
	}
	for i, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("trickle %d was never answered: %v", i, err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(page), "64 KiB/s on average") {
			t.Errorf("trickle %d = %s, want 408 naming the rate:\n%.2000s", i, resp.Status, page)
		}
	}
	// The handlers give back their spool once they have answered.
	for deadline := time.Now().Add(time.Minute); replaySpool.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d spooled bytes still counted after every replay ended", replaySpool.Load())
		}
	}
}

// newSession opens the lab without a cookie, as a new browser would, and
// returns its session cookie.
func newSession(t *testing.T, h *harness) *http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, httptest.NewRequest("GET", "/lab", nil))
	if w.Code != http.StatusOK || len(w.Result().Cookies()) != 1 {
		t.Fatalf("GET /lab = %d, cookies %v", w.Code, w.Result().Cookies())
	}
	return w.Result().Cookies()[0]
}
