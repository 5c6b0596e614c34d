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
	defer func(d time.Duration) { replayProgressWait = d }(replayProgressWait)
	replayProgressWait = time.Second
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
	// Another visitor still gets the other slot.
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
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(page), "stopped arriving") {
		t.Errorf("slow upload = %s, want 408 saying the upload stopped arriving:\n%.3000s", resp.Status, page)
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
