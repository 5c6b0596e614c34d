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
	Presenting() (namespace string, ok bool)
}

// LabSessions gives the instructor's browser its own lab session, with no
// join code asked (session.Manager.BeginInstructor): the namespace the
// learners follow is the one the instructor's lab page shows.
type LabSessions interface {
	BeginInstructor(w http.ResponseWriter, r *http.Request) (session.Session, error)
	NamespaceOf(r *http.Request) (string, error)
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
	// Namespace is the lab presented; Own is this browser's lab, "" when
	// it has none yet. Elsewhere is true while the lab presented is not
	// this browser's (Present pressed in another browser).
	Namespace, Own string
	Elsewhere      bool
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
	mux.HandleFunc("GET /instructor/lab", h.guard(h.openLab))
}

func (h *Handler) presentView(r *http.Request) PresentView {
	p := h.opts.Present
	if p.Classroom == nil || p.Sessions == nil {
		return PresentView{}
	}
	name, ok := p.Classroom.Presenter()
	v := PresentView{Enabled: true, Presenting: ok, Name: name}
	v.Own, _ = p.Sessions.NamespaceOf(r)
	if ns, presenting := p.Classroom.Presenting(); presenting {
		v.Namespace, v.Elsewhere = ns, ns != v.Own
	}
	return v
}

// openLab is the instructor's way into their own lab: it begins this
// browser's lab session without the class's join code, which is for
// learners, and goes there (in projector mode when asked).
func (h *Handler) openLab(w http.ResponseWriter, r *http.Request) {
	p := h.opts.Present
	if p.Sessions == nil {
		http.Redirect(w, r, "/lab", http.StatusSeeOther)
		return
	}
	if _, err := p.Sessions.BeginInstructor(w, r); err != nil {
		http.Error(w, fmt.Sprintf("start a lab session for the instructor: %v", err), http.StatusServiceUnavailable)
		return
	}
	to := "/lab"
	if r.URL.Query().Get("projector") == "1" {
		to = "/lab?projector=1"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// present makes the namespace of this browser's lab session the one every
// learner follows, starting that session if the instructor has none yet
// (with no join code asked: the token is the instructor's).
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
	sess, err := p.Sessions.BeginInstructor(w, r)
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
