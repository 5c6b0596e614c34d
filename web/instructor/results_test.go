package instructor

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/web/lab"

	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// memKeeper keeps ended sessions in memory, as labns keeps them in the
// class namespace.
type memKeeper struct {
	mu   sync.Mutex
	kept map[string][]byte
}

func (k *memKeeper) Keep(_ context.Context, ns string, data, _ []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept == nil {
		k.kept = map[string][]byte{}
	}
	k.kept[ns] = data
	return nil
}

func (k *memKeeper) Kept(context.Context) ([][]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out [][]byte
	for _, d := range k.kept {
		out = append(out, d)
	}
	return out, nil
}
func (k *memKeeper) Export(context.Context, string) ([]byte, error) { return nil, nil }
func (k *memKeeper) Forget(context.Context, string) error           { return nil }

// TestClassResultsExport: the instructor downloads the class's results as
// CSV (with a byte order mark for Excel on request) and JSON, one row per
// learner, live or ended, in the documented columns. What a learner's
// browser claims is in the self-reported columns only: the verified ones
// and the percent complete are what the server recorded. A learner's name
// that a spreadsheet would run as a formula arrives as text.
func TestClassResultsExport(t *testing.T) {
	clk := time.Now()
	m, err := session.New(t.Context(), session.Options{Namespaces: inMemory{}, Keep: &memKeeper{}, IdleTimeout: time.Hour,
		Now: func() time.Time { return clk }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	progress.Handler{Sessions: m, Known: progress.Known{Scenario: func(string) bool { return true },
		ChallengeTasks: func(string) (int, bool) { return 4, true }, QuizSize: 10}}.Register(mux)
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{
		Learners: m, Ended: m, QuizQuestions: 10, ChallengeCount: 12, ChallengeTasks: func(id string) (int, bool) { return 4, id != "gone" },
	}}).Register(mux)
	c := instructorCookie()
	cookies := map[string][]*http.Cookie{}
	begin := func(body string) string {
		lw := httptest.NewRecorder()
		s, err := m.Begin(lw, httptest.NewRequest("GET", "/lab", nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Lookup(withCookies(httptest.NewRequest("GET", "/lab", nil), lw.Result().Cookies())); err != nil {
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
		cookies[s.Namespace] = lw.Result().Cookies()
		return s.Namespace
	}
	// Ada's browser claims a lot and the server saw none of it.
	ada := begin(`{"name":"=HYPERLINK(\"http://evil.example\",\"x\")","scenarios":["finalizer"],"challenges":{"drift-repair":{"done":4,"of":4},"scale":{"done":1,"of":3}},"quizBest":6,"cardsReviewed":9}`)
	// Zoë's work the server recorded: a challenge verified whole, a quiz
	// attempt, a review.
	zoe := begin(`{"name":"Zoë"}`)
	m.Record(t.Context(), zoe, func(r *progress.Record) bool {
		r.ChallengeStarted("drift-repair", 5)
		r.TasksDone("drift-repair", 5, []string{"a", "b", "c", "d"})
		r.Answered("1", "q1", true)
		r.Answered("1", "q2", false)
		r.Answered("2", "q2", true)
		r.Reviewed("c1")
		r.ScenarioStarted("finalizer", 1)
		r.ScenarioDone("finalizer", 2)
		return true
	})
	gone := begin(`{"name":"Gus"}`)
	m.Record(t.Context(), gone, func(r *progress.Record) bool { r.Answered("", "q1", true); return true })
	// Gus's session expires; his results stay, as expired.
	clk = clk.Add(30 * time.Minute)
	for _, ns := range []string{ada, zoe} {
		if _, err := m.Lookup(withCookies(httptest.NewRequest("GET", "/lab", nil), cookies[ns])); err != nil {
			t.Fatal(err)
		}
	}
	clk = clk.Add(40 * time.Minute)
	if n, err := m.Sweep(t.Context()); n != 1 || err != nil {
		t.Fatalf("Sweep = %d, %v; want Gus's session ended", n, err)
	}

	w := do(mux, "GET", "/instructor/results.csv?bom=1", nil, c)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") || !strings.Contains(w.Header().Get("Content-Disposition"), ".csv") {
		t.Fatalf("results.csv = %d %v", w.Code, w.Header())
	}
	body := w.Body.String()
	if !strings.HasPrefix(body, "\ufeffname,") {
		t.Fatalf("results.csv?bom=1 starts %q; want the UTF-8 byte order mark, then the header", body[:min(len(body), 12)])
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\ufeff"))).ReadAll()
	if err != nil {
		t.Fatalf("results.csv does not parse: %v", err)
	}
	if strings.Join(rows[0], "|") != strings.Join(Columns, "|") {
		t.Fatalf("header = %q\nwant the documented columns %q", rows[0], Columns)
	}
	col := func(row []string, name string) string {
		i := slices.Index(rows[0], name)
		if i < 0 {
			t.Fatalf("no column %q", name)
		}
		return row[i]
	}
	byNS := map[string][]string{}
	for _, r := range rows[1:] {
		byNS[col(r, "namespace")] = r
	}
	a, z := byNS[ada], byNS[zoe]
	if a == nil || z == nil {
		t.Fatalf("no row for %s or %s in %q", ada, zoe, rows)
	}
	if got := col(a, "name"); !strings.HasPrefix(got, "'=HYPERLINK") {
		t.Errorf("name cell %q: want the formula quoted as text ('=…)", got)
	}
	for name, want := range map[string]string{"percent complete (verified)": "0", "challenges complete (verified)": "0", "quiz best attempt (verified)": "0",
		"scenarios done (verified)": "0", "cards reviewed (server-counted)": "0", "self-reported": "yes", "challenges complete (self-reported)": "1",
		"quiz best (self-reported)": "6", "cards reviewed (self-reported)": "9", "scenarios done (self-reported)": "finalizer",
		"challenge tasks (self-reported)": "drift-repair 4/4; scale 1/3", "state": "live", "code test": "none"} {
		if got := col(a, name); got != want {
			t.Errorf("Ada (claims only): %s = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]string{"name": "Zoë", "challenges complete (verified)": "1", "challenge tasks (verified)": "drift-repair 4/4",
		"quiz first try (verified)": "1", "quiz best attempt (verified)": "1", "cards reviewed (server-counted)": "1", "scenarios done (verified)": "1",
		"percent complete (verified)": strconv.Itoa(percent(Verified{Scenarios: []string{"finalizer"}, ChallengesComplete: 1, QuizBest: 1},
			Totals{Scenarios: len(lab.Scenarios), Challenges: 12, QuizQuestions: 10})), "self-reported": "yes", "quiz best (self-reported)": "0"} {
		if got := col(z, name); got != want {
			t.Errorf("Zoë (verified work): %s = %q, want %q", name, got, want)
		}
	}
	if g := byNS[gone]; g == nil || col(g, "state") != "expired" || col(g, "name") != "Gus" || col(g, "quiz first try (verified)") != "1" || col(g, "ended at") == "" {
		t.Errorf("the expired learner's row: %q; want Gus, expired, with his verified quiz answer and when it ended", g)
	}

	w = do(mux, "GET", "/instructor/results.csv?bom=yes", nil, c)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "bom") {
		t.Errorf("results.csv?bom=yes = %d %q; want 400 naming bom", w.Code, w.Body)
	}
	if w := do(mux, "GET", "/instructor/results.csv", nil, c); strings.HasPrefix(w.Body.String(), "\ufeff") {
		t.Error("results.csv without bom=1 starts with a byte order mark")
	}

	w = do(mux, "GET", "/instructor/results.json", nil, c)
	var got struct {
		Learners []Result `json:"learners"`
	}
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil || len(got.Learners) != len(rows)-1 {
		t.Fatalf("results.json = %d %s", w.Code, w.Body)
	}
	for _, l := range got.Learners {
		if l.Namespace == ada && (l.Verified.QuizBest != 0 || l.Self.QuizBest != 6 || l.Percent != 0 || len(l.Self.Challenges) != 2) {
			t.Errorf("results.json for Ada: %+v", l)
		}
		if l.Namespace == zoe && (l.Verified.ChallengesComplete != 1 || l.Verified.QuizBest != 1) {
			t.Errorf("results.json for Zoë: %+v", l)
		}
	}
}

func withCookies(r *http.Request, cs []*http.Cookie) *http.Request {
	for _, c := range cs {
		r.AddCookie(c)
	}
	return r
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
