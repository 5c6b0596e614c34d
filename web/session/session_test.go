package session

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/oplab-dev/oplab/controller/labns"
)

// fakeNamespaces records calls; it stands in for the cluster because these
// tests are about the session table, not about Kubernetes.
type fakeNamespaces struct {
	mu      sync.Mutex
	created []string
	hashes  map[string]string // namespace → cookie hash it was created with
	acted   []string
	deleted []string
	fail    error
	// existing is what List finds in the "cluster".
	existing []labns.Namespace
	listErr  error
}

func (f *fakeNamespaces) List(context.Context) ([]labns.Namespace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.existing, f.listErr
}

func (f *fakeNamespaces) Create(_ context.Context, name, hash string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.created = append(f.created, name)
	if f.hashes == nil {
		f.hashes = map[string]string{}
	}
	f.hashes[name] = hash
	return nil
}

func (f *fakeNamespaces) MarkActed(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acted = append(f.acted, name)
	return nil
}

func (f *fakeNamespaces) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
	return nil
}

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

func newManager(t *testing.T, ns *fakeNamespaces, clk *clock, expired *[]string) *Manager {
	t.Helper()
	return newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, MaxSessions: 3,
		OnExpire: func(n string) { *expired = append(*expired, n) },
	})
}

// newManagerOpts is a Manager over opts with an idle timeout of an hour
// and ten minutes for sessions never used, unless opts says otherwise.
func newManagerOpts(t *testing.T, opts Options) *Manager {
	t.Helper()
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = time.Hour
	}
	if opts.NewIdleTimeout == 0 {
		opts.NewIdleTimeout = 10 * time.Minute
	}
	m, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// begin starts a session and returns a request carrying its cookie.
func begin(t *testing.T, m *Manager) (*http.Request, Session) {
	t.Helper()
	return beginFrom(t, m, "192.0.2.1")
}

// beginFrom starts a session for a client at addr.
func beginFrom(t *testing.T, m *Manager, addr string) (*http.Request, Session) {
	t.Helper()
	w := httptest.NewRecorder()
	first := httptest.NewRequest("GET", "/lab", nil)
	first.RemoteAddr = addr + ":40000"
	s, err := m.Begin(w, first)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("Begin set %d cookies, want 1", len(cookies))
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Name != CookieName {
		t.Errorf("cookie = %+v, want HttpOnly SameSite=Lax %s", c, CookieName)
	}
	r := httptest.NewRequest("POST", "/lab/databases", nil)
	r.RemoteAddr = first.RemoteAddr
	r.AddCookie(c)
	return r, s
}

// beginErr starts a session for a client at addr, expecting it may fail.
func beginErr(m *Manager, addr string) (Session, error) {
	r := httptest.NewRequest("GET", "/lab", nil)
	r.RemoteAddr = addr + ":40000"
	return m.Begin(httptest.NewRecorder(), r)
}

func TestBeginCreatesTheNamespace(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	r, s := begin(t, m)
	if !regexp.MustCompile(`^lab-[a-z2-7]{8}$`).MatchString(s.Namespace) {
		t.Errorf("namespace %q is not lab-<8 base32 chars>", s.Namespace)
	}
	// kubectl must work as soon as the page shows the name.
	if len(ns.created) != 1 || ns.created[0] != s.Namespace {
		t.Fatalf("Begin created namespaces %v; want %s, at once", ns.created, s.Namespace)
	}
	c, _ := r.Cookie(CookieName)
	if ns.hashes[s.Namespace] != HashCookie(c.Value) || strings.Contains(ns.hashes[s.Namespace], c.Value) {
		t.Errorf("namespace annotated %q; want the SHA-256 of the cookie, not the cookie", ns.hashes[s.Namespace])
	}
	again, err := m.Begin(httptest.NewRecorder(), r)
	if err != nil || again != s {
		t.Errorf("Begin with cookie = %v, %v; want the same session %v", again, err, s)
	}
	got, err := m.NamespaceOf(r)
	if err != nil || got != s.Namespace {
		t.Fatalf("Namespace = %q, %v; want %q", got, err, s.Namespace)
	}
	if _, err := m.NamespaceOf(r); err != nil {
		t.Fatal(err)
	}
	if len(ns.created) != 1 {
		t.Errorf("created %v, want exactly one creation", ns.created)
	}
	if len(ns.acted) != 1 || ns.acted[0] != s.Namespace {
		t.Errorf("marked in use %v; want %s once, when its cookie first came back", ns.acted, s.Namespace)
	}
}

func TestUnknownCookieIsNoSession(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	for _, name := range []string{"no cookie", "forged cookie"} {
		r := httptest.NewRequest("GET", "/ws", nil)
		if name == "forged cookie" {
			r.AddCookie(&http.Cookie{Name: CookieName, Value: "guess"})
		}
		if _, err := m.NamespaceOf(r); !errors.Is(err, ErrNoSession) {
			t.Errorf("%s: NamespaceOf err = %v, want ErrNoSession", name, err)
		}
		if _, err := m.NamespaceOf(r); !errors.Is(err, ErrNoSession) {
			t.Errorf("%s: NamespaceOf err = %v, want ErrNoSession", name, err)
		}
	}
}

func TestSweepEndsOnlyIdleSessions(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	idle, idleS := begin(t, m)
	if _, err := m.NamespaceOf(idle); err != nil {
		t.Fatal(err)
	}
	_, neverS := begin(t, m) // its cookie never comes back
	clk.Add(15 * time.Minute)
	n, err := m.Sweep(t.Context())
	if err != nil || n != 1 || !slices.Equal(ns.deleted, []string{neverS.Namespace}) {
		t.Fatalf("Sweep after 15m = %d, %v, deleted %v; want only the never-used %s ended (10m), the used one kept (1h)", n, err, ns.deleted, neverS.Namespace)
	}
	clk.Add(35 * time.Minute)
	active, activeS := begin(t, m)
	clk.Add(20 * time.Minute)
	if _, err := m.Lookup(active); err != nil {
		t.Fatal(err)
	}
	n, err = m.Sweep(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("Sweep after 70m = %d, %v; want 1 ended", n, err)
	}
	if !slices.Equal(ns.deleted, []string{neverS.Namespace, idleS.Namespace}) {
		t.Errorf("deleted %v, want %s then %s", ns.deleted, neverS.Namespace, idleS.Namespace)
	}
	if !slices.Equal(expired, []string{neverS.Namespace, idleS.Namespace}) {
		t.Errorf("OnExpire got %v, want %s and %s", expired, neverS.Namespace, idleS.Namespace)
	}
	if _, err := m.Lookup(idle); !errors.Is(err, ErrNoSession) {
		t.Errorf("idle session still known: %v", err)
	}
	if s, err := m.Lookup(active); err != nil || s != activeS {
		t.Errorf("active session lost: %v %v", s, err)
	}
}

func TestSessionCapAndFlash(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	r, _ := begin(t, m)
	r2, _ := begin(t, m)
	r3, _ := begin(t, m)
	// All three in use: none may be evicted for a newcomer.
	for _, r := range []*http.Request{r, r2, r3} {
		if _, err := m.Lookup(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", "/lab", nil)); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "--max-sessions") {
		t.Errorf("fourth session: err = %v; want the cap of 3 to refuse it, naming --max-sessions", err)
	}
	if len(ns.created) != 3 {
		t.Errorf("created %d namespaces, want 3: a refused session creates none", len(ns.created))
	}
	if f := m.TakeFlash(r); f != nil {
		t.Errorf("fresh session has flash %+v", f)
	}
	m.SetFlash(r, Flash{Error: true, Message: "boom", Field: "name"})
	if f := m.TakeFlash(r); f == nil || f.Message != "boom" || f.Field != "name" {
		t.Errorf("TakeFlash = %+v, want boom on name", f)
	}
	if f := m.TakeFlash(r); f != nil {
		t.Errorf("flash shown twice: %+v", f)
	}
}

func TestFlashKeepsBoundedExcerpts(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	r, _ := begin(t, m)
	typed := strings.Repeat("é", 45<<10) // 90 KB, as a hostile form would send
	form := map[string]string{"name": typed, "short": "orders"}
	for i := range 100 {
		form[strconv.Itoa(i)] = typed
	}
	m.SetFlash(r, Flash{Error: true, Message: `name: "` + typed + `" is not a valid name`, Field: "name", Form: form})
	f := m.TakeFlash(r)
	if f == nil {
		t.Fatal("flash lost")
	}
	size := len(f.Message)
	for k, v := range f.Form {
		size += len(k) + len(v)
	}
	if size > 2<<10 || len(f.Form) > maxFlashFields {
		t.Errorf("flash keeps %d bytes in %d fields; want at most 2 KiB, %d fields", size, len(f.Form), maxFlashFields)
	}
	if !strings.HasPrefix(f.Message, `name: "éé`) || !strings.HasSuffix(f.Message, "…") || !utf8.ValidString(f.Message) {
		t.Errorf("message %q...; want the start of the text, valid UTF-8, marked as cut", f.Message[:40])
	}
	if v, ok := f.Form["name"]; ok && (utf8.RuneCountInString(v) != maxFlashValue+1 || !strings.HasSuffix(v, "…")) {
		t.Errorf("typed name kept as %d runes; want a %d-rune excerpt", utf8.RuneCountInString(v), maxFlashValue)
	}
	m.SetFlash(r, Flash{Message: "Created orders.", Form: map[string]string{"name": "orders"}})
	if f := m.TakeFlash(r); f.Message != "Created orders." || f.Form["name"] != "orders" {
		t.Errorf("short flash = %+v; want it unchanged", f)
	}
}

func TestFullTableEvictsTheOldestUnusedSession(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	oldest, oldestS := begin(t, m)
	clk.Add(time.Second)
	used, _ := begin(t, m)
	if _, err := m.Lookup(used); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	newer, _ := begin(t, m)
	clk.Add(time.Second)
	_, s := begin(t, m) // the table holds 3: the oldest unused one makes room
	if !slices.Equal(ns.deleted, []string{oldestS.Namespace}) || !slices.Equal(expired, []string{oldestS.Namespace}) {
		t.Errorf("deleted %v, expired %v; want the oldest unused %s", ns.deleted, expired, oldestS.Namespace)
	}
	if _, err := m.Lookup(oldest); !errors.Is(err, ErrNoSession) {
		t.Errorf("evicted session still known: %v", err)
	}
	for _, r := range []*http.Request{used, newer} {
		if _, err := m.Lookup(r); err != nil {
			t.Errorf("a session that was not the oldest unused one was lost: %v", err)
		}
	}
	if s.Namespace == "" {
		t.Error("the newcomer got no namespace")
	}
}

func TestFloodCannotLockLearnersOut(t *testing.T) {
	ns, clk := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}
	m := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, MaxSessions: 50, MaxPerClient: 5})
	// One address floods without keeping cookies: it gets its share, then
	// refusals that say why, and nothing more is created for it.
	refused := 0
	for range 1000 {
		clk.Add(10 * time.Millisecond)
		if _, err := beginErr(m, "198.51.100.7"); err != nil {
			if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "your address") {
				t.Fatalf("flood refusal = %v; want ErrFull naming the address", err)
			}
			refused++
		}
	}
	if refused != 995 || len(ns.created) != 5 {
		t.Errorf("one address: %d refused, %d namespaces created; want 995 and 5", refused, len(ns.created))
	}
	// Many addresses flood: the table stays at its cap and evicts its
	// oldest unused sessions, so namespaces live = created - deleted <= 50.
	for i := range 2000 {
		clk.Add(10 * time.Millisecond)
		if _, err := beginErr(m, "203.0.113."+strconv.Itoa(i%250)); err != nil {
			t.Fatalf("flood from many addresses, request %d: %v; want the oldest unused session evicted", i, err)
		}
		if live := len(ns.created) - len(ns.deleted); live > 50 {
			t.Fatalf("%d namespaces alive after request %d; want at most 50", live, i)
		}
	}
	// A learner arriving after both floods starts, and keeps their session.
	r, s := beginFrom(t, m, "192.0.2.99")
	if got, err := m.Lookup(r); err != nil || got != s {
		t.Fatalf("learner after the flood: %v %v", got, err)
	}
	// Ten minutes later the flood's sessions are gone; the learner's is not.
	clk.Add(11 * time.Minute)
	if _, err := m.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if live := len(ns.created) - len(ns.deleted); live != 1 {
		t.Errorf("%d namespaces alive after the sweep; want only the learner's", live)
	}
	if _, err := m.Lookup(r); err != nil {
		t.Errorf("learner's session swept: %v", err)
	}
}

func TestRestoreRecognisesCookiesAfterARestart(t *testing.T) {
	ns, clk := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}
	first := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now})
	r, s := begin(t, first)
	if _, err := first.Lookup(r); err != nil {
		t.Fatal(err)
	}
	_, unused := begin(t, first)
	// The cluster keeps what the first manager wrote on its namespaces.
	for name, hash := range ns.hashes {
		ns.existing = append(ns.existing, labns.Namespace{Name: name, Created: clk.Now(), CookieHash: hash, Acted: slices.Contains(ns.acted, name)})
	}
	ns.existing = append(ns.existing, labns.Namespace{Name: "lab-older", Created: clk.Now()})
	clk.Add(3 * time.Hour)
	var told []string
	second := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, OnRestore: func(ns string) { told = append(told, ns) }})
	if n, err := second.Restore(t.Context()); n != 2 || err != nil {
		t.Fatalf("Restore = %d, %v; want 2 sessions back", n, err)
	}
	// Each restored learner's timeline is told of the restart.
	if slices.Sort(told); !slices.Equal(told, []string{s.Namespace, unused.Namespace}) && !slices.Equal(told, []string{unused.Namespace, s.Namespace}) {
		t.Errorf("OnRestore told %v; want the two restored namespaces %s and %s", told, s.Namespace, unused.Namespace)
	}
	if got, err := second.Lookup(r); err != nil || got != s {
		t.Fatalf("after the restart, the first cookie finds %v, %v; want %v", got, err, s)
	}
	// Reclaim spares restored sessions however old their namespaces are.
	if n, err := second.Reclaim(t.Context()); n != 1 || err != nil || !slices.Equal(ns.deleted, []string{"lab-older"}) {
		t.Errorf("Reclaim = %d, %v, deleted %v; want only lab-older, which has no session", n, err, ns.deleted)
	}
	// The restored sessions keep their kind: the unused one still ends soon.
	clk.Add(15 * time.Minute)
	if _, err := second.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ns.deleted, []string{"lab-older", unused.Namespace}) {
		t.Errorf("deleted %v; want the unused %s swept after 10m, the used one kept", ns.deleted, unused.Namespace)
	}
}

func TestNamespaceCreationErrorIsReported(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{fail: errors.New("apiserver down")}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	w := httptest.NewRecorder()
	_, err := m.Begin(w, httptest.NewRequest("GET", "/lab", nil))
	if err == nil || !regexp.MustCompile(`lab namespace lab-[a-z2-7]{8}: apiserver down`).MatchString(err.Error()) {
		t.Errorf("Begin err = %v, want it to name the namespace and the cause", err)
	}
	if len(w.Result().Cookies()) != 0 {
		t.Error("a session whose namespace failed set a cookie")
	}
	// The failed session holds no place: once the API server is back, the
	// cap of 3 still has room for 3.
	ns.fail = nil
	for range 3 {
		begin(t, m)
	}
}

func TestReclaimDeletesOldOrphansOnly(t *testing.T) {
	start := time.Unix(10000, 0)
	tests := []struct {
		name     string
		existing []labns.Namespace
		owned    bool // a session owns the first namespace
		listErr  error
		want     []string
		wantErr  string
	}{
		{
			name:     "older than the idle timeout and not owned: deleted",
			existing: []labns.Namespace{{Name: "lab-old", Created: start.Add(-2 * time.Hour)}},
			want:     []string{"lab-old"},
		},
		{
			name:     "fresh (another oplab may be using it): kept",
			existing: []labns.Namespace{{Name: "lab-fresh", Created: start.Add(-time.Minute)}},
		},
		{
			name:     "owned by a session of this manager: kept however old",
			existing: []labns.Namespace{{Name: "", Created: start.Add(-24 * time.Hour)}},
			owned:    true,
		},
		{
			name:    "the list fails: the error says what failed",
			listErr: errors.New("apiserver down"),
			wantErr: "list lab namespaces: apiserver down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, clk, expired := &fakeNamespaces{listErr: tt.listErr}, &clock{now: start}, []string{}
			m := newManager(t, ns, clk, &expired)
			ns.existing = tt.existing
			if tt.owned {
				_, s := begin(t, m)
				ns.existing[0].Name = s.Namespace
			}
			n, err := m.Reclaim(t.Context())
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Reclaim err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || n != len(tt.want) || len(ns.deleted) != len(tt.want) || (len(tt.want) > 0 && ns.deleted[0] != tt.want[0]) {
				t.Errorf("Reclaim = %d, %v, deleted %v; want %v", n, err, ns.deleted, tt.want)
			}
		})
	}
}

// Issue 19 (h): 10 addresses × 20 sessions that each came back once fill
// the table "in use". A newcomer is refused while they are fresh, and
// served once the one idle longest has been idle EvictIdleAfter.
func TestFloodOfUsedSessionsYieldsWithinMinutes(t *testing.T) {
	ns, clk := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}
	m := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, MaxSessions: 200, MaxPerClient: 20})
	var flood []*http.Request
	for i := range 200 {
		clk.Add(100 * time.Millisecond)
		r, _ := beginFrom(t, m, "203.0.113."+strconv.Itoa(i%10))
		if _, err := m.Lookup(r); err != nil { // the cookie comes back once
			t.Fatal(err)
		}
		flood = append(flood, r)
	}
	if _, err := beginErr(m, "192.0.2.99"); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "in use in the last 5m0s") {
		t.Fatalf("newcomer right after the flood: %v; want ErrFull saying they are all in use", err)
	}
	// A real learner keeps using theirs meanwhile: never the one evicted.
	clk.Add(4 * time.Minute)
	if _, err := m.Lookup(flood[199]); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute + time.Second)
	r, s := beginFrom(t, m, "192.0.2.99")
	if got, err := m.Lookup(r); err != nil || got != s {
		t.Fatalf("newcomer 5 minutes after the flood: %v %v; want served", got, err)
	}
	if _, err := m.Lookup(flood[0]); !errors.Is(err, ErrNoSession) {
		t.Errorf("the session idle longest was kept: %v", err)
	}
	if _, err := m.Lookup(flood[199]); err != nil {
		t.Errorf("the session used a minute ago was evicted: %v", err)
	}
	if live := len(ns.created) - len(ns.deleted); live != 200 {
		t.Errorf("%d namespaces alive; want the cap, 200", live)
	}
}

// A newcomer waiting at a full table: its wait starts again if it stops
// asking for longer than the bound, and when it is due, it takes the
// place of another address's session, never its own.
func TestAWaitingNewcomerTakesAnotherAddresssPlace(t *testing.T) {
	ns, clk := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}
	m := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, MaxSessions: 3})
	var held []*http.Request
	for _, addr := range []string{"192.0.2.99", "203.0.113.1", "192.0.2.99"} {
		clk.Add(time.Second)
		r, _ := beginFrom(t, m, addr)
		held = append(held, r)
	}
	use := func() { // in use, the newcomer's own first, so it is idle longest
		for _, r := range held {
			clk.Add(time.Second)
			if _, err := m.Lookup(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	use()
	if _, err := beginErr(m, "192.0.2.99"); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "in 5m0s") {
		t.Fatalf("first ask: %v; want ErrFull and 5 minutes", err)
	}
	// It goes away for longer than the bound: its wait starts again.
	clk.Add(5*time.Minute + time.Second)
	use()
	if _, err := beginErr(m, "192.0.2.99"); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "in 5m0s") {
		t.Fatalf("after staying away: %v; want ErrFull and 5 minutes again", err)
	}
	for range 5 {
		clk.Add(time.Minute - 3*time.Second)
		use()
	}
	if _, err := beginErr(m, "192.0.2.99"); err != nil {
		t.Fatalf("after waiting 5 minutes: %v; want a place", err)
	}
	if _, err := m.Lookup(held[1]); !errors.Is(err, ErrNoSession) {
		t.Errorf("203.0.113.1's session: %v; want it ended to make room", err)
	}
	for _, i := range []int{0, 2} {
		if _, err := m.Lookup(held[i]); err != nil {
			t.Errorf("the newcomer's own session %d: %v; want kept (it is idle longest, but its own)", i, err)
		}
	}
}

// A session manager checks its namespace prefix as labns.ValidatePrefix
// does, before it makes any namespace.
func TestNewRefusesABadNamespacePrefix(t *testing.T) {
	_, err := New(t.Context(), Options{Namespaces: labns.KubeNamespaces{}, NamespacePrefix: "Lab_"})
	if err == nil || !strings.Contains(err.Error(), "--namespace-prefix") {
		t.Errorf("New with prefix Lab_ = %v; want the prefix refused", err)
	}
}
