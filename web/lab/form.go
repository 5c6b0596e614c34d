package lab

import (
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/oplab-dev/oplab/web/httpx"
)

// maxFormBytes limits a form's body: forms are tiny.
const maxFormBytes = 64 << 10

// formType is the one body the form routes read: what an HTML form and
// lab/forms.js send.
const formType = "application/x-www-form-urlencoded"

// form wraps an action with the body limit, form parsing, the session, and
// the answer: JSON for lab/forms.js's fetch, otherwise a flash and a redirect.
// A body the routes cannot read is refused at once, in words, with nothing
// kept for the session.
func (h *Handler) form(act action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "" {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != formType {
				h.refuse(w, r, http.StatusUnsupportedMediaType, fmt.Sprintf("form: this route reads %s (what an HTML form sends), not %q: send the fields as name=value pairs", formType, ct))
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				h.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("form: larger than the %d KiB a lab form may send", maxFormBytes>>10))
				return
			}
			h.answer(w, r, outcome{err: &FieldError{Field: "form", Message: fmt.Sprintf("cannot read the form: %v", err)}})
			return
		}
		ns, err := h.opts.Sessions.NamespaceOf(r)
		if err != nil {
			h.answer(w, r, outcome{err: err})
			return
		}
		ctx, cancel := withActionDeadline(r)
		defer cancel()
		out := act(ctx, ns, r)
		if out.scenario == "" {
			out.scenario = knownScenario(r.PostForm.Get("scenario"))
		}
		h.answer(w, r, out)
	}
}

// refuse answers a request the form routes cannot read: JSON for lab/forms.js,
// plain text otherwise (there is no form to show again).
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, code int, message string) {
	h.opts.Logger.V(1).Info("Refused lab request", "path", r.URL.Path, "status", code)
	if httpx.WantsJSON(r) {
		httpx.JSON(w, code, Result{Message: message, Field: "form", ControllerRunning: h.opts.Controller.Running()})
		return
	}
	http.Error(w, message, code)
}
