package instructor

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/oplab-dev/oplab/web/session"
)

// Presenter is the classroom's presenter switch (classroom.Classroom).
type Presenter interface {
	Present(namespace, presenterName string)
	StopPresenting()
	Presenter() (name string, ok bool)
}

// LabSessions gives the instructor's browser its own lab session: the
// namespace the learners follow is the one the instructor's lab page shows.
type LabSessions interface {
	Begin(w http.ResponseWriter, r *http.Request) (session.Session, error)
}

// Presenting is what the Present buttons need; a nil Classroom hides them.
type Presenting struct {
	Classroom Presenter
	Sessions  LabSessions
}

// PresentView is the Present section of the page.
type PresentView struct {
	Enabled    bool
	Presenting bool
	Name       string
}

// maxPresenterName bounds the name learners see on their banner.
const maxPresenterName = 60

func init() {
	messages["presenting"] = "Presenting: every learner's lab now follows your lab. Open your lab to present; Esc lets a learner break away."
	messages["stopped-presenting"] = "Stopped presenting: every learner is back in their own lab."
}

func (h *Handler) registerPresent(mux *http.ServeMux) {
	mux.HandleFunc("POST /instructor/present", h.present)
	mux.HandleFunc("POST /instructor/present/stop", h.stopPresenting)
}

func (h *Handler) presentView() PresentView {
	p := h.opts.Present
	if p.Classroom == nil || p.Sessions == nil {
		return PresentView{}
	}
	name, ok := p.Classroom.Presenter()
	return PresentView{Enabled: true, Presenting: ok, Name: name}
}

// allowed answers the request itself unless it carries the instructor's
// cookie (401 without, 403 with a wrong one).
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.Token == "" {
		http.Error(w, "this oplab was started without an instructor token", http.StatusForbidden)
		return false
	}
	switch h.check(r, "") {
	case noToken:
		http.Error(w, "instructor token required: open the instructor URL oplab printed at start", http.StatusUnauthorized)
		return false
	case wrongToken:
		http.Error(w, "wrong instructor token", http.StatusForbidden)
		return false
	}
	return true
}

// present makes the namespace of this browser's lab session the one every
// learner follows, starting that session if the instructor has none yet.
func (h *Handler) present(w http.ResponseWriter, r *http.Request) {
	if !h.allowed(w, r) {
		return
	}
	p := h.opts.Present
	if p.Classroom == nil || p.Sessions == nil {
		http.Error(w, "presenting is not available on this oplab", http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	name := r.PostFormValue("name")
	if utf8.RuneCountInString(name) > maxPresenterName {
		http.Error(w, fmt.Sprintf("presenter name: %d characters, at most %d", utf8.RuneCountInString(name), maxPresenterName), http.StatusUnprocessableEntity)
		return
	}
	sess, err := p.Sessions.Begin(w, r)
	if err != nil {
		http.Error(w, fmt.Sprintf("start a lab session for the presenter: %v", err), http.StatusServiceUnavailable)
		return
	}
	p.Classroom.Present(sess.Namespace, name)
	h.opts.Logger.Info("Started presenting", "namespace", sess.Namespace)
	http.Redirect(w, r, "/instructor?done=presenting", http.StatusSeeOther)
}

func (h *Handler) stopPresenting(w http.ResponseWriter, r *http.Request) {
	if !h.allowed(w, r) {
		return
	}
	if h.opts.Present.Classroom == nil {
		http.Error(w, "presenting is not available on this oplab", http.StatusNotFound)
		return
	}
	h.opts.Present.Classroom.StopPresenting()
	h.opts.Logger.Info("Stopped presenting")
	http.Redirect(w, r, "/instructor?done=stopped-presenting", http.StatusSeeOther)
}
