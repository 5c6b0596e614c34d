package instructor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/web/session"
)

// Issue 19 (i): 30 wrong instructor tokens at full speed were all
// compared. After TokenGuesses the address gets 429 with Retry-After,
// the right token included, while another address is not slowed; a stale
// cookie is dropped so a polling page does not use up its address's tries.
func TestWrongTokensAreThrottledPerAddress(t *testing.T) {
	const token = "the-instructor-token-of-this-test"
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	h := New(context.Background(), Options{Token: token, Controller: &fakeSwitch{running: true},
		Throttle: session.NewThrottle(TokenGuesses, TokenGuessEvery, clock)})
	mux := http.NewServeMux()
	h.Register(mux)
	get := func(addr, tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/instructor?token="+url.QueryEscape(tok), nil)
		r.RemoteAddr = addr + ":5000"
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w
	}
	var codes []int
	for i := range 30 {
		codes = append(codes, get("198.51.100.7", "guess-"+strconv.Itoa(i)).Code)
	}
	for i, c := range codes {
		want := http.StatusForbidden
		if i >= TokenGuesses {
			want = http.StatusTooManyRequests
		}
		if c != want {
			t.Fatalf("guess %d = %d, want %d (all: %v)", i, c, want, codes)
		}
	}
	if w := get("198.51.100.7", token); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" {
		t.Errorf("the right token while throttled = %d, Retry-After %q; want 429, 30", w.Code, w.Header().Get("Retry-After"))
	}
	if w := get("192.0.2.5", token); w.Code != http.StatusSeeOther {
		t.Errorf("the right token from another address = %d, want 303", w.Code)
	}
	now = now.Add(TokenGuessEvery)
	if w := get("198.51.100.7", token); w.Code != http.StatusSeeOther {
		t.Errorf("the right token after the wait = %d, want 303", w.Code)
	}
	// A cookie from an earlier token is refused once and dropped.
	r := httptest.NewRequest("POST", "/instructor/controller/stop", nil)
	r.RemoteAddr = "192.0.2.6:5000"
	r.AddCookie(&http.Cookie{Name: CookieName, Value: "stale"})
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("stale cookie = %d, Set-Cookie %q; want 403 dropping it", w.Code, w.Header().Get("Set-Cookie"))
	}
}
