package code

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/quiz"
)

// The page and the quiz said "2 s per reconcile" while a loop was stopped
// after 0.5 s of CPU time. The page now says the sandbox's own limits, and
// the quiz's answer names the default ones.
func TestThePageAndTheQuizSayTheSandboxLimits(t *testing.T) {
	page := func(newSandbox func() *sandbox.Sandbox) string {
		h := New(Options{Controller: &fakeController{}, Sessions: oneNamespace("lab-x"), NewSandbox: newSandbox})
		mux := http.NewServeMux()
		h.Register(mux)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/code", nil))
		return w.Body.String()
	}
	const defaults = "at most 0.5 s of CPU time and 2 s in all per reconcile"
	if got := page(nil); !strings.Contains(got, defaults) {
		t.Errorf("the page with the default sandbox does not say %q", defaults)
	}
	custom := func() *sandbox.Sandbox {
		return &sandbox.Sandbox{CPUBudget: 300 * time.Millisecond, Deadline: 3 * time.Second}
	}
	if got := page(custom); !strings.Contains(got, "at most 0.3 s of CPU time and 3 s in all per reconcile") {
		t.Error("the page does not say the limits of the sandbox it runs code in")
	}

	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	q, err := quiz.Find(bank.Questions, "your-code-loops")
	if err != nil {
		t.Fatal(err)
	}
	right := q.Choices[q.Correct()[0]].Text
	if !strings.Contains(right, "0.5 s of CPU time") || strings.Contains(right, "after 2 s") {
		t.Errorf("the quiz's right answer says %q; want the CPU budget that stops a loop", right)
	}
	if !strings.Contains(q.Explanation, "0.5 s of CPU time and 2 s in all per reconcile") {
		t.Errorf("the quiz's explanation does not name both limits: %q", q.Explanation)
	}
}

// A lesson's link to /code may be a learner's first visit: the page begins
// their session itself (as the lab does) where it sent them to the lab
// without a word, and in a classroom with a join code it asks for the code
// and comes back to /code.
func TestThePageBeginsTheSessionOrAsksToJoin(t *testing.T) {
	get := func(s Sessions) *httptest.ResponseRecorder {
		mux := http.NewServeMux()
		New(Options{Controller: &fakeController{}, Sessions: s}).Register(mux)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/code", nil))
		return w
	}
	if w := get(oneNamespace("lab-new")); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `data-namespace="lab-new"`) {
		t.Errorf("GET /code with a session begun = %d, want 200 and the page for lab-new", w.Code)
	}
	w := get(oneNamespace(""))
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `name="next" value="/code"`) {
		t.Errorf("GET /code where a join code is needed = %d %q; want 403 and the join form coming back to /code", w.Code, w.Header().Get("Location"))
	}
}
