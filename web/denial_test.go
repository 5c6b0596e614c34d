package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/session"
)

// Issue 50 (4): no one person denies a class. These tests try each way
// the attacker's pass found, over a real HTTP server, and want it to fail.

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// visitor is one browser: a client address (sent as X-Forwarded-For from
// the trusted loopback proxy) and its session cookie, once it has one.
type visitor struct {
	t      *testing.T
	url    string
	addr   string
	cookie string
}

// get requests path as v and returns the status and body; a session
// cookie set in the answer is kept.
func (v *visitor) get(path string) (int, string) {
	v.t.Helper()
	req, _ := http.NewRequest("GET", v.url+path, nil)
	req.Header.Set("X-Forwarded-For", v.addr)
	if v.cookie != "" {
		req.AddCookie(&http.Cookie{Name: session.CookieName, Value: v.cookie})
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == session.CookieName {
			v.cookie = c.Value
		}
	}
	return resp.StatusCode, string(b)
}

// denialServer is the web server on fake parts with a session table of
// opts (its clock clk, its clients told apart behind the loopback proxy),
// listening on loopback.
func denialServer(t *testing.T, clk *testClock, opts session.Options) (*httptest.Server, *memNamespaces) {
	t.Helper()
	parts, _ := fakeParts(t)
	ns := &memNamespaces{}
	trusted, err := session.ParseTrustedProxies("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	opts.Namespaces, opts.Now, opts.ClientOf = ns, clk.Now, session.ClientAddress(trusted)
	if parts.Sessions, err = session.New(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	parts.TrustedProxies, parts.Now = trusted, clk.Now
	parts.LearnerCode = noCode{}
	s, err := New(t.Context(), parts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, ns
}

// noCode is a /code page with no cluster behind it: its routes answer,
// and none runs code.
type noCode struct{}

func (noCode) GrantCode(context.Context, string) error         { return errors.New("no cluster here") }
func (noCode) HandOver(string, controller.NamespaceReconciler) {}
func (noCode) TakeBack(string)                                 {}
func (noCode) HandedOver(string) bool                          { return false }

// A full table whose sessions all ping every 30 s kept a newcomer at 503
// for 11 minutes, until the pings stopped. Now the newcomer, reloading,
// gets the place of the session idle longest of another address once it
// has waited 5 minutes (EvictIdleAfter), pings or not; and the address
// whose session went waits its own 5 minutes before it takes one back.
func TestAFullTableOfPingingSessionsYieldsToANewcomer(t *testing.T) {
	clk := &testClock{now: time.Unix(1_000_000, 0)}
	srv, _ := denialServer(t, clk, session.Options{MaxSessions: 4, MaxPerClient: 2})
	var flood []*visitor
	for _, addr := range []string{"203.0.113.1", "203.0.113.1", "203.0.113.2", "203.0.113.2"} {
		v := &visitor{t: t, url: srv.URL, addr: addr}
		if code, body := v.get("/lab"); code != http.StatusOK {
			t.Fatalf("flood session from %s = %d %.200s", addr, code, body)
		}
		flood = append(flood, v)
	}
	// Each session pings a second after the one before it, so flood[0]
	// is always the one idle longest.
	ping := func() {
		for i, v := range flood {
			clk.Add(time.Second)
			if code, _ := v.get("/lab/ping"); code != http.StatusNoContent {
				t.Fatalf("flood session %d's ping = %d, want 204", i, code)
			}
		}
	}
	ping() // every cookie came back: all in use
	newcomer := &visitor{t: t, url: srv.URL, addr: "192.0.2.99"}
	code, body := newcomer.get("/lab")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("newcomer at a full table = %d %.300q; want 503", code, body)
	}
	if !strings.Contains(body, "reload this page in 5m0s") {
		t.Errorf("newcomer at a full table is told %q; want when to reload", body)
	}
	// Every session pings every 30 s; the newcomer reloads every minute.
	for s := 30; s < 300; s += 30 {
		clk.Add(30*time.Second - time.Duration(len(flood))*time.Second)
		ping()
		if s%60 == 0 {
			if code, body := newcomer.get("/lab"); code != http.StatusServiceUnavailable {
				t.Fatalf("newcomer after %d s = %d %.200s; want 503 until 5 minutes", s, code, body)
			}
		}
	}
	clk.Add(30*time.Second - time.Duration(len(flood))*time.Second)
	ping()
	if code, body := newcomer.get("/lab"); code != http.StatusOK {
		t.Fatalf("newcomer 5 minutes after the first refusal = %d %.300s; want the lab", code, body)
	}
	if code, _ := newcomer.get("/lab/ping"); code != http.StatusNoContent {
		t.Errorf("the newcomer's session = %d, want kept", code)
	}
	if code, _ := flood[0].get("/lab/ping"); code != http.StatusForbidden {
		t.Errorf("the session idle longest pings = %d, want 403: it made room", code)
	}
	for i, v := range flood[1:] {
		if code, _ := v.get("/lab/ping"); code != http.StatusNoContent {
			t.Errorf("flood session %d = %d, want kept", i+1, code)
		}
	}
	// The evicted address asks again: it waits, as the newcomer did.
	flood[0].cookie = ""
	if code, body := flood[0].get("/lab"); code != http.StatusServiceUnavailable || !strings.Contains(body, "5m0s") {
		t.Errorf("the evicted address asking again = %d %.200s; want 503 and its own 5 minutes", code, body)
	}
}

// costlySamples is a request of each costly route, as a learner's page
// sends it.
var costlySamples = map[string]struct{ method, path string }{
	"GET /lab/history":                 {"GET", "/lab/history?at=1"},
	"GET /lab/history/diff":            {"GET", "/lab/history/diff?from=1&to=2"},
	"GET /lab/replay/history":          {"GET", "/lab/replay/history?replay=0123&at=1"},
	"GET /lab/replay/history/diff":     {"GET", "/lab/replay/history/diff?replay=0123&from=1&to=2"},
	"GET /lab/export":                  {"GET", "/lab/export"},
	"GET /lab/kubeconfig":              {"GET", "/lab/kubeconfig"},
	"POST /lab/replay":                 {"POST", "/lab/replay"},
	"POST /lab/kubectl":                {"POST", "/lab/kubectl"},
	"GET /challenges/{id}/status":      {"GET", "/challenges/owner-gc/status"},
	"POST /lab/replay/test/{schedule}": {"POST", "/lab/replay/test/0"},
	"POST /code/run":                   {"POST", "/code/run"},
	"POST /code/test":                  {"POST", "/code/test"},
}

// send makes one request of v (its session cookie, its address), asking
// for JSON as the pages' scripts do.
func (v *visitor) send(method, path string) (*http.Response, string) {
	v.t.Helper()
	req, _ := http.NewRequest(method, v.url+path, nil)
	req.Header.Set("X-Forwarded-For", v.addr)
	req.Header.Set("Accept", "application/json")
	if v.cookie != "" {
		req.AddCookie(&http.Cookie{Name: session.CookieName, Value: v.cookie})
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// History diffs were unthrottled: 400 kept oplab at 1.13 cores. Every
// costly kind of request now spends a token of its sender's bucket: over
// a real server, a session's burst of each kind (its routes in turn) is
// served, the next is 429 with Retry-After naming what was limited, while
// another session of the same address is served, and the bucket gives one
// more after its interval.
func TestCostlyRequestsAreLimitedPerSession(t *testing.T) {
	clk := &testClock{now: time.Unix(1_000_000, 0)}
	srv, _ := denialServer(t, clk, session.Options{})
	for _, c := range costlyRequests {
		t.Run(c.what, func(t *testing.T) {
			learner := &visitor{t: t, url: srv.URL, addr: "198.51.100.20"}
			other := &visitor{t: t, url: srv.URL, addr: "198.51.100.20"}
			for _, v := range []*visitor{learner, other} {
				if code, _ := v.get("/lab"); code != http.StatusOK {
					t.Fatalf("GET /lab = %d", code)
				}
			}
			sample := func(i int) (string, string) {
				s, ok := costlySamples[c.patterns[i%len(c.patterns)]]
				if !ok {
					t.Fatalf("no sample request of %s: add one to costlySamples", c.patterns[i%len(c.patterns)])
				}
				return s.method, s.path
			}
			for i := range c.burst {
				m, p := sample(i)
				resp, body := learner.send(m, p)
				if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusMethodNotAllowed || strings.Contains(body, "404 page not found") {
					t.Fatalf("%s %s, %d of the burst of %d = %d %.200s; want it served", m, p, i+1, c.burst, resp.StatusCode, body)
				}
			}
			m, p := sample(c.burst)
			resp, body := learner.send(m, p)
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
				!strings.Contains(body, "too many "+c.what) || !strings.Contains(body, "lab session") {
				t.Fatalf("%s %s past the burst = %d Retry-After %q %.300s; want 429 with Retry-After naming %q", m, p, resp.StatusCode, resp.Header.Get("Retry-After"), body, c.what)
			}
			if resp, body := other.send(m, p); resp.StatusCode == http.StatusTooManyRequests {
				t.Errorf("another session of the same address = 429 %.200s; want its own bucket", body)
			}
			clk.Add(c.every)
			if resp, body := learner.send(m, p); resp.StatusCode == http.StatusTooManyRequests {
				t.Errorf("%s after %s = 429 %.200s; want one more", p, c.every, body)
			}
			if resp, _ := learner.send(m, p); resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("%s right after = %d; want 429 again", p, resp.StatusCode)
			}
		})
	}
}
