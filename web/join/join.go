// Package join is the join form: the page a visitor without a session
// sees when the class has a join code (WriteForm, which the lab page
// answers with when session.Manager.Begin refuses), and POST /lab/join,
// which takes the code and an optional display name and starts the
// session. Checking the code, and throttling wrong ones, is the session
// table's (web/session): a session never starts without it.
package join

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// Sessions is what the join form needs of the session table
// (session.Manager): to start a session for a learner who gave a name.
type Sessions interface {
	BeginAs(w http.ResponseWriter, r *http.Request, name string) (session.Session, error)
}

// Handler answers the join form.
type Handler struct {
	Sessions Sessions
	// KeepFor is how long an ended session is kept, as its page says;
	// zero: session.DefaultKeepFor.
	KeepFor time.Duration
	// Logger hears of a form that fails to render.
	Logger logr.Logger
}

// Register mounts POST /lab/join.
func (h Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /lab/join", h.join)
}

// join answers the join form: it checks the name and the code, starts the
// session and sends the learner on to the lab page they asked for.
func (h Handler) join(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		write(w, r, h.Logger, http.StatusBadRequest, Form{Error: "the join form could not be read: " + err.Error()})
		return
	}
	next := labPath(r.PostFormValue("next"))
	raw := r.PostFormValue("name")
	name, err := progress.ValidateName(raw)
	if err == nil && name == "" {
		err = errors.New("name: give the name your instructor will see beside your work")
	}
	code := strings.TrimSpace(r.PostFormValue(session.JoinField))
	if err != nil {
		write(w, r, h.Logger, http.StatusBadRequest, Form{Error: err.Error(), Field: "name", Name: progress.NameAsTyped(raw), Next: next, Code: code, HasCode: code != ""})
		return
	}
	if _, err := h.Sessions.BeginAs(w, r, name); err != nil {
		var je *session.JoinError
		var te *session.ThrottledError
		switch {
		case errors.As(err, &te):
			httpx.RetryAfter(w, te.Wait)
			write(w, r, h.Logger, http.StatusTooManyRequests, Form{Error: te.Error(), Field: session.JoinField, Name: name, Next: next})
			return
		case errors.As(err, &je):
			write(w, r, h.Logger, http.StatusForbidden, Form{Error: je.Error(), Field: session.JoinField, Name: name, Next: next})
			return
		}
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// labPath is next when it is a page that needs a lab session (the lab,
// the code page, a challenge), else /lab: the join form's hidden field
// must not send anyone elsewhere.
func labPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !needsSession(u.Path) {
		return "/lab"
	}
	q := u.Query()
	q.Del(session.JoinField)
	if len(q) == 0 {
		return u.Path
	}
	return u.Path + "?" + q.Encode()
}

// needsSession reports whether path is a page that begins a lab session.
func needsSession(path string) bool {
	if id, ok := strings.CutPrefix(path, "/challenges/"); ok {
		return lessons.ValidSlug(id)
	}
	return path == "/lab" || path == "/code"
}

// WriteForm answers a request session.Manager.Begin refused with err (a
// *session.JoinError): 403 and the join form, which posts back to the page
// asked for; 429 with Retry-After for a *session.ThrottledError; for a
// *session.EndedError, 410 and the page that says the learner's lab
// ended, with its export. log hears of a form that fails to render.
func WriteForm(w http.ResponseWriter, r *http.Request, log logr.Logger, err error) {
	var ee *session.EndedError
	if errors.As(err, &ee) {
		writeEnded(w, r, Handler{Logger: log}, ee.Ended)
		return
	}
	j := Form{Next: labPath(r.URL.RequestURI())}
	var je *session.JoinError
	var te *session.ThrottledError
	switch {
	case errors.As(err, &je) && je.AskName:
		// A join link (/lab?join=CODE, the QR code) with the right code:
		// the learner is asked their name before the lab is made.
		j.Code, j.HasCode = je.Code, true
		write(w, r, log, http.StatusOK, j)
		return
	case errors.As(err, &te):
		httpx.RetryAfter(w, te.Wait)
		j.Error, j.Field = te.Error(), session.JoinField
		write(w, r, log, http.StatusTooManyRequests, j)
		return
	case errors.As(err, &je) && je.Given:
		j.Error, j.Field = je.Error(), session.JoinField
	}
	write(w, r, log, http.StatusForbidden, j)
}

// Form is the view model of the join form.
type Form struct {
	// Error says what was wrong; Field names the input it is about.
	Error, Field string
	// Name is the display name as typed, shown again after an error.
	Name string
	// Next is the lab page to go on to.
	Next string
	// Code is the join code the link carried, when it did (HasCode): the
	// form then asks only the name.
	Code    string
	HasCode bool
}

func write(w http.ResponseWriter, r *http.Request, log logr.Logger, code int, j Form) {
	// The form carries what the visitor typed; no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	httpx.Render(w, r, log, code, Page(j))
}
