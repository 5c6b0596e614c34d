package instructor

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/session"
)

// The help queue: learners raise a hand from any page (POST /lab/help,
// web/classroom's side of the session), the roster lists the raised hands
// longest waiting first, each with a Look link one click away, and the
// instructor marks one answered ("on my way", which the learner's page
// says) or clears it.

// Hand is one raised hand in the queue.
type Hand struct {
	Namespace, Who, Note string
	// Waited is how long ago it was raised, in words; Answered whether
	// the instructor said they were on their way.
	Waited   string
	Answered bool
	raised   time.Time
}

// handsOf is the queue of the learners' raised hands, longest waiting
// first.
func handsOf(learners []Learner, now time.Time) []Hand {
	var out []Hand
	for _, l := range learners {
		if l.Help == nil {
			continue
		}
		out = append(out, Hand{Namespace: l.Namespace, Who: l.Display(), Note: l.Help.Note, Waited: ago(now.Sub(l.Help.Raised)),
			Answered: !l.Help.Answered.IsZero(), raised: l.Help.Raised})
	}
	slices.SortStableFunc(out, func(a, b Hand) int { return a.raised.Compare(b.raised) })
	return out
}

func (h *Handler) registerHelp(mux *http.ServeMux) {
	if h.opts.Roster.Hands == nil {
		return
	}
	mux.HandleFunc("POST /instructor/help/{namespace}/{action}", h.guard(h.help))
}

// help answers or clears a learner's raised hand.
func (h *Handler) help(w http.ResponseWriter, r *http.Request) {
	ns, action := r.PathValue("namespace"), r.PathValue("action")
	hands := h.opts.Roster.Hands
	var err error
	switch action {
	case "answer":
		err = hands.AnswerHand(r.Context(), ns)
	case "clear":
		err = hands.ClearHand(r.Context(), ns)
	default:
		http.Error(w, fmt.Sprintf("action: %q is not what a raised hand takes: want answer or clear", httpx.Excerpt(action, 40)), http.StatusNotFound)
		return
	}
	switch {
	case errors.Is(err, session.ErrNoSession):
		http.Error(w, fmt.Sprintf("namespace: %q is no learner's session", httpx.Excerpt(ns, 63)), http.StatusNotFound)
		return
	case errors.Is(err, session.ErrNoHand):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	h.opts.Logger.Info("Answered a raised hand", "namespace", ns, "action", action)
	if httpx.WantsJSON(r) {
		httpx.JSON(w, http.StatusOK, map[string]string{"namespace": ns, "done": action})
		return
	}
	http.Redirect(w, r, "/instructor?done=hand-"+action+"#help-queue", http.StatusSeeOther)
}

func init() {
	messages["hand-answer"] = "Marked answered: the learner's page says you are on your way."
	messages["hand-clear"] = "Cleared the raised hand."
}

// EndedRow is an ended session kept, as the roster lists it.
type EndedRow struct {
	Namespace, Who, Reason string
	At                     time.Time
	Progress               int
}

func endedRow(e session.Ended, t Totals) EndedRow {
	l := Learner{Name: e.Name, Namespace: e.Namespace}
	return EndedRow{Namespace: e.Namespace, Who: l.Display(), Reason: e.Reason, At: e.At, Progress: percent(verifiedOf(e.Record, t), t)}
}

// ReasonText says why a session ended, as the roster writes it.
func (e EndedRow) ReasonText() string {
	switch e.Reason {
	case session.ReasonEnded:
		return "class ended"
	case session.ReasonEvicted:
		return "ended to make room"
	}
	return "expired (idle)"
}
