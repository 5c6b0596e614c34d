package lab

import (
	"context"
	"fmt"
	"net/http"
)

// switchController is the learner's Stop and Start: it pauses and resumes
// the controller for the learner's namespace only. Requests for a paused
// namespace are held, not dropped, and on resume every Database in it is
// reconciled, so nothing needs replaying. Stopping the whole controller is
// the instructor's (see web/instructor).
func (h *Handler) switchController(_ context.Context, ns string, r *http.Request) outcome {
	c := h.opts.Controller
	switch r.PathValue("action") {
	case "stop":
		if c.NamespacePaused(ns) {
			return outcome{message: "The controller is already paused for your namespace."}
		}
		c.PauseNamespace(ns)
		return outcome{message: "Paused the controller for your namespace. Changes here now pile up with no one to act on them; other learners' Databases are still reconciled."}
	case "start":
		if !c.NamespacePaused(ns) {
			return outcome{message: "The controller is already reconciling your namespace."}
		}
		c.ResumeNamespace(ns)
		if !c.Running() {
			return outcome{message: "Resumed your namespace, but the instructor has stopped the controller for everyone: it reconciles again when they start it."}
		}
		return outcome{message: "Resumed the controller for your namespace. It reconciles every Database here: level-triggered, it needs no replay of missed events."}
	}
	return outcome{err: &FieldError{Field: "action", Message: fmt.Sprintf("%q is not a controller action: want start or stop", r.PathValue("action"))}}
}

// reconciling reports whether the controller acts in ns now: it runs and
// ns is not paused.
func (h *Handler) reconciling(ns string) bool {
	return h.opts.Controller.Running() && !h.opts.Controller.NamespacePaused(ns)
}
