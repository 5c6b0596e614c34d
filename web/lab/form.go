package lab

import (
	"fmt"
	"net/http"
)

// maxFormBytes limits a form's body: forms are tiny.
const maxFormBytes = 64 << 10

// form wraps an action with the body limit, form parsing, the session, and
// the answer: JSON for lab.js's fetch, otherwise a flash and a redirect.
func (h *Handler) form(act action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			h.answer(w, r, outcome{err: &FieldError{Field: "form", Message: fmt.Sprintf("cannot read the form: %v", err)}})
			return
		}
		ns, err := h.opts.Sessions.Namespace(r)
		if err != nil {
			h.answer(w, r, outcome{err: err})
			return
		}
		out := act(r.Context(), ns, r)
		if out.scenario == "" {
			out.scenario = knownScenario(r.PostForm.Get("scenario"))
		}
		h.answer(w, r, out)
	}
}
