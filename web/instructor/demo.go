package instructor

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/httpx"
)

// Demos is the scripted-demo player (web/demo.Player).
type Demos interface {
	Scripts() []demo.Script
	Play(ns, id string, auto bool) error
	Pause() error
	Step() error
	Next() error
	Stop() error
	Status() demo.Status
}

// Labs gives the namespace of the browser's own lab session: a demo plays
// in the instructor's lab, where their timeline shows it.
type Labs interface {
	NamespaceOf(r *http.Request) (string, error)
}

// Demo is what the scripted-demo controls need; zero hides them.
type Demo struct {
	Player Demos
	Labs   Labs
}

// DemoView is the view model of the demo panel.
type DemoView struct {
	// Enabled is false when oplab runs no demo player: the panel is hidden.
	Enabled bool
	// Namespace is the instructor's lab namespace, "" when this browser has
	// no lab session yet; Presented is the lab the learners follow, "" when
	// nobody presents.
	Namespace, Presented string
	Choices              []DemoChoice
	Status               demo.Status
	// Error says why the last control was refused.
	Error string
}

// DemoChoice is one demo in the picker.
type DemoChoice struct {
	ID, Title, Summary string
	Steps              int
	Selected           bool
	// Auto is set when the demo's file says it advances by itself.
	Auto bool
}

// Active reports whether a demo is under way (playing or paused).
func (v DemoView) Active() bool { return v.Status.State.Active() }

// Awaits says what a run that waits for the presenter waits for, or ""
// when it waits for nothing: "Step 3 of 6 done — press Next or → to
// continue."
func Awaits(s demo.Status) string {
	if !s.AwaitsNext || s.Step == 0 {
		return ""
	}
	then := "continue"
	if s.Step == s.Of {
		then = "end the demo"
	}
	return fmt.Sprintf("Step %d of %d done — press Next (or → or space on your lab page) to %s.", s.Step, s.Of, then)
}

// demoReply is the JSON answer to a control asked for by a script (the
// lab page's keyboard): the run's status, or why the control was refused.
type demoReply struct {
	Status demo.Status `json:"status"`
	Error  string      `json:"error,omitempty"`
}

// registerDemo mounts the demo controls; without a player there are none.
func (h *Handler) registerDemo(mux *http.ServeMux) {
	if h.opts.Demo.Player == nil {
		return
	}
	mux.HandleFunc("GET /instructor/demo", h.demoPanel)
	mux.HandleFunc("POST /instructor/demo/{action}", h.demoControl)
}

// demoView builds the panel's view model for the request's browser.
func (h *Handler) demoView(r *http.Request, refusal string) DemoView {
	d := h.opts.Demo
	if d.Player == nil {
		return DemoView{}
	}
	v := DemoView{Enabled: true, Status: d.Player.Status(), Error: refusal}
	if d.Labs != nil {
		v.Namespace, _ = d.Labs.NamespaceOf(r)
	}
	if c := h.opts.Present.Classroom; c != nil {
		v.Presented, _ = c.Presenting()
	}
	want := v.Status.Demo
	if f := r.PostFormValue("demo"); f != "" {
		want = f
	}
	for i, s := range d.Player.Scripts() {
		v.Choices = append(v.Choices, DemoChoice{
			ID: s.ID, Title: s.Title, Summary: s.Summary, Steps: len(s.Steps),
			Selected: s.ID == want || (want == "" && i == 0), Auto: s.Advance == demo.AdvanceAuto,
		})
	}
	return v
}

// demoPanel renders the panel alone: the page's script polls it while a
// demo is under way.
func (h *Handler) demoPanel(w http.ResponseWriter, r *http.Request) {
	if !h.allowed(w, r) {
		return
	}
	h.render(w, r, http.StatusOK, DemoPanel(h.demoView(r, "")))
}

// demoControl is Play, Pause, Step, Next and Stop. A refusal renders the
// page with the reason in the panel; a script asking for JSON (the lab
// page's keyboard) gets the status or the reason as JSON instead.
func (h *Handler) demoControl(w http.ResponseWriter, r *http.Request) {
	if !h.allowed(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	run := h.opts.Demo.Player
	var err error
	switch action := r.PathValue("action"); action {
	case "play":
		err = h.play(r)
	case "pause":
		err = run.Pause()
	case "step":
		err = run.Step()
	case "next":
		err = run.Next()
	case "stop":
		err = run.Stop()
	default:
		err = fmt.Errorf("%w %q: want play, pause, step, next or stop", errUnknownControl, action)
	}
	if err != nil {
		code := http.StatusConflict
		if errors.Is(err, demo.ErrUnknownDemo) || errors.Is(err, errUnknownControl) {
			code = http.StatusUnprocessableEntity
		}
		h.opts.Logger.Info("Refused a demo control", "action", r.PathValue("action"), "reason", err.Error())
		if httpx.WantsJSON(r) {
			httpx.JSON(w, code, demoReply{Status: run.Status(), Error: err.Error()})
			return
		}
		p := h.fullPage(r)
		p.Demo = h.demoView(r, err.Error())
		h.render(w, r, code, PageView(p))
		return
	}
	if httpx.WantsJSON(r) {
		httpx.JSON(w, http.StatusOK, demoReply{Status: run.Status()})
		return
	}
	http.Redirect(w, r, "/instructor#demo", http.StatusSeeOther)
}

var (
	errUnknownControl = errors.New("unknown demo control")
	errNoLab          = errors.New("no lab session in this browser: open your lab (the link above) once in this browser, then play the demo; it runs in your lab's namespace, on your timeline")
)

// play starts the chosen demo in the instructor's own lab namespace.
func (h *Handler) play(r *http.Request) error {
	id := r.PostFormValue("demo")
	if id == "" {
		return fmt.Errorf("%w \"\": choose a demo to play", demo.ErrUnknownDemo)
	}
	if h.opts.Demo.Labs == nil {
		return errNoLab
	}
	ns, err := h.opts.Demo.Labs.NamespaceOf(r)
	if err != nil {
		return errNoLab
	}
	return h.opts.Demo.Player.Play(ns, id, r.PostFormValue("auto") != "")
}

// demoPill is the pill class of a run's state.
func demoPill(s demo.State) string {
	switch s {
	case demo.Playing:
		return "running"
	case demo.Paused:
		return "warn"
	case demo.Failed:
		return "bad"
	case demo.Finished:
		return "ok"
	}
	return "unknown"
}
