package instructor

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/oplab-dev/oplab/web/session"
)

// fakeClass records what the controls tell every page.
type fakeClass struct {
	mu   sync.Mutex
	said []string
}

func (f *fakeClass) add(s string)                { f.mu.Lock(); f.said = append(f.said, s); f.mu.Unlock() }
func (f *fakeClass) Broadcast(text, from string) { f.add("message " + from + ": " + text) }
func (f *fakeClass) Halted(by, reason string)    { f.add("halt " + by + ": " + reason) }
func (f *fakeClass) Resumed()                    { f.add("resumed") }
func (f *fakeClass) Ended()                      { f.add("ended") }
func (f *fakeClass) Begun()                      { f.add("begun") }
func (f *fakeClass) all() string                 { f.mu.Lock(); defer f.mu.Unlock(); return strings.Join(f.said, "|") }

func classMux(t *testing.T, cls *fakeClass, sw *fakeSwitch) (*http.ServeMux, *session.Manager) {
	t.Helper()
	m, err := session.New(t.Context(), session.Options{Namespaces: inMemory{}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: sw, Class: cls, Join: Join{Code: "blue otter"},
		Roster: Roster{Learners: m, Hands: m, Ended: m}}).Register(mux)
	return mux, m
}

// Stopping the controller for everyone tells every page who stopped it
// and why; starting it takes that away. A reason that is no line of text
// is refused, naming the field, and nothing stops.
func TestStopAllSaysWhoAndWhy(t *testing.T) {
	cls, sw := &fakeClass{}, &fakeSwitch{running: true}
	mux, _ := classMux(t, cls, sw)
	c := instructorCookie()
	if w := do(mux, "POST", "/instructor/controller/stop", url.Values{"confirm": {ConfirmStop}, "reason": {"bad\x07"}}, c); w.Code != http.StatusBadRequest || !sw.running || !strings.Contains(w.Body.String(), "reason: holds the control character") {
		t.Fatalf("stop with a bad reason = %d running=%v %q", w.Code, sw.running, w.Body.String())
	}
	if w := do(mux, "POST", "/instructor/controller/stop", url.Values{"confirm": {ConfirmStop}, "by": {"Ada"}, "reason": {"Watch the queue fill"}}, c); w.Code != http.StatusSeeOther || sw.running {
		t.Fatalf("stop = %d running=%v", w.Code, sw.running)
	}
	if w := do(mux, "POST", "/instructor/controller/start", nil, c); w.Code != http.StatusSeeOther || !sw.running {
		t.Fatalf("start = %d", w.Code)
	}
	if got, want := cls.all(), "halt Ada: Watch the queue fill|resumed"; got != want {
		t.Errorf("pages were told %q, want %q", got, want)
	}
}

func TestBroadcastAMessage(t *testing.T) {
	cls := &fakeClass{}
	mux, _ := classMux(t, cls, &fakeSwitch{running: true})
	c := instructorCookie()
	if w := do(mux, "POST", "/instructor/message", url.Values{"text": {"  "}}, c); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "text:") {
		t.Errorf("an empty message = %d %q; want 400 naming text", w.Code, w.Body)
	}
	if w := do(mux, "POST", "/instructor/message", url.Values{"text": {strings.Repeat("x", 281)}}, c); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "281 characters, at most 280") {
		t.Errorf("a long message = %d %q", w.Code, w.Body)
	}
	do(mux, "POST", "/instructor/message", url.Values{"text": {"Open lesson 3"}, "from": {"Ada"}}, c)
	do(mux, "POST", "/instructor/message", url.Values{"clear": {"1"}}, c)
	if w := do(mux, "POST", "/instructor/message", url.Values{"text": {"x"}}, nil); w.Code != http.StatusUnauthorized {
		t.Errorf("a message without the instructor cookie = %d, want 401", w.Code)
	}
	if got, want := cls.all(), "message Ada: Open lesson 3|message : "; got != want {
		t.Errorf("pages were told %q, want %q", got, want)
	}
}

// The help queue: a learner raises a hand with a note, the roster lists
// it with Look one click away, the instructor marks it answered (the
// learner's standing says so) and clears it. A learner's cookie reaches
// none of the instructor's routes.
func TestHelpQueue(t *testing.T) {
	mux, m := classMux(t, &fakeClass{}, &fakeSwitch{running: true})
	c := instructorCookie()
	lw := httptest.NewRecorder()
	s, err := m.BeginAs(lw, httptest.NewRequest("GET", "/lab", nil), "Ana")
	if err != nil {
		t.Fatal(err)
	}
	learner := withCookies(httptest.NewRequest("GET", "/lab", nil), lw.Result().Cookies())
	if _, err := m.RaiseHand(learner, "my Database never turns Ready"); err != nil {
		t.Fatal(err)
	}
	body := do(mux, "GET", "/instructor/roster", nil, c).Body.String()
	for _, want := range []string{`id="hand-` + s.Namespace + `"`, "my Database never turns Ready", "/instructor/help/" + s.Namespace + "/answer", "hand up"} {
		if !strings.Contains(body, want) {
			t.Errorf("the roster lacks %q", want)
		}
	}
	// As an attacker: the learner's own cookie, on the instructor's route.
	r := reqWith("POST", "/instructor/help/"+s.Namespace+"/clear", nil)
	for _, k := range lw.Result().Cookies() {
		r.AddCookie(k)
	}
	if w := serve(mux, r); w.Code != http.StatusUnauthorized {
		t.Errorf("a learner clearing their own hand on the instructor's route = %d, want 401", w.Code)
	}
	if w := do(mux, "POST", "/instructor/help/"+s.Namespace+"/answer", nil, c); w.Code != http.StatusSeeOther {
		t.Fatalf("answer = %d %s", w.Code, w.Body)
	}
	if st, _ := m.Peek(learner); st.Help == nil || st.Help.Answered.IsZero() {
		t.Errorf("after Answer the learner's hand reads %+v; want answered", st.Help)
	}
	if w := do(mux, "POST", "/instructor/help/"+s.Namespace+"/clear", nil, c); w.Code != http.StatusSeeOther {
		t.Fatalf("clear = %d", w.Code)
	}
	if w := do(mux, "POST", "/instructor/help/"+s.Namespace+"/clear", nil, c); w.Code != http.StatusConflict {
		t.Errorf("clearing a hand already down = %d, want 409", w.Code)
	}
	if w := do(mux, "POST", "/instructor/help/lab-nobody/answer", nil, c); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "namespace") {
		t.Errorf("answering no one's hand = %d %q, want 404 naming the namespace", w.Code, w.Body)
	}
}

// The join panel gives the full URL with the code, and its QR code; the
// projector screen shows both. A URL only this machine reaches is said.
func TestJoinPanelQRAndProjectorScreen(t *testing.T) {
	mux, _ := classMux(t, &fakeClass{}, &fakeSwitch{running: true})
	c := instructorCookie()
	r := reqWith("GET", "/instructor", nil)
	r.Host = "192.0.2.10:8080"
	r.AddCookie(c)
	body := serve(mux, r).Body.String()
	if want := "http://192.0.2.10:8080/lab?join=blue+otter"; !strings.Contains(body, want) || strings.Contains(body, `id="join-local"`) {
		t.Errorf("the instructor page lacks the full join URL %s, or warns it is local", want)
	}
	r = reqWith("GET", "/instructor/join", nil)
	r.Host = "localhost:8080"
	r.AddCookie(c)
	body = serve(mux, r).Body.String()
	if !strings.Contains(body, "http://localhost:8080/lab?join=blue+otter") || !strings.Contains(body, "reaches this machine only") || !strings.Contains(body, "/instructor/join/qr.svg") {
		t.Errorf("the projector screen lacks the URL, the QR code or the local warning")
	}
	w := do(mux, "GET", "/instructor/join/qr.svg", nil, c)
	svg := w.Body.String()
	m := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindStringSubmatch(svg)
	if w.Header().Get("Content-Type") != "image/svg+xml" || m == nil {
		t.Fatalf("qr.svg = %q %.80q", w.Header().Get("Content-Type"), svg)
	}
	// A QR code is 17+4v modules of version v, plus the quiet zone of 4
	// on each side, and dark modules in a path.
	n, _ := strconv.Atoi(m[1])
	if (n-8-17)%4 != 0 || n < 29 || strings.Count(svg, "h1v1h-1z") < n {
		t.Errorf("qr.svg is %d modules wide with %d dark: not a QR code", n, strings.Count(svg, "h1v1h-1z"))
	}
	other, _ := QRSVG("http://192.0.2.10:8080/lab?join=other")
	if string(other) == svg {
		t.Error("two join URLs drew the same QR code")
	}
	if w := do(mux, "GET", "/instructor/join/qr.svg", nil, nil); w.Code != http.StatusUnauthorized {
		t.Errorf("qr.svg without the instructor cookie = %d, want 401", w.Code)
	}
}
