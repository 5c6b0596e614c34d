package learn

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/static"
)

var fixedNow = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)

// newTestServer serves the course and /static/ on 127.0.0.1, as the web
// server does, with a fixed clock for the review endpoint.
func newTestServer(t testing.TB) *httptest.Server {
	t.Helper()
	s, err := newSite(func() time.Time { return fixedNow })
	if err != nil {
		t.Fatalf("newSite: %v", err)
	}
	mux := http.NewServeMux()
	s.register(mux)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

func postForm(t *testing.T, srv *httptest.Server, path string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(srv.URL+path, form)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// Register is what the web server calls; it must mount without an error
// and serve the home page.
func TestRegisterMountsEveryRoute(t *testing.T) {
	mux := http.NewServeMux()
	if err := Register(mux); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/lessons", "/lessons/reconciliation-loop", "/quiz", "/flashcards"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s = %d", path, rec.Code)
		}
	}
}

// Every page is server-rendered and carries its content without scripts.
func TestPagesRenderWithoutJavaScript(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}

	code, body := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("home: %d", code)
	}
	mustContain(t, "home", body, "Course outline", `href="/quiz"`, `href="/flashcards"`, `href="/lab"`, `id="progress"`)
	for _, l := range course.Lessons {
		mustContain(t, "home", body, `href="`+l.URL()+`"`)
	}

	for _, l := range course.Lessons {
		code, body := get(t, srv, l.URL())
		if code != http.StatusOK {
			t.Fatalf("%s: %d", l.URL(), code)
		}
		mustContain(t, l.URL(), body, "<h1>"+htmlEscape(l.Title)+"</h1>", `id="lesson-end"`, `/static/learn.css`)
		for _, s := range l.Sections {
			mustContain(t, l.URL(), body, `id="`+s.ID+`"`, `href="`+l.URL()+"#"+s.ID+`"`)
		}
	}

	_, body = get(t, srv, "/quiz")
	mustContain(t, "quiz", body, `<form id="quiz-form" class="quiz" method="post" action="/quiz"`, `type="submit"`)
	for _, q := range bank.Questions {
		mustContain(t, "quiz", body, htmlEscape(q.Prompt), `name="q.`+q.ID+`"`)
	}

	_, body = get(t, srv, "/flashcards")
	for _, c := range bank.Cards {
		mustContain(t, "flashcards", body, "<summary>"+htmlEscape(c.Front)+"</summary>", htmlEscape(c.Back))
	}
}

func TestUnknownLessonIs404(t *testing.T) {
	srv := newTestServer(t)
	code, body := get(t, srv, "/lessons/no-such-thing")
	if code != http.StatusNotFound {
		t.Fatalf("status %d, want 404", code)
	}
	mustContain(t, "404 page", body, "There is no lesson called “no-such-thing”", `href="/lessons/reconciliation-loop"`)
}

// Every course page is at most two clicks from home, and every link on
// every page leads somewhere: a 200 from this server, or a lab scenario
// that exists.
func TestEveryPageWithinTwoClicksAndLinksResolve(t *testing.T) {
	srv := newTestServer(t)
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	hrefRE := regexp.MustCompile(`href="([^"]+)"`)
	depth := map[string]int{"/": 0}
	queue := []string{"/"}
	checked := map[string]bool{}
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		code, body := get(t, srv, page)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d", page, code)
			continue
		}
		for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
			link := strings.ReplaceAll(m[1], "&amp;", "&")
			if checked[link] {
				continue
			}
			if frag, ok := strings.CutPrefix(link, "#"); ok {
				// An in-page link: the page itself must have the anchor.
				if !strings.Contains(body, `id="`+frag+`"`) {
					t.Errorf("%s links #%s but has no such id", page, frag)
				}
				continue
			}
			checked[link] = true
			u, err := url.Parse(link)
			if err != nil || u.Host != "" {
				t.Errorf("%s links %q, which is not a local path", page, link)
				continue
			}
			switch {
			case strings.HasPrefix(u.Path, "/static/"):
				if code, _ := get(t, srv, u.Path); code != http.StatusOK {
					t.Errorf("%s links %s: %d", page, link, code)
				}
				continue
			case u.Path == "/lab":
				if err := course.Resolve(link); err != nil {
					t.Errorf("%s: %v", page, err)
				}
				continue
			}
			if u.Fragment != "" {
				if err := course.Resolve(link); err != nil {
					t.Errorf("%s: %v", page, err)
				}
			}
			target := u.Path
			if u.RawQuery != "" {
				target += "?" + u.RawQuery
			}
			if _, seen := depth[target]; !seen {
				depth[target] = depth[page] + 1
				queue = append(queue, target)
			}
		}
	}
	want := []string{"/lessons", "/quiz", "/flashcards"}
	for _, l := range course.Lessons {
		want = append(want, l.URL())
	}
	for _, p := range want {
		d, ok := depth[p]
		switch {
		case !ok:
			t.Errorf("%s is not reachable from home", p)
		case d > 2:
			t.Errorf("%s is %d clicks from home, want at most 2", p, d)
		}
	}
}

func TestQuizGradesOnTheServer(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Answer every question right but the first, which is left blank.
	form := url.Values{}
	for _, q := range bank.Questions[1:] {
		for _, i := range q.Correct() {
			form.Add(quiz.FieldPrefix+q.ID, itoa(i))
		}
	}
	code, body := postForm(t, srv, "/quiz", form)
	if code != http.StatusOK {
		t.Fatalf("status %d:\n%s", code, body)
	}
	n := len(bank.Questions)
	first := bank.Questions[0].ID
	mustContain(t, "graded quiz", body,
		"You scored "+itoa(n-1)+" of "+itoa(n),
		`href="/quiz?only=`+first+`"`, "Retry the 1 missed",
		`class="question unanswered"`, "Not answered.",
		htmlEscape(bank.Questions[0].Explanation))

	// Retrying the missed one shows only it, and grading covers only it.
	code, body = get(t, srv, "/quiz?only="+first)
	if code != http.StatusOK {
		t.Fatalf("retry page: %d", code)
	}
	if got := strings.Count(body, `<fieldset id="q-`); got != 1 {
		t.Errorf("retry page shows %d questions, want 1", got)
	}
	mustContain(t, "retry page", body, `<input type="hidden" name="only" value="`+first+`"`)
	code, body = postForm(t, srv, "/quiz", url.Values{"only": {first}, quiz.FieldPrefix + first: {itoa(bank.Questions[0].Correct()[0])}})
	if code != http.StatusOK {
		t.Fatalf("retry grading: %d", code)
	}
	mustContain(t, "retry result", body, "You scored 1 of 1", `class="question right"`)
}

func TestQuizRejectsBadInput(t *testing.T) {
	srv := newTestServer(t)
	tests := []struct {
		name string
		form url.Values
		want string
	}{
		{"unknown question", url.Values{"q.nope": {"0"}}, `answer to question &#34;nope&#34;, which is not in this quiz`},
		{"not a number", url.Values{"q.level-triggered": {"x"}}, `answer &#34;x&#34; to question &#34;level-triggered&#34; is not a choice number`},
		{"out of range", url.Values{"q.level-triggered": {"9"}}, `question &#34;level-triggered&#34; has choices 0 to 3, not 9`},
		{"two on a single", url.Values{"q.level-triggered": {"0", "1"}}, `question &#34;level-triggered&#34; takes one answer, got 2`},
		{"unknown subset", url.Values{"only": {"nope"}}, `no question has id &#34;nope&#34;`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := postForm(t, srv, "/quiz", tt.form)
			if code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", code)
			}
			mustContain(t, "error page", body, tt.want, `href="/quiz"`)
		})
	}
	code, body := get(t, srv, "/quiz?only=a,b")
	if code != http.StatusBadRequest {
		t.Fatalf("GET ?only=a,b: status %d, want 400", code)
	}
	mustContain(t, "error page", body, "Cannot retry those questions: no question has id &#34;a&#34;")
}

func TestReviewEndpoint(t *testing.T) {
	srv := newTestServer(t)
	tests := []struct {
		name      string
		body      string
		wantCode  int
		wantState *quiz.State
		wantErr   string
	}{
		{"new card, good, browser clock", `{"state":{},"rating":3,"now":"2026-10-01T00:00:00Z"}`, 200,
			&quiz.State{Reps: 1, Ease: 2.5, Interval: 1, Due: time.Date(2026, 10, 2, 0, 0, 0, 0, time.UTC)}, ""},
		{"no clock uses the server's", `{"rating":4}`, 200,
			&quiz.State{Reps: 1, Ease: 2.65, Interval: 4, Due: fixedNow.Add(4 * 24 * time.Hour)}, ""},
		{"again", `{"state":{"reps":2,"ease":2.5,"interval":6,"due":"2026-09-01T00:00:00Z"},"rating":1}`, 200,
			&quiz.State{Lapses: 1, Ease: 2.3, Due: fixedNow.Add(quiz.AgainDelay)}, ""},
		{"bad rating", `{"rating":7}`, 400, nil, "rating 7 is not 1 (again) to 4 (easy)"},
		{"missing rating", `{"state":{}}`, 400, nil, "rating 0 is not 1 (again) to 4 (easy)"},
		{"bad state", `{"state":{"ease":0.5},"rating":3}`, 400, nil, "card state: ease 0.5 is outside"},
		{"not json", `rating=3`, 400, nil, "review body is not valid JSON"},
		{"unknown field", `{"rating":3,"grade":1}`, 400, nil, `unknown field "grade"`},
		{"bad time", `{"rating":3,"now":"yesterday"}`, 400, nil, "review body is not valid JSON"},
		{"trailing data", `{"rating":3}{}`, 400, nil, "data after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/flashcards/review", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got reviewResponse
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("decode response: %v", err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status %d, want %d (%+v)", resp.StatusCode, tt.wantCode, got)
			}
			if tt.wantErr != "" && !strings.Contains(got.Error, tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", got.Error, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantState, got.State); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}
