package instructor

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

type fakeClassroom struct {
	ns, name   string
	presenting bool
}

func (c *fakeClassroom) Present(ns, name string)    { c.ns, c.name, c.presenting = ns, name, true }
func (c *fakeClassroom) StopPresenting()            { c.presenting = false }
func (c *fakeClassroom) Presenter() (string, bool)  { return c.name, c.presenting }
func (c *fakeClassroom) Presenting() (string, bool) { return c.ns, c.presenting }
func (fakeSessions) BeginInstructor(http.ResponseWriter, *http.Request) (session.Session, error) {
	return session.Session{Namespace: "lab-teacher"}, nil
}
func (fakeSessions) NamespaceOf(*http.Request) (string, error) { return "lab-teacher", nil }

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

// With a class's join code, the instructor is not asked for it: Present
// and the page's link to their lab begin the instructor's lab session (the
// link then leads to /lab), where a learner without the code is refused.
func TestTheInstructorNeedsNoJoinCode(t *testing.T) {
	m, err := session.New(t.Context(), session.Options{Namespaces: inMemory{}, JoinCode: "class42"})
	if err != nil {
		t.Fatal(err)
	}
	cls := &fakeClassroom{}
	mux := http.NewServeMux()
	progress.Handler{Sessions: m, Known: progress.Known{Scenario: func(string) bool { return true }}}.Register(mux)
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true},
		Present: Presenting{Classroom: cls, Sessions: m}}).Register(mux)
	if _, err := m.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", "/lab", nil)); !errors.Is(err, session.ErrJoin) {
		t.Fatalf("a learner without the code: %v, want the join code asked", err)
	}
	cookie := do(mux, "GET", "/instructor?token="+token, nil, nil).Result().Cookies()[0]
	w := do(mux, "POST", "/instructor/present", url.Values{"name": {"Ada"}}, cookie)
	if w.Code != http.StatusSeeOther || !cls.presenting || !strings.HasPrefix(cls.ns, "lab-") {
		t.Fatalf("Present with a join code set: %d %q, presenting %q; want 303 and the instructor's new lab presented", w.Code, w.Body, cls.ns)
	}
	// The link to the lab from another browser of the instructor's.
	if w := do(mux, "GET", "/instructor/lab?projector=1", nil, nil); w.Code != http.StatusUnauthorized {
		t.Errorf("/instructor/lab without the token = %d, want 401", w.Code)
	}
	w = do(mux, "GET", "/instructor/lab?projector=1", nil, cookie)
	var lab *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == session.CookieName {
			lab = c
		}
	}
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/lab?projector=1" || lab == nil {
		t.Fatalf("/instructor/lab = %d to %q, session cookie %v; want 303 to the projector with a lab session", w.Code, w.Header().Get("Location"), lab)
	}
	r := httptest.NewRequest("GET", "/lab", nil)
	r.AddCookie(lab)
	if ns, err := m.NamespaceOf(r); err != nil || !strings.HasPrefix(ns, "lab-") {
		t.Errorf("the lab session /instructor/lab began: %q %v", ns, err)
	}
}

// Present pressed in another browser: this browser's page says the
// learners follow a lab that is not its own, offers to present its own,
// and its demo panel says the room will not see a demo played here.
func TestThePagePresentingElsewhereSaysSo(t *testing.T) {
	cls := &fakeClassroom{ns: "lab-other", name: "Ada", presenting: true}
	d := &fakeDemos{status: demo.Status{State: demo.Idle}}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true},
		Present: Presenting{Classroom: cls, Sessions: fakeSessions{}},
		Demo:    Demo{Player: d, Labs: fakeSessions{}}}).Register(mux)
	cookie := do(mux, "GET", "/instructor?token="+token, nil, nil).Result().Cookies()[0]
	page := do(mux, "GET", "/instructor", nil, cookie).Body.String()
	for _, want := range []string{"presenting elsewhere", "the lab <code>lab-other</code>, opened in another browser",
		"This browser's lab, <code>lab-teacher</code>, is not the one they see", "Present this browser&#39;s lab instead",
		`id="demo-elsewhere"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page presenting elsewhere lacks %q:\n%s", want, page)
		}
	}
	// A refused demo control shows the whole page, its reason in the demo
	// panel: the Present section is still there.
	d.refuse = fmt.Errorf("%w: the controller is paused", demo.ErrRefused)
	w := do(mux, "POST", "/instructor/demo/play", url.Values{"demo": {"reconcile-loop"}}, cookie)
	if body := w.Body.String(); w.Code != http.StatusConflict || !strings.Contains(body, "the controller is paused") || !strings.Contains(body, `id="present-h"`) {
		t.Errorf("a refused Play = %d; want 409 with the reason on the whole page, Present included:\n%s", w.Code, body)
	}
	cls.ns = "lab-teacher"
	page = do(mux, "GET", "/instructor", nil, cookie).Body.String()
	if strings.Contains(page, "presenting elsewhere") || strings.Contains(page, `id="demo-elsewhere"`) || !strings.Contains(page, `href="/instructor/lab?projector=1"`) {
		t.Errorf("the page presenting its own lab speaks of another, or has no link to the projector")
	}
}
