package session

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func knownScenario(name string) bool { return name == "first-reconcile" || name == "finalizer" }

// challengeTasks knows one challenge, of 4 tasks.
func challengeTasks(id string) (int, bool) {
	if id == "drift-repair" {
		return 4, true
	}
	return 0, false
}

// testQuizSize is the questions of the tests' quiz.
const testQuizSize = 20

// postProgress reports body for the session whose cookie r carries.
func postProgress(m *Manager, r *http.Request, body string) *httptest.ResponseRecorder {
	p := httptest.NewRequest("POST", "/lab/progress", strings.NewReader(body))
	for _, c := range r.Cookies() {
		p.AddCookie(c)
	}
	w := httptest.NewRecorder()
	mux := http.NewServeMux()
	m.Register(mux)
	mux.ServeHTTP(w, p)
	return w
}

func TestProgressIsKeptOnTheSessionAndGoesWithIt(t *testing.T) {
	ns, clk, expired := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}, []string{}
	m := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, KnownScenario: knownScenario, ChallengeTasks: challengeTasks, QuizSize: testQuizSize, IdleTimeout: time.Hour,
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
		got.Progress.Challenges["drift-repair"] != (ChallengeProgress{Done: 3, Of: 4}) || got.Progress.QuizBest != 7 ||
		got.Progress.CardsReviewed != 12 || got.Progress.Reported.IsZero() {
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

func TestProgressRefusesBadReportsNamingTheField(t *testing.T) {
	ns := &fakeNamespaces{}
	m := newManagerOpts(t, Options{Namespaces: ns, KnownScenario: knownScenario, ChallengeTasks: challengeTasks, QuizSize: testQuizSize})
	// No session: refused, and none is started.
	if w := postProgress(m, httptest.NewRequest("GET", "/", nil), `{"quizBest":1}`); w.Code != http.StatusForbidden || len(ns.created) != 0 {
		t.Errorf("progress without a session = %d (created %v), want 403 and nothing created", w.Code, ns.created)
	}
	r, _ := begin(t, m)
	cases := []struct{ body, field string }{
		{`{"scenarios":["first-reconcile","rm-rf"]}`, "scenarios[1]"},
		{`{"quizBest":-1}`, "quizBest"},
		{`{"quizBest":1e9}`, "quizBest"},
		// Issue 19 (m): only what exists, no more than it holds.
		{`{"quizBest":1000}`, "quizBest"},
		{`{"quizBest":21}`, "quizBest"},
		{`{"cardsReviewed":1000000}`, "cardsReviewed"},
		{`{"cardsReviewed":501}`, "cardsReviewed"},
		{`{"challenges":{"not-a-real-challenge":{"done":99,"of":99}}}`, "challenges.not-a-real-challenge"},
		{`{"challenges":{"drift-repair":{"done":5,"of":5}}}`, "challenges.drift-repair.of"},
		{`{"challenges":{"drift-repair":{"done":5,"of":4}}}`, "challenges.drift-repair.done"},
		{`{"challenges":{"drift-repair":{"done":1,"of":100000}}}`, "challenges.drift-repair.of"},
		{`{"challenges":{"Drift Repair!":{"done":1,"of":2}}}`, "challenges"},
		{`{"challenges":{"drift-":{"done":1,"of":2}}}`, "challenges"},
		{`{"challenges":{"` + strings.Repeat("a", 64) + `":{"done":1,"of":2}}}`, "challenges"},
		{`{"name":"a\u202eb"}`, "name"},
		{`{"name":"` + strings.Repeat("é", 41) + `"}`, "name"},
		{`{"quizBest":1,"grade":"A"}`, "grade"},
		{`{"quizBest":"7"}`, "quizBest"},
		{`{"quizBest":1} {}`, "body"},
		{`not json`, "body"},
		{`{"name":"` + strings.Repeat("a", 5000) + `"}`, "body"},
	}
	for _, c := range cases {
		w := postProgress(m, r, c.body)
		var got struct{ Field, Error string }
		_ = json.Unmarshal(w.Body.Bytes(), &got)
		if w.Code/100 != 4 || w.Code == http.StatusForbidden || got.Field != c.field || !strings.Contains(got.Error, c.field) {
			t.Errorf("progress %.60s = %d %s, want 400/413 naming %s", c.body, w.Code, w.Body, c.field)
		}
	}
	if list, _ := m.List(t.Context()); !list[0].Progress.Reported.IsZero() {
		t.Errorf("a refused report was stored: %+v", list[0].Progress)
	}
}

// progress.js cuts a report to what checkChallenge accepts, so that one
// bad ID in a browser's storage does not get every report refused; its
// rule for an ID must say yes and no where the server's does.
func TestProgressScriptKeepsTheServersChallengeIDRule(t *testing.T) {
	src, err := os.ReadFile("../static/progress.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const CHALLENGE_ID = /(.+)/;`).FindSubmatch(src)
	if m == nil {
		t.Fatal("progress.js has no CHALLENGE_ID rule")
	}
	script := regexp.MustCompile(string(m[1]))
	for _, id := range []string{"drift-repair", "a", "a1", "1-2-3", "x-", "-x", "", "a--b", "Drift", "a_b", "a b", "é",
		strings.Repeat("a", maxChallengeID), strings.Repeat("a", maxChallengeID+1)} {
		server := checkChallenge(id, ChallengeProgress{Done: 1, Of: 1}, func(string) (int, bool) { return 1, true }) == nil
		if got := script.MatchString(id); got != server {
			t.Errorf("ID %q: progress.js keeps it %v, the server accepts it %v", id, got, server)
		}
	}
}
