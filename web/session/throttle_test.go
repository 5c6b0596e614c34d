package session

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestThrottleGivesBurstThenOneAnInterval(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	th := NewThrottle(3, 10*time.Second, clk.Now)
	for i := range 3 {
		if w := th.Wait("a"); w != 0 {
			t.Fatalf("try %d: wait %v, want none within the burst", i, w)
		}
		th.Fail("a")
	}
	if w := th.Wait("a"); w != 10*time.Second {
		t.Errorf("after the burst: wait %v, want 10s", w)
	}
	if w := th.Wait("b"); w != 0 {
		t.Errorf("another address waits %v, want none", w)
	}
	clk.Add(4 * time.Second)
	if w := th.Wait("a"); w != 6*time.Second {
		t.Errorf("4 s later: wait %v, want 6s", w)
	}
	clk.Add(6 * time.Second)
	if w := th.Wait("a"); w != 0 {
		t.Errorf("an interval later: wait %v, want one try", w)
	}
	th.Fail("a")
	if w := th.Wait("a"); w == 0 {
		t.Error("the one try was used, yet no wait")
	}
}

// Issue 19 (i): 50 wrong join codes at full speed are no longer all
// compared. After JoinGuesses tries the address gets 429 with Retry-After
// (the right code too, until the wait is over), other addresses are not
// slowed, and the address gets its tries back with time.
func TestWrongJoinCodesAreThrottledPerAddress(t *testing.T) {
	ns, clk := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}
	m := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, JoinCode: "blue-otter"})
	mux := http.NewServeMux()
	m.Register(mux)
	try := func(addr, code string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/lab/join", strings.NewReader(url.Values{"join": {code}, "next": {"/lab"}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = addr + ":5000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w
	}
	var codes []int
	for i := range 50 {
		codes = append(codes, try("198.51.100.7", "guess-"+strconv.Itoa(i)).Code)
	}
	for i, c := range codes {
		want := http.StatusForbidden
		if i >= JoinGuesses {
			want = http.StatusTooManyRequests
		}
		if c != want {
			t.Fatalf("guess %d = %d, want %d (all: %v)", i, c, want, codes)
		}
	}
	w := try("198.51.100.7", "blue-otter")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(strings.ToLower(w.Body.String()), "too many wrong join codes") {
		t.Errorf("the right code while throttled = %d, Retry-After %q; want 429 with Retry-After, saying why", w.Code, w.Header().Get("Retry-After"))
	}
	if w := try("192.0.2.5", "blue-otter"); w.Code != http.StatusSeeOther {
		t.Errorf("another address with the right code = %d, want 303", w.Code)
	}
	clk.Add(JoinGuessEvery)
	if w := try("198.51.100.7", "blue-otter"); w.Code != http.StatusSeeOther {
		t.Errorf("the right code after the wait = %d, want 303", w.Code)
	}
	if len(ns.created) != 2 {
		t.Errorf("created %v; want the two sessions given the right code", ns.created)
	}
}
