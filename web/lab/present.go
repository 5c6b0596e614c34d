package lab

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/oplab-dev/oplab/web/classroom"
)

// Classroom takes what the presenter's lab shows (classroom.Classroom).
type Classroom interface {
	Show(namespace string, v classroom.View) error
}

// maxViewBody bounds a presenter's view update; it is a few fields.
const maxViewBody = 4 << 10

// present takes the view the presenter's lab reports (the selected
// Database, the page, the timeline's pause, step and speed) and passes it
// to every follower. Only the presenter's own session may: 403 otherwise.
func (h *Handler) present(w http.ResponseWriter, r *http.Request) {
	if h.opts.Classroom == nil {
		http.Error(w, "presenting is not available on this oplab", http.StatusNotFound)
		return
	}
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, "only the presenter's lab may update what followers see: "+err.Error(), http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxViewBody)
	var v classroom.View
	if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "presenter view: larger than 4 KiB", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "presenter view: not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	switch err := h.opts.Classroom.Show(ns, v); {
	case errors.Is(err, classroom.ErrNotPresenter):
		http.Error(w, err.Error(), http.StatusForbidden)
	case err != nil:
		http.Error(w, "presenter view: "+err.Error(), http.StatusUnprocessableEntity)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
