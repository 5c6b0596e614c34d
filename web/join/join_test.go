package join

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// fakeNamespaces records the namespaces made; it stands in for the
// cluster because these tests are about the join form, not Kubernetes.
type fakeNamespaces struct {
	mu      sync.Mutex
	created []string
}

func (f *fakeNamespaces) Create(_ context.Context, name, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, name)
	return nil
}

func (f *fakeNamespaces) MarkActed(context.Context, string) error         { return nil }
func (f *fakeNamespaces) Delete(context.Context, string) error            { return nil }
func (f *fakeNamespaces) List(context.Context) ([]labns.Namespace, error) { return nil, nil }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newManager is a session table over opts, as web/session's tests make it.
func newManager(t *testing.T, opts session.Options) *session.Manager {
	t.Helper()
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = time.Hour
	}
	if opts.NewIdleTimeout == 0 {
		opts.NewIdleTimeout = 10 * time.Minute
	}
	m, err := session.New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// register mounts the join form on m, and the progress report on m, as
// web.New does.
func register(m *session.Manager, mux *http.ServeMux) {
	progress.Handler{Sessions: m, Known: progress.Known{Scenario: func(string) bool { return true }}}.Register(mux)
	Handler{Sessions: m, Logger: logr.Discard()}.Register(mux)
}

// postJoin submits the join form.
func postJoin(m *session.Manager, form url.Values) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/lab/join", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	mux := http.NewServeMux()
	register(m, mux)
	mux.ServeHTTP(w, r)
	return w
}

func TestJoinFormNamesWhatWasWrong(t *testing.T) {
	ns := &fakeNamespaces{}
	m := newManager(t, session.Options{Namespaces: ns, JoinCode: "blue-otter"})
	cases := []struct {
		form       url.Values
		code       int
		wantInBody string
	}{
		{url.Values{"join": {"wrong"}, "name": {"Ada"}}, http.StatusForbidden, "That join code is not this class"},
		{url.Values{"name": {"Ada"}}, http.StatusForbidden, "This class needs a join code"},
		{url.Values{"join": {"blue-otter"}, "name": {"Ada\x07"}}, http.StatusBadRequest, "control character U+0007"},
		{url.Values{"join": {"blue-otter"}, "name": {strings.Repeat("a", 41)}}, http.StatusBadRequest, "41 characters, at most 40"},
		// Every way in asks the name: the right code alone makes no lab.
		{url.Values{"join": {"blue-otter"}, "name": {"   "}}, http.StatusBadRequest, "give the name your instructor will see"},
	}
	for _, c := range cases {
		w := postJoin(m, c.form)
		body := w.Body.String()
		if w.Code != c.code || !strings.Contains(body, c.wantInBody) {
			t.Errorf("join %v = %d, want %d with %q; body:\n%s", c.form, w.Code, c.code, c.wantInBody, body)
		}
		if !strings.Contains(body, `action="/lab/join"`) {
			t.Errorf("join %v: the refusal does not show the form again", c.form)
		}
		if len(w.Result().Cookies()) != 0 {
			t.Errorf("join %v set a cookie", c.form)
		}
	}
	if len(ns.created) != 0 {
		t.Fatalf("refused joins created namespaces %v", ns.created)
	}

	w := postJoin(m, url.Values{"join": {" blue-otter "}, "name": {"  Ada Lovelace "}, "next": {"/lab?scenario=finalizer&join=x"}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/lab?scenario=finalizer" {
		t.Fatalf("join = %d to %q, want 303 to /lab?scenario=finalizer", w.Code, w.Header().Get("Location"))
	}
	list, err := m.List(t.Context())
	if err != nil || len(list) != 1 || list[0].Name != "Ada Lovelace" || list[0].Namespace != ns.created[0] {
		t.Fatalf("List = %+v, %v; want Ada Lovelace in %v", list, err, ns.created)
	}

	// The hidden next field cannot send a learner off the lab.
	for _, next := range []string{"https://evil.example/lab", "//evil.example/lab", "/instructor", "/lab/../instructor",
		"/challenges/../instructor", "/challenges/", "/challenges/a/b", "https://evil.example/code", "/code/back"} {
		if got := labPath(next); got != "/lab" {
			t.Errorf("labPath(%q) = %q, want /lab", next, got)
		}
	}
	// Pages that begin a session themselves send the learner back there.
	for next, want := range map[string]string{"/code": "/code", "/challenges/owner-gc?join=x": "/challenges/owner-gc", "/lab?join=x&scenario=drift": "/lab?scenario=drift"} {
		if got := labPath(next); got != want {
			t.Errorf("labPath(%q) = %q, want %q", next, got, want)
		}
	}
}

// Issue 19 (i): 50 wrong join codes at full speed are no longer all
// compared. After JoinGuesses tries the address gets 429 with Retry-After
// (the right code too, until the wait is over), other addresses are not
// slowed, and the address gets its tries back with time.
func TestWrongJoinCodesAreThrottledPerAddress(t *testing.T) {
	ns, clk := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}
	m := newManager(t, session.Options{Namespaces: ns, Now: clk.Now, JoinCode: "blue-otter"})
	mux := http.NewServeMux()
	register(m, mux)
	try := func(addr, code string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/lab/join", strings.NewReader(url.Values{"join": {code}, "name": {"Ada"}, "next": {"/lab"}}.Encode()))
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
		if i >= session.JoinGuesses {
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
	clk.Add(session.JoinGuessEvery)
	if w := try("198.51.100.7", "blue-otter"); w.Code != http.StatusSeeOther {
		t.Errorf("the right code after the wait = %d, want 303", w.Code)
	}
	if len(ns.created) != 2 {
		t.Errorf("created %v; want the two sessions given the right code", ns.created)
	}
}

func TestWriteFormKeepsThePageAskedFor(t *testing.T) {
	w := httptest.NewRecorder()
	WriteForm(w, httptest.NewRequest("GET", "/lab?scenario=finalizer&join=nope", nil), logr.Discard(), &session.JoinError{Given: true})
	body := w.Body.String()
	if w.Code != http.StatusForbidden || !strings.Contains(body, `value="/lab?scenario=finalizer"`) || !strings.Contains(body, "not this class") {
		t.Errorf("WriteForm = %d\n%s", w.Code, body)
	}
	if strings.Contains(body, "nope") {
		t.Error("the join form repeats the wrong code")
	}
}

// Issue 50 (4): behind a trusted proxy, the throttle's key came from the
// client's own words: a hop it wrote made its key the proxy's own address
// (shared with every request the proxy makes itself), and rotating an
// IPv6 address within its /64, its zone or a hop's port made a fresh key
// each time, never throttled. Over a real server whose peer, loopback, is
// the trusted proxy: chains that name no client share one bucket that
// locks out no one else; rotations within one client are one client.
func TestForwardedChainsNeverChooseTheKey(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)} // never moves: no try comes back
	trusted, err := session.ParseTrustedProxies("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, session.Options{Namespaces: &fakeNamespaces{}, Now: clk.Now, JoinCode: "blue-otter",
		MaxSessions: 100, ClientOf: session.ClientAddress(trusted)})
	mux := http.NewServeMux()
	register(m, mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	try := func(xff, code string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/lab/join", strings.NewReader(url.Values{"join": {code}, "name": {"Ada"}, "next": {"/lab"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// guesses sends twice an address's tries of wrong codes, the i-th
	// with chain(i), and wants the first JoinGuesses refused and the rest
	// throttled: one bucket.
	guesses := func(what string, chain func(i int) string) {
		t.Helper()
		var codes []int
		for i := range 2 * session.JoinGuesses {
			codes = append(codes, try(chain(i), "guess-"+strconv.Itoa(i)))
		}
		for i, c := range codes {
			want := http.StatusForbidden
			if i >= session.JoinGuesses {
				want = http.StatusTooManyRequests
			}
			if c != want {
				t.Errorf("%s: guess %d = %d, want %d: one client (all: %v)", what, i, c, want, codes)
				return
			}
		}
	}
	unreadable := []string{"X%d, 127.0.0.1", "X%d", " , 127.0.0.1", "127.0.0.1, ::ffff:127.0.0.1", "%d,"}
	guesses("chains that name no client", func(i int) string {
		return strings.ReplaceAll(unreadable[i%len(unreadable)], "%d", strconv.Itoa(i))
	})
	if c := try("", "blue-otter"); c != http.StatusSeeOther {
		t.Errorf("the proxy's own request with the right code = %d, want 303: unreadable chains are not keyed by the proxy's address", c)
	}
	if c := try("198.51.100.7, 127.0.0.1", "blue-otter"); c != http.StatusSeeOther {
		t.Errorf("a learner through the proxy with the right code = %d, want 303", c)
	}
	guesses("one /64", func(i int) string { return "2001:db8:1:2::" + strconv.FormatInt(int64(i+1), 16) })
	if c := try("2001:db8:1:3::1", "blue-otter"); c != http.StatusSeeOther {
		t.Errorf("the next /64 with the right code = %d, want 303", c)
	}
	guesses("one address, its zone rotated", func(i int) string { return "fe80::1%z" + strconv.Itoa(i) })
	guesses("one address, its port rotated", func(i int) string { return "198.51.100.9:" + strconv.Itoa(4000+i) })
}

// A join link (or its QR code) with the right code asks the learner's
// name before anything is made; with a wrong code it is the form again,
// refused. The page the form posts from keeps the code.
func TestAJoinLinkAsksTheName(t *testing.T) {
	ns := &fakeNamespaces{}
	m := newManager(t, session.Options{Namespaces: ns, JoinCode: "blue-otter"})
	r := httptest.NewRequest("GET", "/lab?join=blue-otter", nil)
	_, err := m.Begin(httptest.NewRecorder(), r)
	w := httptest.NewRecorder()
	WriteForm(w, r, logr.Discard(), err)
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, `value="blue-otter"`) || !strings.Contains(body, "Give your name") || !strings.Contains(body, `name="name"`) {
		t.Errorf("a join link = %d; want the form asking the name, the code kept:\n%s", w.Code, body)
	}
	if len(ns.created) != 0 {
		t.Errorf("a join link without a name made namespaces %v", ns.created)
	}
	// The name given on that form makes the lab.
	if w := postJoin(m, url.Values{"join": {"blue-otter"}, "name": {"Ada"}, "next": {"/lab"}}); w.Code != http.StatusSeeOther || len(ns.created) != 1 {
		t.Errorf("joining with the name = %d, namespaces %v", w.Code, ns.created)
	}
}
