package session

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/web/progress"
)

// BenchmarkProgressAndRoster measures what the roster costs the session
// table with 200 sessions (the default cap): one browser's progress report
// (web/progress's decode and checks, one owner-goroutine step), and one List, which the
// roster's 2-second redraw makes.
//
//	go test -run '^$' -bench BenchmarkProgressAndRoster -benchmem ./web/session/
func BenchmarkProgressAndRoster(b *testing.B) {
	m, err := New(b.Context(), Options{Namespaces: &fakeNamespaces{}})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	progress.Handler{Sessions: m, Known: progress.Known{Scenario: func(string) bool { return true },
		ChallengeTasks: func(string) (int, bool) { return 4, true }, QuizSize: 20}}.Register(mux)
	const body = `{"name":"Ada Lovelace","scenarios":["first-reconcile","finalizer","status-thrash"],
		"challenges":{"drift-repair":{"done":3,"of":4},"scale-up":{"done":1,"of":2}},"quizBest":7,"cardsReviewed":12}`
	var cookie *http.Cookie
	for range 200 {
		w := httptest.NewRecorder()
		if _, err := m.Begin(w, httptest.NewRequest("GET", "/lab", nil)); err != nil {
			b.Fatal(err)
		}
		cookie = w.Result().Cookies()[0]
		r := httptest.NewRequest("POST", "/lab/progress", strings.NewReader(body))
		r.AddCookie(cookie)
		mux.ServeHTTP(httptest.NewRecorder(), r)
	}
	b.Run("report", func(b *testing.B) {
		for b.Loop() {
			r := httptest.NewRequest("POST", "/lab/progress", strings.NewReader(body))
			r.AddCookie(cookie)
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("progress = %d %s", w.Code, w.Body)
			}
		}
	})
	b.Run("list-200", func(b *testing.B) {
		for b.Loop() {
			list, err := m.List(b.Context())
			if err != nil || len(list) != 200 {
				b.Fatalf("List = %d sessions, %v", len(list), err)
			}
		}
	})
}
