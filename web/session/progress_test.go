package session

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/web/progress"
)

// The checks of a report are web/progress's; these are what the table
// does with one: keep it on the session, stamped, until the session ends.

// postProgress reports body for the session whose cookie r carries,
// through web/progress's handler as web.New mounts it.
func postProgress(m *Manager, r *http.Request, body string) *httptest.ResponseRecorder {
	p := httptest.NewRequest("POST", "/lab/progress", strings.NewReader(body))
	for _, c := range r.Cookies() {
		p.AddCookie(c)
	}
	w := httptest.NewRecorder()
	mux := http.NewServeMux()
	progress.Handler{Sessions: m, Known: progress.Known{
		Scenario:       func(name string) bool { return name == "first-reconcile" || name == "finalizer" },
		ChallengeTasks: func(id string) (int, bool) { return 4, id == "drift-repair" },
		QuizSize:       20,
	}}.Register(mux)
	mux.ServeHTTP(w, p)
	return w
}

func TestProgressIsKeptOnTheSessionAndGoesWithIt(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, IdleTimeout: time.Hour,
		OnExpire: func(n string) { expired = append(expired, n) }})
	r, s := begin(t, m)
	w := postProgress(m, r, `{"name":"Grace","scenarios":["finalizer","first-reconcile","finalizer"],
		"challenges":{"drift-repair":{"done":3,"of":4}},"quizBest":7,"cardsReviewed":12}`)
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"name":"Grace"}` {
		t.Fatalf("progress = %d %s, want 200 with the name", w.Code, w.Body)
	}
	list, err := m.List(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	got := list[0]
	if got.Namespace != s.Namespace || got.Name != "Grace" || strings.Join(got.Progress.Scenarios, ",") != "finalizer,first-reconcile" ||
		got.Progress.Challenges["drift-repair"] != (progress.ChallengeProgress{Done: 3, Of: 4}) || got.Progress.QuizBest != 7 ||
		got.Progress.CardsReviewed != 12 || !got.Progress.Reported.Equal(clk.Now()) {
		t.Errorf("List[0] = %+v", got)
	}
	// A report without a name keeps the one given before.
	if w := postProgress(m, r, `{"quizBest":8}`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Grace") {
		t.Fatalf("progress = %d %s", w.Code, w.Body)
	}
	if list, _ := m.List(t.Context()); list[0].Name != "Grace" || list[0].Progress.QuizBest != 8 {
		t.Errorf("after a report without a name: %+v", list[0])
	}

	// The real totals themselves are accepted.
	if w := postProgress(m, r, `{"quizBest":20,"cardsReviewed":500,"challenges":{"drift-repair":{"done":4,"of":4}}}`); w.Code != http.StatusOK {
		t.Errorf("progress at the totals = %d %s, want 200", w.Code, w.Body)
	}

	clk.Add(2 * time.Hour)
	if n, err := m.Sweep(t.Context()); n != 1 || err != nil {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	if list, _ := m.List(t.Context()); len(list) != 0 {
		t.Errorf("after the session ended, List = %+v, want none", list)
	}
	if w := postProgress(m, r, `{"quizBest":9}`); w.Code != http.StatusForbidden {
		t.Errorf("progress after the session ended = %d, want 403", w.Code)
	}
}

// A report never starts a session, and one without a session is refused.
func TestProgressWithoutASessionStartsNone(t *testing.T) {
	ns := &fakeNamespaces{}
	m := newManagerOpts(t, Options{Namespaces: ns})
	if w := postProgress(m, httptest.NewRequest("GET", "/", nil), `{"quizBest":1}`); w.Code != http.StatusForbidden || len(ns.created) != 0 {
		t.Errorf("progress without a session = %d (created %v), want 403 and nothing created", w.Code, ns.created)
	}
	if list, _ := m.List(t.Context()); len(list) != 0 {
		t.Errorf("List = %+v, want none", list)
	}
}
