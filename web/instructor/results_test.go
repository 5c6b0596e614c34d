package instructor

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// TestClassResultsExport: the instructor downloads the class's results as
// CSV and JSON, with the course's totals, and a learner's name that a
// spreadsheet would run as a formula arrives as text.
func TestClassResultsExport(t *testing.T) {
	mux, m := rosterMux(t, &recordingBroadcaster{})
	c := instructorCookie()
	begin := func(body string) string {
		lw := httptest.NewRecorder()
		s, err := m.Begin(lw, httptest.NewRequest("GET", "/lab", nil))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			report := httptest.NewRequest("POST", "/lab/progress", strings.NewReader(body))
			report.AddCookie(lw.Result().Cookies()[0])
			rw := httptest.NewRecorder()
			mux.ServeHTTP(rw, report)
			if rw.Code != 200 {
				t.Fatalf("progress = %d %s", rw.Code, rw.Body)
			}
		}
		return s.Namespace
	}
	ada := begin(`{"name":"=HYPERLINK(\"http://evil.example\",\"x\")","scenarios":["finalizer"],"challenges":{"drift-repair":{"done":4,"of":4},"scale":{"done":1,"of":3}},"quizBest":6,"cardsReviewed":9}`)
	quiet := begin("")

	w := do(mux, "GET", "/instructor/results.csv", nil, c)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") || !strings.Contains(w.Header().Get("Content-Disposition"), ".csv") {
		t.Fatalf("results.csv = %d %v", w.Code, w.Header())
	}
	rows, err := csv.NewReader(w.Body).ReadAll()
	if err != nil {
		t.Fatalf("results.csv does not parse: %v", err)
	}
	if len(rows) != 3 {
		t.Fatalf("results.csv has %d rows, want a header and 2 learners: %q", len(rows), rows)
	}
	head := rows[0]
	col := func(row []string, name string) string {
		for i, h := range head {
			if h == name {
				return row[i]
			}
		}
		t.Fatalf("no column %q in %q", name, head)
		return ""
	}
	byNS := map[string][]string{}
	for _, r := range rows[1:] {
		byNS[col(r, "namespace")] = r
	}
	a := byNS[ada]
	if a == nil {
		t.Fatalf("no row for %s in %q", ada, rows)
	}
	if got := col(a, "name"); !strings.HasPrefix(got, "'=HYPERLINK") {
		t.Errorf("name cell %q: want the formula quoted as text ('=…)", got)
	}
	for name, want := range map[string]string{"challenges complete": "1", "challenges in course": "12", "quiz best": "6", "quiz questions": "10",
		"cards reviewed": "9", "scenarios done": "finalizer", "challenge tasks": "drift-repair 4/4; scale 1/3", "reported": "true"} {
		if got := col(a, name); got != want {
			t.Errorf("%s's %s = %q, want %q", ada, name, got, want)
		}
	}
	if q := byNS[quiet]; q == nil || col(q, "reported") != "false" {
		t.Errorf("the learner who reported nothing: %q, want reported=false", q)
	}

	w = do(mux, "GET", "/instructor/results.json", nil, c)
	var got struct {
		Learners []Result `json:"learners"`
	}
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil || len(got.Learners) != 2 {
		t.Fatalf("results.json = %d %s", w.Code, w.Body)
	}
	for _, l := range got.Learners {
		if l.Namespace == ada && (l.QuizBest != 6 || l.QuizQuestions != 10 || l.ChallengesDone != 1 || len(l.Challenges) != 2 || !strings.HasPrefix(l.Name, "=HYPERLINK")) {
			t.Errorf("results.json for %s: %+v", ada, l)
		}
	}
}

func TestCellQuotesFormulas(t *testing.T) {
	for in, want := range map[string]string{"Ada": "Ada", "=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)", "": ""} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
}

// The instructor's own lab session, which the roster lists apart, is not a
// learner's result: the export leaves it out, as the counts do.
func TestClassResultsLeaveTheInstructorOut(t *testing.T) {
	m, err := session.New(t.Context(), session.Options{Namespaces: inMemory{}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	progress.Handler{Sessions: m, Known: progress.Known{Scenario: func(string) bool { return true },
		ChallengeTasks: func(string) (int, bool) { return 4, true }, QuizSize: 10}}.Register(mux)
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{
		Learners: m, QuizQuestions: 10, ChallengeCount: 12, Self: m.NamespaceOf,
	}}).Register(mux)
	begin := func() (string, *http.Cookie) {
		w := httptest.NewRecorder()
		s, err := m.Begin(w, httptest.NewRequest("GET", "/lab", nil))
		if err != nil {
			t.Fatal(err)
		}
		return s.Namespace, w.Result().Cookies()[0]
	}
	learner, _ := begin()
	mine, labCookie := begin()
	r := reqWith("GET", "/instructor/results.json", nil)
	r.AddCookie(instructorCookie())
	r.AddCookie(labCookie)
	w := serve(mux, r)
	var got struct {
		Learners []Result `json:"learners"`
	}
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil {
		t.Fatalf("results.json = %d %s", w.Code, w.Body)
	}
	if len(got.Learners) != 1 || got.Learners[0].Namespace != learner {
		t.Errorf("results.json lists %+v; want only the learner %s, not the instructor's own %s", got.Learners, learner, mine)
	}
}
