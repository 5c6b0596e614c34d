package instructor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// recordingBroadcaster records what the roster asks web/classroom to do.
type recordingBroadcaster struct {
	mu   sync.Mutex
	sent []string
	err  error
}

func (b *recordingBroadcaster) SendEveryone(href string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, href)
	return b.err
}

// inMemory is a session.Namespaces keeping nothing: these tests are about
// the roster's page and its guard; the namespaces themselves are tested on
// the real cluster (web/session, web/e2e/roster_test.go).
type inMemory struct{}

func (inMemory) Create(context.Context, string, string) error    { return nil }
func (inMemory) MarkActed(context.Context, string) error         { return nil }
func (inMemory) Delete(context.Context, string) error            { return nil }
func (inMemory) List(context.Context) ([]labns.Namespace, error) { return nil, nil }

func instructorCookie() *http.Cookie {
	h := New(context.Background(), Options{Token: token})
	w := httptest.NewRecorder()
	h.setCookie(w, httptest.NewRequest("GET", "/instructor", nil))
	return w.Result().Cookies()[0]
}

func rosterMux(t *testing.T, b Broadcaster) (*http.ServeMux, *session.Manager) {
	t.Helper()
	m, err := session.New(t.Context(), session.Options{Namespaces: inMemory{}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	progress.Handler{Sessions: m, Known: progress.Known{Scenario: func(string) bool { return true },
		ChallengeTasks: func(string) (int, bool) { return 4, true }, QuizSize: 10}}.Register(mux)
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{
		Learners: m, Broadcaster: b, JoinCode: "blue-otter", QuizQuestions: 10, ChallengeCount: 12, ChallengeTasks: func(string) (int, bool) { return 4, true },
		Destinations: []Destination{{Href: "/lab?scenario=finalizer", Title: "Lab: A finalizer at work"}},
	}}).Register(mux)
	return mux, m
}

func TestRosterRoutesRefuseWithoutTheInstructorCookie(t *testing.T) {
	b := &recordingBroadcaster{}
	mux, _ := rosterMux(t, b)
	wrong := &http.Cookie{Name: CookieName, Value: "0000"}
	for _, rt := range []struct{ method, target string }{
		{"GET", "/instructor/roster"},
		{"POST", "/instructor/learners/lab-abc/reset"},
		{"POST", "/instructor/send"},
		{"GET", "/instructor/results.csv"},
		{"GET", "/instructor/results.json"},
	} {
		form := url.Values{"href": {"/lab?scenario=finalizer"}}
		if w := do(mux, rt.method, rt.target, form, nil); w.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without cookie = %d, want 401", rt.method, rt.target, w.Code)
		}
		if w := do(mux, rt.method, rt.target, form, wrong); w.Code != http.StatusForbidden {
			t.Errorf("%s %s with a wrong cookie = %d, want 403", rt.method, rt.target, w.Code)
		}
	}
	if len(b.sent) != 0 {
		t.Errorf("refused requests sent %v", b.sent)
	}
}

func TestRosterShowsLearnersProgressToTheInstructor(t *testing.T) {
	mux, m := rosterMux(t, &recordingBroadcaster{})
	c := instructorCookie()
	if w := do(mux, "GET", "/instructor/roster", nil, c); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "No learner has opened the lab yet") {
		t.Fatalf("empty roster = %d\n%s", w.Code, w.Body)
	}
	// A learner starts a session and their browser reports.
	lw := httptest.NewRecorder()
	s, err := m.Begin(lw, httptest.NewRequest("GET", "/lab", nil))
	if err != nil {
		t.Fatal(err)
	}
	report := httptest.NewRequest("POST", "/lab/progress", strings.NewReader(
		`{"name":"Ada <b>","scenarios":["finalizer"],"challenges":{"drift-repair":{"done":4,"of":4},"scale":{"done":1,"of":3}},"quizBest":6,"cardsReviewed":9}`))
	report.AddCookie(lw.Result().Cookies()[0])
	rw := httptest.NewRecorder()
	mux.ServeHTTP(rw, report)
	if rw.Code != http.StatusOK {
		t.Fatalf("progress = %d %s", rw.Code, rw.Body)
	}
	// The server itself saw part of it.
	m.Record(t.Context(), s.Namespace, func(r *progress.Record) bool {
		r.ChallengeStarted("drift-repair", 1)
		r.TasksDone("drift-repair", 1, []string{"a", "b"})
		r.Answered("1", "q1", true)
		r.Answered("1", "q2", true)
		r.Reviewed("c1")
		return true
	})

	for _, target := range []string{"/instructor/roster", "/instructor"} {
		w := do(mux, "GET", target, nil, c)
		body := w.Body.String()
		for _, want := range []string{
			"Ada &lt;b&gt;", `nowrap">` + s.Namespace + "</code>", "0 of 12 complete", "drift-repair: 2/4 tasks",
			`class="learner-quiz">2 of 10`, "first try 2", `class="learner-cards">1<`, "self-reported: 1 complete", "self-reported: 6", "self-reported: 9",
			"/instructor/learners/" + s.Namespace + "/reset",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %q", target, want)
			}
		}
		if target == "/instructor" {
			for _, want := range []string{`action="/instructor/send"`, `src="/static/roster.js"`, "keeps their progress"} {
				if !strings.Contains(body, want) {
					t.Errorf("the instructor page lacks %q", want)
				}
			}
		}
	}
}

func TestSendEveryoneGoesThroughTheBroadcaster(t *testing.T) {
	b := &recordingBroadcaster{}
	mux, _ := rosterMux(t, b)
	c := instructorCookie()
	w := do(mux, "POST", "/instructor/send", url.Values{"href": {"/lab?scenario=finalizer"}}, c)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/instructor?done=sent" {
		t.Fatalf("send = %d %q", w.Code, w.Header().Get("Location"))
	}
	for _, href := range []string{"https://evil.example/", "/instructor", ""} {
		if w := do(mux, "POST", "/instructor/send", url.Values{"href": {href}}, c); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "href") {
			t.Errorf("send %q = %d %s, want 400 naming href", href, w.Code, w.Body)
		}
	}
	b.err = errors.New("nobody listens")
	if w := do(mux, "POST", "/instructor/send", url.Values{"href": {"/lab?scenario=finalizer"}}, c); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "nobody listens") {
		t.Errorf("send with a failing broadcaster = %d %s", w.Code, w.Body)
	}
	if strings.Join(b.sent, " ") != "/lab?scenario=finalizer /lab?scenario=finalizer" {
		t.Errorf("sent %v, want the one destination twice", b.sent)
	}
}

func TestSendEveryoneHiddenWithoutABroadcaster(t *testing.T) {
	mux, _ := rosterMux(t, nil)
	c := instructorCookie()
	if body := do(mux, "GET", "/instructor", nil, c).Body.String(); strings.Contains(body, "/instructor/send") || !strings.Contains(body, "roster-live") {
		t.Errorf("without a broadcaster the page should show the roster but no send control:\n%s", body)
	}
	if w := do(mux, "POST", "/instructor/send", url.Values{"href": {"/lab?scenario=finalizer"}}, c); w.Code != http.StatusNotImplemented {
		t.Errorf("send without a broadcaster = %d, want 501", w.Code)
	}
}

// content is the compiled-in course, as oplab loads it at start.
func content(t *testing.T) *learn.Content {
	t.Helper()
	c, err := learn.LoadContent()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaultDestinationsOfferScenariosAndLessons(t *testing.T) {
	d := defaultDestinations(content(t))
	var scenario, lesson bool
	for _, x := range d {
		scenario = scenario || strings.HasPrefix(x.Href, "/lab?scenario=")
		lesson = lesson || strings.HasPrefix(x.Href, "/lessons/")
	}
	if !scenario || !lesson {
		t.Errorf("destinations %v lack a scenario or a lesson", d)
	}
}

// A day's class moves through every part of the course: by default "send
// everyone" offers the challenges, quiz, flashcards and code page as well
// as the scenarios and lessons, and each is sent as offered.
func TestSendEveryoneOffersTheWholeCourse(t *testing.T) {
	m, err := session.New(t.Context(), session.Options{Namespaces: inMemory{}})
	if err != nil {
		t.Fatal(err)
	}
	b := &recordingBroadcaster{}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{Learners: m, Broadcaster: b, Content: content(t)}}).Register(mux)
	c := instructorCookie()
	body := do(mux, "GET", "/instructor", nil, c).Body.String()
	want := []string{"/lab?scenario=finalizer", "/challenges", "/challenges/owner-gc", "/quiz", "/flashcards", "/code"}
	// A section of a lesson, not only its top.
	for _, l := range content(t).Course.Lessons {
		if len(l.Sections) > 1 {
			want = append(want, l.URL()+"#"+l.Sections[1].ID)
			break
		}
	}
	if len(want) != 7 {
		t.Fatal("no lesson of the course has two sections to send the class to")
	}
	for _, href := range want {
		if !strings.Contains(body, `<option value="`+href+`"`) {
			t.Errorf("send everyone does not offer %s", href)
		}
		if w := do(mux, "POST", "/instructor/send", url.Values{"href": {href}}, c); w.Code != http.StatusSeeOther {
			t.Errorf("send %s = %d %s", href, w.Code, w.Body)
		}
	}
	if strings.Join(b.sent, " ") != strings.Join(want, " ") {
		t.Errorf("sent %v, want %v", b.sent, want)
	}
}
