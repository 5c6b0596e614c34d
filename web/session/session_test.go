package session

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"
)

// fakeNamespaces records calls; it stands in for the cluster because these
// tests are about the session table, not about Kubernetes.
type fakeNamespaces struct {
	mu      sync.Mutex
	created []string
	deleted []string
	fail    error
	// existing is what List finds in the "cluster".
	existing []Namespace
	listErr  error
}

func (f *fakeNamespaces) List(context.Context) ([]Namespace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.existing, f.listErr
}

func (f *fakeNamespaces) Create(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.created = append(f.created, name)
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
	m, err := New(t.Context(), Options{
		Namespaces: ns, IdleTimeout: time.Hour, Now: clk.Now, MaxSessions: 3,
		OnExpire: func(n string) { *expired = append(*expired, n) },
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// begin starts a session and returns a request carrying its cookie.
func begin(t *testing.T, m *Manager) (*http.Request, Session) {
	t.Helper()
	w := httptest.NewRecorder()
	s, err := m.Begin(w, httptest.NewRequest("GET", "/lab", nil))
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
	r.AddCookie(c)
	return r, s
}

func TestBeginNamesNamespaceWithoutCreatingIt(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	r, s := begin(t, m)
	if !regexp.MustCompile(`^lab-[a-z2-7]{8}$`).MatchString(s.Namespace) {
		t.Errorf("namespace %q is not lab-<8 base32 chars>", s.Namespace)
	}
	if len(ns.created) != 0 {
		t.Errorf("Begin created namespaces %v; want none before the first write", ns.created)
	}
	again, err := m.Begin(httptest.NewRecorder(), r)
	if err != nil || again != s {
		t.Errorf("Begin with cookie = %v, %v; want the same session %v", again, err, s)
	}
	got, err := m.Namespace(r)
	if err != nil || got != s.Namespace {
		t.Fatalf("Namespace = %q, %v; want %q", got, err, s.Namespace)
	}
	if _, err := m.Namespace(r); err != nil {
		t.Fatal(err)
	}
	if len(ns.created) != 1 {
		t.Errorf("created %v, want exactly one creation", ns.created)
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
		if _, err := m.Namespace(r); !errors.Is(err, ErrNoSession) {
			t.Errorf("%s: Namespace err = %v, want ErrNoSession", name, err)
		}
	}
}

func TestSweepEndsOnlyIdleSessions(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	idle, idleS := begin(t, m)
	if _, err := m.Namespace(idle); err != nil {
		t.Fatal(err)
	}
	never, neverS := begin(t, m) // never wrote: nothing to delete
	_ = never
	clk.Add(50 * time.Minute)
	active, activeS := begin(t, m)
	clk.Add(20 * time.Minute)
	if _, err := m.Lookup(active); err != nil {
		t.Fatal(err)
	}
	n, err := m.Sweep(t.Context())
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2 ended", n, err)
	}
	if len(ns.deleted) != 1 || ns.deleted[0] != idleS.Namespace {
		t.Errorf("deleted %v, want only %s (the other idle one was never created)", ns.deleted, idleS.Namespace)
	}
	if len(expired) != 2 {
		t.Errorf("OnExpire got %v, want %s and %s", expired, idleS.Namespace, neverS.Namespace)
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
	begin(t, m)
	begin(t, m)
	if _, err := m.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", "/lab", nil)); err == nil {
		t.Error("fourth session started; want the cap of 3 to refuse it")
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

func TestNamespaceCreationErrorIsReported(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{fail: errors.New("apiserver down")}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManager(t, ns, clk, &expired)
	r, s := begin(t, m)
	_, err := m.Namespace(r)
	if err == nil || !regexp.MustCompile(s.Namespace+`.*apiserver down`).MatchString(err.Error()) {
		t.Errorf("Namespace err = %v, want it to name %s and the cause", err, s.Namespace)
	}
}

func TestReclaimDeletesOldOrphansOnly(t *testing.T) {
	start := time.Unix(10000, 0)
	tests := []struct {
		name     string
		existing []Namespace
		owned    bool // a session owns the first namespace
		listErr  error
		want     []string
		wantErr  string
	}{
		{
			name:     "older than the idle timeout and not owned: deleted",
			existing: []Namespace{{Name: "lab-old", Created: start.Add(-2 * time.Hour)}},
			want:     []string{"lab-old"},
		},
		{
			name:     "fresh (another oplab may be using it): kept",
			existing: []Namespace{{Name: "lab-fresh", Created: start.Add(-time.Minute)}},
		},
		{
			name:     "owned by a session of this manager: kept however old",
			existing: []Namespace{{Name: "", Created: start.Add(-24 * time.Hour)}},
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
