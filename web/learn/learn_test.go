package learn

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/static"
)

var fixedNow = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)

// newTestServer serves the course and /static/ on 127.0.0.1, as the web
// server does, with a fixed clock for the review endpoint.
func newTestServer(t testing.TB) *httptest.Server {
	t.Helper()
	c, err := LoadContent()
	if err != nil {
		t.Fatalf("LoadContent: %v", err)
	}
	s := newSite(c, func() time.Time { return fixedNow })
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

// LoadContent and Register are what oplab calls; the compiled-in course
// must load without an error and every route serve.
func TestRegisterMountsEveryRoute(t *testing.T) {
	c, err := LoadContent()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	Register(mux, c)
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
	challenges, err := judge.LoadEmbedded(course)
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
			case u.Path == "/code":
				// Served by web/code, which needs a session and the
				// controller (its page is tested there).
				continue
			case u.Path == "/lab":
				if err := course.Resolve(link); err != nil {
					t.Errorf("%s: %v", page, err)
				}
				continue
			case u.Path == "/challenges" || strings.HasPrefix(u.Path, "/challenges/"):
				// Served by web/challenges, which needs a cluster: the
				// challenge must exist (its page is tested there).
				if id, ok := strings.CutPrefix(u.Path, "/challenges/"); ok {
					if _, found := challenges.Get(id); !found {
						t.Errorf("%s links %s: no such challenge", page, link)
					}
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
		{"order not a number", url.Values{"order": {"-1"}, "q.level-triggered": {"1"}}, `the form&#39;s field order is &#34;-1&#34;, not the number the quiz page wrote`},
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
	w := quiz.DefaultWeights
	oct1 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		body       string
		wantCode   int
		wantState  *quiz.State
		wantRecall float64 // 0: none (a new card)
		wantErr    string
	}{
		{name: "new card, good, browser clock", body: `{"state":{},"rating":3,"now":"2026-10-01T00:00:00Z"}`, wantCode: 200,
			wantState: &quiz.State{Stability: w[2], Difficulty: 2.118103970459015, Reps: 1, Interval: 2, Last: oct1, Due: oct1.Add(2 * 24 * time.Hour)}},
		{name: "no clock uses the server's", body: `{"rating":4}`, wantCode: 200,
			wantState: &quiz.State{Stability: w[3], Difficulty: 1, Reps: 1, Interval: 8, Last: fixedNow, Due: fixedNow.Add(8 * 24 * time.Hour)}},
		{name: "good on an FSRS state", body: `{"state":{"stability":10,"difficulty":5,"reps":3,"lapses":0,"interval":10,"last":"2026-08-22T10:00:00Z","due":"2026-09-01T10:00:00Z"},"rating":3}`, wantCode: 200,
			wantState:  &quiz.State{Stability: 32.02672948198673, Difficulty: 4.9902283692968386, Reps: 4, Interval: 32, Last: fixedNow, Due: fixedNow.Add(32 * 24 * time.Hour)},
			wantRecall: 0.9},
		{name: "bad rating", body: `{"rating":7}`, wantCode: 400, wantErr: "rating 7 is not 1 (again) to 4 (easy)"},
		{name: "missing rating", body: `{"state":{}}`, wantCode: 400, wantErr: "rating 0 is not 1 (again) to 4 (easy)"},
		{name: "bad state", body: `{"state":{"stabilty":3},"rating":3}`, wantCode: 400, wantErr: `card state: not a card state: json: unknown field "stabilty"`},
		{name: "bad fsrs state", body: `{"state":{"stability":-1,"difficulty":3},"rating":3}`, wantCode: 400, wantErr: "card state: stability -1 days is outside"},
		{name: "not json", body: `rating=3`, wantCode: 400, wantErr: "review body is not valid JSON"},
		{name: "unknown field", body: `{"rating":3,"grade":1}`, wantCode: 400, wantErr: `unknown field "grade"`},
		{name: "bad time", body: `{"rating":3,"now":"yesterday"}`, wantCode: 400, wantErr: "review body is not valid JSON"},
		{name: "trailing data", body: `{"rating":3}{}`, wantCode: 400, wantErr: "data after the JSON object"},
		{name: "huge body", body: `{"rating":3,"state":{"reps":1` + strings.Repeat(" ", 8<<10) + `}}`, wantCode: 413, wantErr: "review body is larger than the limit of 4096 bytes"},
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
			if diff := cmp.Diff(tt.wantState, got.State, approx); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if tt.wantState == nil {
				return
			}
			switch {
			case tt.wantRecall == 0 && got.Recall != nil:
				t.Errorf("recall %g for a new card, want none", *got.Recall)
			case tt.wantRecall != 0 && (got.Recall == nil || math.Abs(*got.Recall-tt.wantRecall) > 1e-9):
				t.Errorf("recall %v, want %g", got.Recall, tt.wantRecall)
			}
			// The predicted recall at the next due time is about the desired
			// retention (rounding the interval to days moves it a little).
			// After Again the card comes back within the sitting, which the
			// forgetting curve does not schedule, so none is predicted.
			r := got.RecallAtDue
			switch {
			case tt.wantState.Interval == 0 && r != nil:
				t.Errorf("recall at due %g after Again, want none", *r)
			case tt.wantState.Interval > 0 && (r == nil || *r < 0.85 || *r > 0.95):
				t.Errorf("recall at due %v, want about 0.9", r)
			}
		})
	}
}

// POST /flashcards/states reads the deck as the browser stored it: every
// reviewed card comes back with its recall now.
func TestStatesEndpoint(t *testing.T) {
	srv := newTestServer(t)
	post := func(body string) (int, statesResponse) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/flashcards/states", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got statesResponse
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatalf("decode response: %v", err)
		}
		return resp.StatusCode, got
	}
	code, got := post(`{"states":{
		"level-triggered":{"stability":1,"difficulty":5,"reps":1,"lapses":0,"interval":1,"last":"2026-09-01T10:00:00Z","due":"2026-09-02T10:00:00Z"},
		"owner-references":{"stability":10,"difficulty":5,"reps":3,"lapses":0,"interval":10,"last":"2026-08-22T10:00:00Z","due":"2026-09-01T10:00:00Z"},
		"observed-generation":{}
	}}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, got.Error)
	}
	lt := got.Cards["level-triggered"]
	if lt.State.Stability != 1 || !lt.State.Last.Equal(fixedNow) || lt.Recall == nil || *lt.Recall != 1 {
		t.Errorf("card reviewed just now: %+v, want S 1, last %s, recall 1", lt, fixedNow)
	}
	or := got.Cards["owner-references"]
	if or.Recall == nil || math.Abs(*or.Recall-0.9) > 1e-9 {
		t.Errorf("card on its due day: %+v, want recall 0.9", or)
	}
	if og := got.Cards["observed-generation"]; og.Recall != nil || !og.State.IsNew() {
		t.Errorf("new card: %+v", og)
	}

	for _, tt := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"bad card", `{"states":{"a":{"stability":3,"difficulty":42,"last":"2026-09-01T10:00:00Z"},"b":{}}}`, 400, `card "a": difficulty 42 is outside`},
		{"not an object", `{"states":[1]}`, 400, "states body is not valid JSON"},
		{"huge", `{"states":{"a":{}` + strings.Repeat(`,"x":{}`, 300<<10/7) + `}}`, 413, "states body is larger than the limit"},
		{"too many", `{"states":{` + manyStates(maxStates+1) + `}}`, 400, "1001 card states sent, at most 1000 are read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, got := post(tt.body)
			if code != tt.code || !strings.Contains(got.Error, tt.want) {
				t.Errorf("status %d, error %q; want %d and %q", code, got.Error, tt.code, tt.want)
			}
		})
	}
}

// A question's excerpt (a trace, an object) is shown verbatim in a pre
// block under its prompt, on the blank and on the graded page.
func TestQuizShowsExcerptsVerbatim(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	_, blank := get(t, srv, "/quiz")
	_, graded := postForm(t, srv, "/quiz", url.Values{})
	n := 0
	for _, q := range bank.Questions {
		if q.Code == "" {
			continue
		}
		n++
		want := `<code>` + htmlEscape(q.Code) + `</code></pre>`
		for name, body := range map[string]string{"quiz page": blank, "graded page": graded} {
			i := strings.Index(body, `id="q-`+q.ID+`"`)
			if i < 0 {
				t.Fatalf("%s has no question %s", name, q.ID)
			}
			if j := strings.Index(body[i:], `<pre class="question-code"`); j < 0 || !strings.HasPrefix(body[i+j:][strings.Index(body[i+j:], "<code>"):], want) {
				t.Errorf("%s: question %s does not show its excerpt verbatim in a pre block", name, q.ID)
			}
		}
	}
	if n == 0 {
		t.Fatal("no question has an excerpt")
	}
}

// POST /flashcards/preview tells each rating button what it will do: the
// intervals are the ones a review at the same clock then gives.
func TestPreviewEndpoint(t *testing.T) {
	srv := newTestServer(t)
	post := func(path, body string, v any) int {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("decode response: %v", err)
		}
		return resp.StatusCode
	}
	tests := []struct {
		name, state string
		want        []string // the four buttons' intervals
	}{
		// A new card: Again relearns in a minute, the others start at
		// round(w1..w3) days: 1, 2 and 8.
		{"new card", `{}`, []string{"1 min", "1 day", "2 days", "8 days"}},
		// A card of stability 10 on its due day (R = 0.9): Good multiplies
		// S by 1 + 2.203 (S 32.03, as TestReviewEndpoint has it), Hard adds
		// w15 = 0.6014 of that increase (S 23.25), Easy w16 = 1.8729 of it
		// (S 51.26, 1.7 months of 30 days).
		{"due card", `{"stability":10,"difficulty":5,"reps":3,"lapses":0,"interval":10,"last":"2026-08-22T10:00:00Z","due":"2026-09-01T10:00:00Z"}`,
			[]string{"1 min", "23 days", "1.1 months", "1.7 months"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got previewResponse
			if code := post("/flashcards/preview", `{"state":`+tt.state+`}`, &got); code != http.StatusOK {
				t.Fatalf("status %d: %s", code, got.Error)
			}
			if !got.Now.Equal(fixedNow) {
				t.Errorf("now %s, want the server's clock %s", got.Now, fixedNow)
			}
			var intervals, names []string
			for _, o := range got.Options {
				intervals = append(intervals, o.Interval)
				names = append(names, o.Name)
			}
			if diff := cmp.Diff(tt.want, intervals); diff != "" {
				t.Errorf("intervals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"Again", "Hard", "Good", "Easy"}, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			for _, o := range got.Options {
				// The review each button sends gets the due time it showed.
				var rev reviewResponse
				body := fmt.Sprintf(`{"state":%s,"rating":%d,"now":%q}`, tt.state, o.Rating, got.Now.Format(time.RFC3339Nano))
				if code := post("/flashcards/review", body, &rev); code != http.StatusOK {
					t.Fatalf("review %s: status %d: %s", o.Name, code, rev.Error)
				}
				if !rev.State.Due.Equal(o.Due) || rev.State.Interval != o.Days {
					t.Errorf("%s showed due %s (%d days), the review gave %s (%d days)", o.Name, o.Due, o.Days, rev.State.Due, rev.State.Interval)
				}
				if (o.Rating == quiz.Again) != (o.RecallAtDue == nil) {
					t.Errorf("%s: recall at due %v; want one for every rating but Again", o.Name, o.RecallAtDue)
				}
			}
		})
	}
	var bad previewResponse
	if code := post("/flashcards/preview", `{"state":{"stability":-1,"difficulty":3}}`, &bad); code != http.StatusBadRequest || !strings.Contains(bad.Error, "card state: stability -1 days is outside") {
		t.Errorf("bad state: status %d, error %q", code, bad.Error)
	}
	if code := post("/flashcards/preview", `{"state":{},"rating":3}`, &bad); code != http.StatusBadRequest || !strings.Contains(bad.Error, `preview body is not valid JSON`) {
		t.Errorf("unknown field: status %d, error %q", code, bad.Error)
	}
}

func TestIntervalText(t *testing.T) {
	const day = 24 * time.Hour
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Second, "1 min"},
		{time.Minute, "1 min"},
		{10 * time.Minute, "10 min"},
		{time.Hour, "1 hour"},
		{5 * time.Hour, "5 hours"},
		{day, "1 day"},
		{2 * day, "2 days"},
		{29 * day, "29 days"},
		{30 * day, "1 month"},
		{45 * day, "1.5 months"},
		{365 * day, "1 year"},
		{800 * day, "2.2 years"},
	} {
		if got := intervalText(tt.d); got != tt.want {
			t.Errorf("intervalText(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func manyStates(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"c` + itoa(i) + `":{}`
	}
	return strings.Join(parts, ",")
}

// approx compares floats in states to 1e-9.
var approx = cmpopts.EquateApprox(0, 1e-9)

func itoa(i int) string { return strconv.Itoa(i) }

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// The quiz page must not give the answers away: before the learner has
// answered, its source has no correct-answer marker and no explanation.
func TestQuizPageCarriesNoAnswers(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/quiz", "/quiz?only=level-triggered,status-subresource"} {
		code, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		for _, marker := range []string{"data-correct", "is-correct", "correct answer", `"correct"`, "✓"} {
			if strings.Contains(body, marker) {
				t.Errorf("%s contains the correct-answer marker %q", path, marker)
			}
		}
		for _, q := range bank.Questions {
			if strings.Contains(body, htmlEscape(q.Explanation)) {
				t.Errorf("%s carries the explanation of %s before it is answered", path, q.ID)
			}
		}
	}
	// The graded page (no-script fallback) does show them.
	_, body := postForm(t, srv, "/quiz", url.Values{"q.level-triggered": {"0"}})
	mustContain(t, "graded page", body, "is-correct", "✓ correct answer", htmlEscape(bank.Questions[0].Explanation))
}

func TestAnswerEndpoint(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	lt, _ := quiz.Find(bank.Questions, "level-triggered")
	tests := []struct {
		name        string
		body        string
		code        int
		wantCorrect bool
		wantErr     string
	}{
		{name: "right", body: `{"question":"level-triggered","choices":[1]}`, code: 200, wantCorrect: true},
		{name: "wrong", body: `{"question":"level-triggered","choices":[0]}`, code: 200},
		{name: "pick-all right", body: `{"question":"status-subresource","choices":[2,0]}`, code: 200, wantCorrect: true},
		{name: "pick-all partly", body: `{"question":"status-subresource","choices":[0]}`, code: 200},
		{name: "unknown question", body: `{"question":"nope","choices":[0]}`, code: 404, wantErr: `no question has id "nope"`},
		// A challenge's own question is graded only by its challenge: the
		// quiz would answer with its right choices.
		{name: "a challenge's question", body: `{"question":"operator-or-chart","choices":[1]}`, code: 404, wantErr: `no question has id "operator-or-chart"`},
		{name: "choice out of range", body: `{"question":"level-triggered","choices":[9]}`, code: 400, wantErr: `question "level-triggered" has choices 0 to 3, not 9`},
		{name: "two on a single", body: `{"question":"level-triggered","choices":[0,1]}`, code: 400, wantErr: `question "level-triggered" takes one answer, got 2`},
		{name: "nothing picked", body: `{"question":"level-triggered","choices":[]}`, code: 400, wantErr: `no choice picked for question "level-triggered"`},
		{name: "not json", body: `question=level-triggered`, code: 400, wantErr: "answer body is not valid JSON"},
		{name: "unknown field", body: `{"question":"level-triggered","choice":[1]}`, code: 400, wantErr: `unknown field "choice"`},
		{name: "huge body", body: `{"question":"level-triggered","choices":[` + strings.Repeat("1,", 4<<10) + `1]}`, code: 413, wantErr: "answer body is larger than the limit of 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/quiz/answer", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got answerResponse
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("decode response: %v", err)
			}
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d (%+v)", resp.StatusCode, tt.code, got)
			}
			if tt.wantErr != "" {
				if !strings.Contains(got.Error, tt.wantErr) || got.Correct || got.Explanation != "" {
					t.Errorf("got %+v, want only the error %q", got, tt.wantErr)
				}
				return
			}
			if got.Correct != tt.wantCorrect || got.Explanation == "" || len(got.CorrectChoices) == 0 || got.Error != "" {
				t.Errorf("got %+v, want correct %v with the correct choices and an explanation", got, tt.wantCorrect)
			}
		})
	}
	// The verdict carries what the page lacked.
	resp, err := http.Post(srv.URL+"/quiz/answer", "application/json", strings.NewReader(`{"question":"level-triggered","choices":[0]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got answerResponse
	_ = json.NewDecoder(resp.Body).Decode(&got)
	want := answerResponse{Question: "level-triggered", CorrectChoices: lt.Correct(), Explanation: lt.Explanation}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wrong answer's verdict (-want +got):\n%s", diff)
	}
}

// Each lesson page links the challenges that practise its sections.
func TestLessonPageLinksItsChallenges(t *testing.T) {
	srv := newTestServer(t)
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	set, err := judge.LoadEmbedded(course)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range set.Challenges {
		_, body := get(t, srv, "/lessons/"+c.LessonSlug)
		mustContain(t, "/lessons/"+c.LessonSlug, body, "Practise it", `href="/challenges/`+c.ID+`"`)
		for _, a := range c.Also {
			_, body := get(t, srv, "/lessons/"+a.Slug)
			mustContain(t, "/lessons/"+a.Slug+" (also of "+c.ID+")", body, "Practise it", `href="/challenges/`+c.ID+`"`)
		}
	}
	_, body := get(t, srv, "/lessons/cheat-sheet")
	if strings.Contains(body, "Practise it") && len(set.ForLesson("cheat-sheet")) == 0 {
		t.Error("cheat-sheet shows a Practise it list but no challenge practises it")
	}
}

// TestQuizLinksItsChallenges: a question tied to a challenge links it,
// by its title, beside the lesson and the live demo.
func TestQuizLinksItsChallenges(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	set, err := judge.LoadEmbedded(course)
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, srv, "/quiz")
	tied := 0
	for _, q := range bank.Questions {
		if q.Challenge == "" {
			continue
		}
		tied++
		c, ok := set.Get(q.Challenge)
		if !ok {
			t.Fatalf("question %s names challenge %q, which does not exist", q.ID, q.Challenge)
		}
		mustContain(t, "quiz page, question "+q.ID, body, `href="/challenges/`+c.ID+`"`, "Practise it: <a href=\"/challenges/"+c.ID+"\">"+htmlEscape(c.Title)+"</a>")
	}
	if tied == 0 {
		t.Fatal("no question names a challenge; the quiz's challenge links are untested")
	}
}

// choiceValues lists, question by question, the values of the choices in
// the order the page shows them.
func choiceValues(body string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`name="q\.([a-z0-9-]+)" id="[^"]*" value="(\d+)"`).FindAllStringSubmatch(body, -1) {
		out[m[1]] += m[2] + " "
	}
	return out
}

// Each visit shows the choices in an order of its own, so that a learner
// who takes the quiz again must know the answer, not its place; the graded
// page shows them where the learner saw them, and grading goes by value.
func TestQuizShufflesChoicesAndGradesWhereTheyWere(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	_, first := get(t, srv, "/quiz")
	_, second := get(t, srv, "/quiz")
	a, b := choiceValues(first), choiceValues(second)
	if len(a) != len(bank.Questions) {
		t.Fatalf("read the choices of %d questions, want %d", len(a), len(bank.Questions))
	}
	asWritten, differ := 0, 0
	for _, q := range bank.Questions {
		written := ""
		for i := range q.Choices {
			written += itoa(i) + " "
		}
		if a[q.ID] == written {
			asWritten++
		}
		if a[q.ID] != b[q.ID] {
			differ++
		}
	}
	// With four choices a question keeps the written order one time in
	// 24 by chance: a third of them doing so says nothing was shuffled.
	if asWritten > len(bank.Questions)/3 || differ < len(bank.Questions)/3 {
		t.Errorf("%d of %d questions show their choices as written, %d differ between two visits: not shuffled", asWritten, len(bank.Questions), differ)
	}

	m := regexp.MustCompile(`<input type="hidden" name="order" value="(\d+)"`).FindStringSubmatch(first)
	if m == nil {
		t.Fatal("the quiz form carries no order")
	}
	q := bank.Questions[0]
	code, graded := postForm(t, srv, "/quiz", url.Values{"order": {m[1]}, quiz.FieldPrefix + q.ID: {itoa(q.Correct()[0])}})
	if code != http.StatusOK {
		t.Fatalf("grading: %d", code)
	}
	mustContain(t, "graded page", graded, "You scored 1 of")
	shown := regexp.MustCompile(`value="(\d+)"[^>]*disabled`)
	for _, q := range bank.Questions[:5] {
		i := strings.Index(graded, `<fieldset id="q-`+q.ID+`"`)
		j := strings.Index(graded[i:], "</fieldset>")
		got := ""
		for _, v := range shown.FindAllStringSubmatch(graded[i:i+j], -1) {
			got += v[1] + " "
		}
		if got != a[q.ID] {
			t.Errorf("question %s: graded page shows choices %q, the page answered showed %q", q.ID, got, a[q.ID])
		}
	}
}
