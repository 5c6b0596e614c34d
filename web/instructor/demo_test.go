package instructor

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/web/demo"
)

// fakeDemos records the controls; the real player has tests of its own
// (web/demo) and is played on the real cluster by web/e2e/demo_test.go.
type fakeDemos struct {
	calls  []string
	status demo.Status
	refuse error
}

func (d *fakeDemos) Scripts() []demo.Script {
	scripts, err := demo.Load("")
	if err != nil {
		panic(err) // the embedded demos' own tests (web/demo) say what is wrong
	}
	return scripts
}
func (d *fakeDemos) Play(ns, id string, auto bool) error {
	call := "play " + ns + " " + id
	if auto {
		call += " auto"
	}
	d.calls = append(d.calls, call)
	return d.refuse
}
func (d *fakeDemos) Next() error         { d.calls = append(d.calls, "next"); return d.refuse }
func (d *fakeDemos) Pause() error        { d.calls = append(d.calls, "pause"); return d.refuse }
func (d *fakeDemos) Step() error         { d.calls = append(d.calls, "step"); return d.refuse }
func (d *fakeDemos) Stop() error         { d.calls = append(d.calls, "stop"); return d.refuse }
func (d *fakeDemos) Status() demo.Status { return d.status }

type fakeLabs map[string]string // lab cookie value → namespace

func (l fakeLabs) NamespaceOf(r *http.Request) (string, error) {
	c, err := r.Cookie("oplab_session")
	if err != nil || l[c.Value] == "" {
		return "", errors.New("no session")
	}
	return l[c.Value], nil
}

func TestDemoControlsNeedTheInstructor(t *testing.T) {
	d := &fakeDemos{status: demo.Status{State: demo.Idle}}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Demo: Demo{Player: d, Labs: fakeLabs{"lab-cookie": "lab-abcde"}}}).Register(mux)
	cookie := do(mux, "GET", "/instructor?token="+token, nil, nil).Result().Cookies()[0]
	play := url.Values{"demo": {"reconcile-loop"}}
	for _, c := range []struct {
		name   string
		cookie *http.Cookie
		want   int
	}{{"no cookie", nil, http.StatusUnauthorized}, {"forged cookie", &http.Cookie{Name: CookieName, Value: "forged"}, http.StatusForbidden}} {
		for _, path := range []string{"/instructor/demo/play", "/instructor/demo/pause", "/instructor/demo/step", "/instructor/demo/stop"} {
			if w := do(mux, "POST", path, play, c.cookie); w.Code != c.want {
				t.Errorf("%s: POST %s: %d, want %d", c.name, path, w.Code, c.want)
			}
		}
		if w := do(mux, "GET", "/instructor/demo", nil, c.cookie); w.Code != c.want {
			t.Errorf("%s: GET /instructor/demo: %d, want %d", c.name, w.Code, c.want)
		}
	}
	if len(d.calls) != 0 {
		t.Fatalf("the player was driven without the instructor cookie: %v", d.calls)
	}

	// The page offers both demos; without a lab session it says to open the lab.
	w := do(mux, "GET", "/instructor", nil, cookie)
	for _, want := range []string{`id="demo"`, `value="reconcile-loop"`, `value="died-mid-deletion"`, "Open your lab"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("instructor page lacks %q", want)
		}
	}
	if w := do(mux, "POST", "/instructor/demo/play", play, cookie); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "no lab session in this browser") {
		t.Errorf("play without a lab session: %d; want 409 saying to open the lab", w.Code)
	}

	// With the instructor's lab cookie too, Play plays in that namespace.
	both := func(method, path string, form url.Values) *http.Request {
		r := reqWith(method, path, form)
		r.AddCookie(cookie)
		r.AddCookie(&http.Cookie{Name: "oplab_session", Value: "lab-cookie"})
		return r
	}
	rec := serve(mux, both("POST", "/instructor/demo/play", play))
	if rec.Code != http.StatusSeeOther || fmt.Sprint(d.calls) != "[play lab-abcde reconcile-loop]" {
		t.Fatalf("play: %d, calls %v; want 303 and Play(lab-abcde, reconcile-loop)", rec.Code, d.calls)
	}
	// The checkbox at Play asks for a run that advances by itself.
	if rec := serve(mux, both("POST", "/instructor/demo/play", url.Values{"demo": {"died-mid-deletion"}, "auto": {"on"}})); rec.Code != http.StatusSeeOther || d.calls[len(d.calls)-1] != "play lab-abcde died-mid-deletion auto" {
		t.Errorf("play with auto: %d, calls %v", rec.Code, d.calls)
	}
	for _, a := range []string{"pause", "step", "next", "stop"} {
		if rec := serve(mux, both("POST", "/instructor/demo/"+a, nil)); rec.Code != http.StatusSeeOther || d.calls[len(d.calls)-1] != a {
			t.Errorf("%s: %d, calls %v", a, rec.Code, d.calls)
		}
	}
	if rec := serve(mux, both("POST", "/instructor/demo/rewind", nil)); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `rewind&#34;: want play, pause, step, next or stop`) {
		t.Errorf("unknown control: %d", rec.Code)
	}

	// A refusal shows the player's reason in the page, with 409.
	d.refuse = fmt.Errorf("%w: demo %q is already playing (step 2 of 6)", demo.ErrRefused, "reconcile-loop")
	d.status = demo.Status{Demo: "reconcile-loop", Title: "The reconcile loop, start to finish", State: demo.Playing, Step: 2, Of: 6, StepTitle: "Watch", Text: "The reconcile fetches shop", Busy: true, Waiting: "waiting for Ready", Auto: true}
	rec = serve(mux, both("POST", "/instructor/demo/play", play))
	body := rec.Body.String()
	if rec.Code != http.StatusConflict || !strings.Contains(body, "is already playing (step 2 of 6)") {
		t.Errorf("second play: %d; want 409 with the reason", rec.Code)
	}
	for _, want := range []string{"step 2 of 6", "The reconcile fetches shop", "Now waiting for Ready", "/instructor/demo/pause", `data-active="true"`, "lab-abcde"} {
		if !strings.Contains(body, want) {
			t.Errorf("panel of a playing demo lacks %q", want)
		}
	}
	// The lab page's keyboard asks for JSON: the refusal's reason, and the
	// status, come back so.
	req := both("POST", "/instructor/demo/next", nil)
	req.Header.Set("Accept", "application/json")
	if rec := serve(mux, req); rec.Code != http.StatusConflict || rec.Header().Get("Content-Type") != "application/json" ||
		!strings.Contains(rec.Body.String(), `"error":"refused: demo \"reconcile-loop\" is already playing (step 2 of 6)"`) ||
		!strings.Contains(rec.Body.String(), `"step":2`) {
		t.Errorf("next asked for JSON: %d %s %s; want 409 JSON with the reason and the status", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	// A run that waits for the presenter says so, and what Next will do.
	d.status = demo.Status{Demo: "reconcile-loop", Title: "The reconcile loop, start to finish", State: demo.Playing, Step: 3, Of: 6, StepTitle: "Scale to 3", Text: "Now we change the spec", AwaitsNext: true}
	body = serve(mux, both("GET", "/instructor/demo", nil)).Body.String()
	if !strings.Contains(body, "Step 3 of 6 done — press Next (or → or space on your lab page) to continue.") || !strings.Contains(body, `action="/instructor/demo/next"`) || strings.Contains(body, "/instructor/demo/pause") {
		t.Errorf("panel of a demo awaiting Next: %s", body)
	}
	d.status.State, d.status.AwaitsNext, d.status.Auto = demo.Paused, false, true
	if body := serve(mux, both("GET", "/instructor/demo", nil)).Body.String(); !strings.Contains(body, "Paused after step 3 of 6: Play resumes, Next does one step and stays paused.") || !strings.Contains(body, `action="/instructor/demo/play"`) {
		t.Errorf("panel of a paused demo: %s", body)
	}
	if rec := serve(mux, both("GET", "/instructor/demo", nil)); rec.Code != 200 || !strings.HasPrefix(strings.TrimSpace(rec.Body.String()), `<section id="demo"`) {
		t.Errorf("GET /instructor/demo: %d %.80q; want the panel alone", rec.Code, rec.Body.String())
	}
}

func TestNoDemoPlayerNoPanel(t *testing.T) {
	mux, _ := newMux(t, token)
	cookie := do(mux, "GET", "/instructor?token="+token, nil, nil).Result().Cookies()[0]
	if w := do(mux, "GET", "/instructor", nil, cookie); strings.Contains(w.Body.String(), `id="demo"`) {
		t.Error("the demo panel shows without a demo player")
	}
	if w := do(mux, "POST", "/instructor/demo/play", nil, cookie); w.Code != http.StatusNotFound && w.Code != http.StatusMethodNotAllowed {
		t.Errorf("demo route without a player: %d, want 404", w.Code)
	}
}
