package instructor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
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

// Issue 50 (4): the throttle counted before it read the cookie, so six
// wrong instructor cookies from an address (a learner behind the
// instructor's NAT) locked the instructor out, 429 with a valid cookie.
// Over a real server, from one address: wrong cookies and wrong tokens,
// then the instructor's own cookie still opens the page and the switch,
// while a token given from that address waits its turn; and a cookie
// computed from the token alone (what the cookie used to be) opens
// nothing, so a cookie is no way to test guesses of the token.
func TestAWrongCookieNeverLocksTheInstructorOut(t *testing.T) {
	const token = "the-instructor-token-of-this-test"
	now := time.Unix(0, 0)
	clock := func() time.Time { return now } // never moves: no try comes back
	sw := &fakeSwitch{running: true}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: sw,
		Throttle: session.NewThrottle(TokenGuesses, TokenGuessEvery, clock), ClientOf: session.ClientAddress(nil)}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string, cookie *http.Cookie) *http.Response {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("confirm=" + ConfirmStop)
		}
		req, _ := http.NewRequest(method, srv.URL+path, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := send("GET", "/instructor?token="+url.QueryEscape(token), nil)
	var mine *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == CookieName {
			mine = ck
		}
	}
	if resp.StatusCode != http.StatusSeeOther || mine == nil {
		t.Fatalf("signing in = %d, cookies %v; want 303 and the cookie", resp.StatusCode, resp.Cookies())
	}

	// The learner behind the same address: wrong cookies on the page and
	// on the switch, twice the tries an address has, then wrong tokens.
	for i := range 2 * TokenGuesses {
		if r := send("GET", "/instructor", &http.Cookie{Name: CookieName, Value: "guess-" + strconv.Itoa(i)}); r.StatusCode != http.StatusForbidden {
			t.Fatalf("wrong cookie %d on the page = %d, want 403", i, r.StatusCode)
		}
		if r := send("POST", "/instructor/controller/stop", &http.Cookie{Name: CookieName, Value: "guess-" + strconv.Itoa(i)}); r.StatusCode != http.StatusForbidden || !sw.running {
			t.Fatalf("wrong cookie %d on the switch = %d (running %v), want 403 and still running", i, r.StatusCode, sw.running)
		}
	}
	for i := range TokenGuesses {
		if r := send("GET", "/instructor?token=guess-"+strconv.Itoa(i), nil); r.StatusCode != http.StatusForbidden {
			t.Fatalf("wrong token %d = %d, want 403", i, r.StatusCode)
		}
	}
	if r := send("GET", "/instructor?token="+url.QueryEscape(token), nil); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right token given from the throttled address = %d, want 429 (a given token is a guess)", r.StatusCode)
	}

	// The instructor's cookie is never throttled.
	if r := send("GET", "/instructor", mine); r.StatusCode != http.StatusOK {
		t.Errorf("the instructor's page with the valid cookie = %d, want 200", r.StatusCode)
	}
	if r := send("POST", "/instructor/controller/stop", mine); r.StatusCode != http.StatusSeeOther || sw.running {
		t.Errorf("the instructor's Stop with the valid cookie = %d (running %v), want 303 and stopped", r.StatusCode, sw.running)
	}

	// What anyone can compute from a guess of the token is not a cookie.
	plain := sha256.Sum256([]byte("oplab instructor\x00" + token))
	if r := send("POST", "/instructor/controller/start", &http.Cookie{Name: CookieName, Value: hex.EncodeToString(plain[:])}); r.StatusCode != http.StatusForbidden || sw.running {
		t.Errorf("a cookie computed from the token = %d (running %v), want 403", r.StatusCode, sw.running)
	}
}
