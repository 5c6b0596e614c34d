package code

import (
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/web/session"
)

// TestForgetEndsTheLearnersCode: when a session ends, its namespace goes
// back to oplab's controller, its child process stops and its saved code
// goes with it; another learner's stays.
func TestForgetEndsTheLearnersCode(t *testing.T) {
	ctl := &fakeController{}
	sessions := map[string]oneNamespace{"a": "lab-a", "b": "lab-b"}
	h := New(Options{Controller: ctl, Sessions: byHeader(sessions), NewSandbox: func() *sandbox.Sandbox { return &sandbox.Sandbox{} }})
	mux := http.NewServeMux()
	h.Register(mux)
	do := func(who, method, path, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("X-Who", who)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w
	}
	for _, who := range []string{"a", "b"} {
		if w := do(who, "POST", "/code/save", `{"source":"package main // mine: `+who+`"}`); w.Code != http.StatusNoContent {
			t.Fatalf("save as %s = %d %s", who, w.Code, w.Body)
		}
	}
	// As a Run would leave it (the child itself is not the point here).
	ctl.HandOver("lab-a", recording{l: h.learnerOf("lab-a")})

	h.Forget("lab-a")
	h.mu.Lock()
	_, kept := h.learners["lab-a"]
	h.mu.Unlock()
	if kept {
		t.Error("lab-a's entry is still in the table")
	}
	if ctl.HandedOver("lab-a") {
		t.Error("lab-a is still handed to the learner's code after its session ended")
	}
	if page := html.UnescapeString(do("a", "GET", "/code", "").Body.String()); strings.Contains(page, "mine: a") {
		t.Error("lab-a's code is still kept after its session ended")
	}
	if page := html.UnescapeString(do("b", "GET", "/code", "").Body.String()); !strings.Contains(page, "mine: b") {
		t.Error("another learner's code went with lab-a's session")
	}
}

// byHeader resolves the session from a test header, for two learners.
type byHeader map[string]oneNamespace

func (b byHeader) NamespaceOf(r *http.Request) (string, error) {
	return b[r.Header.Get("X-Who")].NamespaceOf(r)
}

func (b byHeader) Begin(w http.ResponseWriter, r *http.Request) (session.Session, error) {
	return b[r.Header.Get("X-Who")].Begin(w, r)
}
