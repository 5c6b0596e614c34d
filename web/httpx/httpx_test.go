package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/go-logr/logr/funcr"
)

// halfThenFail writes the start of a page, then fails, as a template does
// when a value it calls breaks halfway through.
var halfThenFail = templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
	_, _ = io.WriteString(w, "<!DOCTYPE html><h1>Half a page</h1><p>secret-partial")
	return errors.New("the view model has no field Oops")
})

func TestRenderFailureIsA500WithTheErrorPageAndNoPartialBody(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	w := httptest.NewRecorder()
	Render(w, httptest.NewRequest("GET", "/lessons/x", nil), log, http.StatusOK, halfThenFail)

	if w.Code != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", w.Code)
	}
	body := w.Body.String()
	if strings.Contains(body, "Half a page") || strings.Contains(body, "secret-partial") {
		t.Errorf("the reply carries the half-rendered page:\n%s", body)
	}
	for _, want := range []string{"<title>Something went wrong · oplab</title>", "<h1>Something went wrong</h1>", `href="/"`, `<main id="main">`} {
		if !strings.Contains(body, want) {
			t.Errorf("the error page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "Oops") {
		t.Errorf("the error page shows the internal error to the learner:\n%s", body)
	}
	if got := w.Header().Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", got)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "no field Oops") || !strings.Contains(logged[0], `"path"="/lessons/x"`) {
		t.Errorf("logged %q, want the error once with the path", logged)
	}
}

func TestRenderWritesTheWholePageWithItsStatus(t *testing.T) {
	page := templ.Raw("<p>whole</p>")
	w := httptest.NewRecorder()
	w.Header().Set("Cache-Control", "no-store")
	Render(w, httptest.NewRequest("GET", "/", nil), funcr.New(func(_, args string) { t.Errorf("logged %s", args) }, funcr.Options{}), http.StatusNotFound, page)
	if w.Code != http.StatusNotFound || w.Body.String() != "<p>whole</p>" {
		t.Errorf("got %d %q, want 404 and the page", w.Code, w.Body.String())
	}
	if got := w.Header().Get("Content-Length"); got != "12" {
		t.Errorf("Content-Length %q, want 12", got)
	}
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("a header set before Render was lost: Cache-Control %q", got)
	}
}

func TestJSON(t *testing.T) {
	w := httptest.NewRecorder()
	JSON(w, http.StatusAccepted, map[string]any{"seq": 7, "message": "<b>&"})
	if w.Code != http.StatusAccepted {
		t.Errorf("status %d, want 202", w.Code)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", got)
	}
	var back map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &back); err != nil || back["seq"] != 7.0 || back["message"] != "<b>&" {
		t.Errorf("body %q decodes to %v (%v)", w.Body.String(), back, err)
	}
	if !strings.HasSuffix(w.Body.String(), "}\n") {
		t.Errorf("body %q does not end with a newline", w.Body.String())
	}
}

func TestJSONThatCannotBeEncodedIsA500(t *testing.T) {
	w := httptest.NewRecorder()
	JSON(w, http.StatusOK, map[string]float64{"x": math.Inf(1)})
	if w.Code != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", w.Code)
	}
	var back struct{ Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &back); err != nil || !strings.Contains(back.Error, "encode the reply") {
		t.Errorf("body %q: want a JSON error naming the encoding (%v)", w.Body.String(), err)
	}
}

func TestWantsJSON(t *testing.T) {
	cases := []struct {
		accept string
		want   bool
	}{
		{"", false},
		{"application/json", true},
		{"Application/JSON", true},
		{"application/json, text/plain, */*", true},
		{"application/problem+json", true},
		{"application/json;q=0", false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false}, // Chromium's navigation
		{"*/*", false},
		{"text/html;q=0.5, application/json", true},
		{"text/html, application/json;q=0.5", false},
		{"text/html, application/json", true},
		{"application/json;q=oops", false},
		{"application/jsonp", false},
		{"text/json-ish, application/json", true},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("POST", "/", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if got := WantsJSON(r); got != tc.want {
			t.Errorf("Accept %q: WantsJSON = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

func TestSplitIDs(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  []string
	}{
		{"", 10, nil},
		{" , ,", 10, nil},
		{"a,b , c", 10, []string{"a", "b", "c"}},
		{"a,,b,", 10, []string{"a", "b"}},
		{"a,b,c,d", 2, []string{"a", "b"}},
		{",,a,,b", 2, []string{"a", "b"}},
	}
	for _, tc := range cases {
		if got := SplitIDs(tc.in, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("SplitIDs(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestRetryAfterRoundsUpToWholeSecondsAndAtLeastOne(t *testing.T) {
	for _, c := range []struct {
		wait time.Duration
		want string
	}{
		{0, "1"},
		{-time.Second, "1"},
		{300 * time.Millisecond, "1"},
		{time.Second, "1"},
		{1001 * time.Millisecond, "2"},
		{90 * time.Second, "90"},
	} {
		w := httptest.NewRecorder()
		got := RetryAfter(w, c.wait)
		if got != c.want || w.Header().Get("Retry-After") != c.want {
			t.Errorf("RetryAfter(%v) = %q with header %q, want %q for both", c.wait, got, w.Header().Get("Retry-After"), c.want)
		}
	}
}

func TestDownloadIsAnAttachmentNamedAsAsked(t *testing.T) {
	w := httptest.NewRecorder()
	Download(w, `my "timeline".json`, map[string]any{"seq": 7})
	if w.Code != http.StatusOK {
		t.Errorf("status %d, want 200", w.Code)
	}
	_, params, err := mime.ParseMediaType(w.Header().Get("Content-Disposition"))
	if err != nil || params["filename"] != `my "timeline".json` {
		t.Errorf("Content-Disposition %q: filename %q (%v)", w.Header().Get("Content-Disposition"), params["filename"], err)
	}
	if w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Content-Length") != strconv.Itoa(w.Body.Len()) {
		t.Errorf("headers %v for a %d-byte body", w.Header(), w.Body.Len())
	}
	var back map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &back); err != nil || back["seq"] != 7.0 {
		t.Errorf("body %q decodes to %v (%v)", w.Body.String(), back, err)
	}
}

// A value that cannot be encoded is a 500 naming the file, never a
// truncated file with a 200.
func TestDownloadThatCannotBeEncodedIsA500(t *testing.T) {
	w := httptest.NewRecorder()
	Download(w, "results.json", map[string]float64{"x": math.Inf(1)})
	if w.Code != http.StatusInternalServerError || w.Header().Get("Content-Disposition") != "" {
		t.Fatalf("status %d, disposition %q: want a 500 and no attachment", w.Code, w.Header().Get("Content-Disposition"))
	}
	if !strings.Contains(w.Body.String(), "encode results.json") {
		t.Errorf("body %q does not name the file", w.Body.String())
	}
}

func TestExcerpt(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer name", 8, "a longer…"},
		{"héllo wörld", 7, "héllo w…"},
		{"ab\xffcdef", 4, "abc…"},
	} {
		if got := Excerpt(tt.in, tt.n); got != tt.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
