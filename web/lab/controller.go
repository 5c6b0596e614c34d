package lab

import (
	"context"
	"fmt"
	"net/http"
)

func (h *Handler) switchController(_ context.Context, _ string, r *http.Request) outcome {
	c := h.opts.Controller
	switch r.PathValue("action") {
	case "stop":
		if !c.Running() {
			return outcome{message: "The controller is already stopped."}
		}
		if err := c.Stop(); err != nil {
			return outcome{err: fmt.Errorf("stop the controller: %w", err)}
		}
		return outcome{message: "Stopped the controller. Changes now pile up with no one to act on them."}
	case "start":
		if c.Running() {
			return outcome{message: "The controller is already running."}
		}
		if err := c.Start(h.base); err != nil {
			return outcome{err: fmt.Errorf("start the controller: %w", err)}
		}
		return outcome{message: "Started the controller. Its caches sync, then it reconciles every Database: level-triggered, it needs no replay of missed events."}
	}
	return outcome{err: &FieldError{Field: "action", Message: fmt.Sprintf("%q is not a controller action: want start or stop", r.PathValue("action"))}}
}
