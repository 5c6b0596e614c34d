package progress

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
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

// known is the course the tests' reports are held to.
var known = Known{Scenario: knownScenario, ChallengeTasks: challengeTasks, QuizSize: testQuizSize}

// fakeSessions is a session table of one learner, whose requests carry
// the cookie "learner".
type fakeSessions struct {
	reports int
	got     Progress
	name    string
}

func (f *fakeSessions) Check(r *http.Request) error {
	if c, err := r.Cookie("s"); err != nil || c.Value != "learner" {
		return errors.New("no lab session: open /lab first")
	}
	return nil
}

func (f *fakeSessions) Report(r *http.Request, p Progress, name *string) (string, error) {
	if c, err := r.Cookie("s"); err != nil || c.Value != "learner" {
		return "", errors.New("no lab session: open /lab first")
	}
	f.reports++
	f.got = p
	if name != nil {
		f.name = *name
	}
	return f.name, nil
}

// post reports body, as the learner when learner is set.
func post(s Sessions, body string, learner bool) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/lab/progress", strings.NewReader(body))
	if learner {
		r.AddCookie(&http.Cookie{Name: "s", Value: "learner"})
	}
	w := httptest.NewRecorder()
	mux := http.NewServeMux()
	Handler{Sessions: s, Known: known}.Register(mux)
	mux.ServeHTTP(w, r)
	return w
}

func TestReportIsCheckedAndKeptWithTheName(t *testing.T) {
	s := &fakeSessions{}
	w := post(s, `{"name":" Grace ","scenarios":["finalizer","first-reconcile","finalizer"],
		"challenges":{"drift-repair":{"done":3,"of":4}},"quizBest":7,"cardsReviewed":12}`, true)
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"name":"Grace"}` {
		t.Fatalf("progress = %d %s, want 200 with the name trimmed", w.Code, w.Body)
	}
	if strings.Join(s.got.Scenarios, ",") != "finalizer,first-reconcile" || s.got.Challenges["drift-repair"] != (ChallengeProgress{Done: 3, Of: 4}) ||
		s.got.QuizBest != 7 || s.got.CardsReviewed != 12 {
		t.Errorf("kept %+v", s.got)
	}
	// A report without a name keeps the one given before.
	if w := post(s, `{"quizBest":8}`, true); w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"name":"Grace"}` || s.got.QuizBest != 8 {
		t.Fatalf("progress = %d %s, kept %+v", w.Code, w.Body, s.got)
	}
	// The real totals themselves are accepted.
	if w := post(s, `{"quizBest":20,"cardsReviewed":500,"challenges":{"drift-repair":{"done":4,"of":4}}}`, true); w.Code != http.StatusOK {
		t.Errorf("progress at the totals = %d %s, want 200", w.Code, w.Body)
	}
	// Without a session: refused, with the table's reason, whatever the
	// report says (a bad or an oversized one too: the browser stops
	// reporting on a 403 only).
	before := s.reports
	for _, body := range []string{`{"quizBest":1}`, `{"quizBest":-1}`, `not json`, `{"name":"` + strings.Repeat("a", 5000) + `"}`} {
		if w := post(s, body, false); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "no lab session") || s.reports != before {
			t.Errorf("progress %.30s without a session = %d %s, want 403 naming the session", body, w.Code, w.Body)
		}
	}
}

func TestProgressRefusesBadReportsNamingTheField(t *testing.T) {
	s := &fakeSessions{}
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
		w := post(s, c.body, true)
		var got struct{ Field, Error string }
		_ = json.Unmarshal(w.Body.Bytes(), &got)
		if w.Code/100 != 4 || w.Code == http.StatusForbidden || got.Field != c.field || !strings.Contains(got.Error, c.field) {
			t.Errorf("progress %.60s = %d %s, want 400/413 naming %s", c.body, w.Code, w.Body, c.field)
		}
	}
	if s.reports != 0 {
		t.Errorf("%d refused reports were kept: the last %+v", s.reports, s.got)
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
