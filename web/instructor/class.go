package instructor

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/oplab-dev/oplab/web/classroom"
	"github.com/oplab-dev/oplab/web/httpx"
)

// The class controls that speak: stopping the controller for everyone asks
// for a confirmation and tells every learner who did it and why; a
// broadcast message reaches every page; ending the class ends every
// learner's session, keeping each one's export, and offers the class's
// results.

// Class is what the controls tell every page (classroom.Classroom).
type Class interface {
	Broadcast(text, from string)
	Halted(by, reason string)
	Resumed()
	Ended()
	Begun()
}

// ConfirmStop is the value the stop form's confirmation box sends: a
// request without it stops nothing.
const ConfirmStop = "everyone"

// ConfirmEnd is the end-class form's confirmation.
const ConfirmEnd = "end"

// stopForm reads a stop's confirmation, who stops and why.
func stopForm(r *http.Request) (by, reason string, err error) {
	if r.PostFormValue("confirm") != ConfirmStop {
		return "", "", fmt.Errorf("confirm: tick the box that says every learner's controller stops (nothing was stopped)")
	}
	reason, err = classroom.CleanMessage("reason", r.PostFormValue("reason"))
	if err != nil {
		return "", "", err
	}
	return classroom.CleanName(r.PostFormValue("by")), reason, nil
}

func (h *Handler) registerClass(mux *http.ServeMux) {
	if h.opts.Class == nil {
		return
	}
	mux.HandleFunc("POST /instructor/message", h.guard(h.message))
	mux.HandleFunc("POST /instructor/class/end", h.guard(h.endClass))
	mux.HandleFunc("POST /instructor/class/begin", h.guard(h.beginClass))
}

// message broadcasts the instructor's message to every page, or clears it.
func (h *Handler) message(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	text, err := classroom.CleanMessage("text", r.PostFormValue("text"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.PostFormValue("clear") != "" {
		text = ""
	} else if text == "" {
		http.Error(w, "text: write the message every learner sees (or press Clear)", http.StatusBadRequest)
		return
	}
	h.opts.Class.Broadcast(text, r.PostFormValue("from"))
	h.opts.Logger.Info("Broadcast a message to the class", "cleared", text == "")
	done := "message-sent"
	if text == "" {
		done = "message-cleared"
	}
	http.Redirect(w, r, "/instructor?done="+done, http.StatusSeeOther)
}

// ending is the end of the class under way, if any: one at a time.
type ending struct {
	mu      sync.Mutex
	running bool
	ended   int
	err     error
	at      time.Time
}

// endClass ends every learner's session, in the background (300 sessions
// take a while), then tells every page, which goes to the learner's ended
// lab with its export.
func (h *Handler) endClass(w http.ResponseWriter, r *http.Request) {
	ro := h.opts.Roster
	if ro.Ended == nil {
		http.Error(w, "ending the class is not available in this oplab", http.StatusNotImplemented)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if r.PostFormValue("confirm") != ConfirmEnd {
		http.Error(w, "confirm: tick the box that says every learner's lab ends (nothing was ended)", http.StatusBadRequest)
		return
	}
	h.end.mu.Lock()
	if h.end.running {
		h.end.mu.Unlock()
		http.Error(w, "the class is already ending: its results are ready once every lab has ended", http.StatusConflict)
		return
	}
	h.end.running, h.end.err = true, nil
	h.end.mu.Unlock()
	h.opts.Class.Broadcast("The class is ending: your lab ends in a moment, and your results and your lab's export are kept.", "the instructor")
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(h.base), 10*time.Minute)
		defer cancel()
		n, err := ro.Ended.EndClass(ctx)
		h.opts.Class.Ended()
		h.end.mu.Lock()
		h.end.running, h.end.ended, h.end.err, h.end.at = false, n, err, time.Now()
		h.end.mu.Unlock()
		if err != nil {
			h.opts.Logger.Error(err, "Ended the class with errors", "sessions", n)
			return
		}
		h.opts.Logger.Info("Ended the class", "sessions", n)
	}()
	http.Redirect(w, r, "/instructor?done=class-ending#class", http.StatusSeeOther)
}

// beginClass lets pages opened from now on stay: after an end, the next
// class starts afresh.
func (h *Handler) beginClass(w http.ResponseWriter, r *http.Request) {
	h.opts.Class.Begun()
	http.Redirect(w, r, "/instructor?done=class-begun#class", http.StatusSeeOther)
}

// EndView is the end-class panel's state.
type EndView struct {
	Can, Running bool
	Ended        int
	Error        string
	At           string
}

func (h *Handler) endView() EndView {
	v := EndView{Can: h.opts.Class != nil && h.opts.Roster.Ended != nil}
	h.end.mu.Lock()
	defer h.end.mu.Unlock()
	v.Running, v.Ended = h.end.running, h.end.ended
	if h.end.err != nil {
		v.Error = h.end.err.Error()
	}
	if !h.end.at.IsZero() {
		v.At = h.end.at.UTC().Format("15:04 UTC")
	}
	return v
}

func init() {
	messages["message-sent"] = "Sent: every page shows your message until you clear it."
	messages["message-cleared"] = "Cleared the message."
	messages["class-ending"] = "Ending the class: every learner's lab ends, each one's export is kept, and their pages say so. The results below are ready once the panel says it ended."
	messages["class-begun"] = "A new class: pages opened from now on stay where they are."
}

// bad answers a refused form: the page with the refusal for a browser, the
// words for a script.
func (h *Handler) bad(w http.ResponseWriter, r *http.Request, code int, err error) {
	if httpx.WantsJSON(r) {
		httpx.JSON(w, code, map[string]string{"error": err.Error()})
		return
	}
	p := h.fullPage(r)
	p.Refusal = err.Error()
	h.render(w, r, code, PageView(p))
}
