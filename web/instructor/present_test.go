package instructor

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/web/session"
)

type fakeClassroom struct {
	ns, name   string
	presenting bool
}

func (c *fakeClassroom) Present(ns, name string)   { c.ns, c.name, c.presenting = ns, name, true }
func (c *fakeClassroom) StopPresenting()           { c.presenting = false }
func (c *fakeClassroom) Presenter() (string, bool) { return c.name, c.presenting }
func (fakeSessions) Begin(http.ResponseWriter, *http.Request) (session.Session, error) {
	return session.Session{Namespace: "lab-teacher"}, nil
}

type fakeSessions struct{}

func TestPresentNeedsTheInstructorAndUsesTheirLab(t *testing.T) {
	cls := &fakeClassroom{}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true},
		Present: Presenting{Classroom: cls, Sessions: fakeSessions{}}}).Register(mux)
	if w := do(mux, "POST", "/instructor/present", url.Values{"name": {"Ada"}}, nil); w.Code != http.StatusUnauthorized || cls.presenting {
		t.Fatalf("Present without the cookie: %d, presenting %v; want 401 and nothing started", w.Code, cls.presenting)
	}
	cookie := &http.Cookie{Name: CookieName, Value: "wrong"}
	if w := do(mux, "POST", "/instructor/present", url.Values{"name": {"Ada"}}, cookie); w.Code != http.StatusForbidden || cls.presenting {
		t.Fatalf("Present with a wrong cookie: %d; want 403", w.Code)
	}
	login := do(mux, "GET", "/instructor?token="+token, nil, nil)
	cookie = login.Result().Cookies()[0]
	if w := do(mux, "POST", "/instructor/present", url.Values{"name": {strings.Repeat("a", 61)}}, cookie); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "presenter name") {
		t.Fatalf("a 61-character name: %d %q; want 422 naming the field", w.Code, w.Body.String())
	}
	if w := do(mux, "POST", "/instructor/present", url.Values{"name": {"Ada"}}, cookie); w.Code != http.StatusSeeOther || !cls.presenting || cls.ns != "lab-teacher" || cls.name != "Ada" {
		t.Fatalf("Present: %d, %+v; want 303 and the instructor's own lab namespace presented as Ada", w.Code, cls)
	}
	page := do(mux, "GET", "/instructor", nil, cookie)
	if !strings.Contains(page.Body.String(), `id="present-stop"`) || !strings.Contains(page.Body.String(), "Ada") {
		t.Errorf("the page while presenting has no Stop presenting button naming Ada")
	}
	if w := do(mux, "POST", "/instructor/present/stop", nil, cookie); w.Code != http.StatusSeeOther || cls.presenting {
		t.Fatalf("Stop presenting: %d, presenting %v", w.Code, cls.presenting)
	}
	if !strings.Contains(do(mux, "GET", "/instructor", nil, cookie).Body.String(), `id="present-start"`) {
		t.Error("after Stop presenting the page offers no Present button")
	}
}
