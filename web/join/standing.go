package join

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/session"
)

// A learner's standing in the class, on every page (web/static/standing.js):
// when their lab ends unless they come back, with one click to stay; their
// name, asked until given; their raised hand. And the way back after the
// session ended: the page that says so, its export, and a new lab that
// keeps what they did.

// Standing is what these routes need of the session table
// (session.Manager).
type Standing interface {
	Peek(r *http.Request) (session.Standing, error)
	Lookup(r *http.Request) (session.Session, error)
	RaiseHand(r *http.Request, note string) (session.Help, error)
	LowerHand(r *http.Request) error
	EndedOf(r *http.Request) (session.Ended, bool)
	EndedExport(r *http.Request) (session.Ended, []byte, error)
	BeginAgain(w http.ResponseWriter, r *http.Request, name string) (session.Session, error)
}

// WarnBefore is how long before the idle expiry a page shows the banner
// with the time left and Stay: long enough to come back from a coffee.
const WarnBefore = 10 * time.Minute

// maxNote bounds a raised hand's note: one line on the instructor's queue.
const maxNote = 140

// standingJSON is GET /lab/session's answer.
type standingJSON struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Expires is the idle expiry in Unix ms; Warn how long before it the
	// banner shows (ms), Now the server's clock (ms), so a page whose
	// clock is off still counts right.
	Expires    int64         `json:"expires"`
	Warn       int64         `json:"warn"`
	Now        int64         `json:"now"`
	Instructor bool          `json:"instructor"`
	Hand       *session.Help `json:"hand"`
	// Ended is set instead when the caller's session ended and is kept.
	Ended *endedJSON `json:"ended,omitempty"`
	Error string     `json:"error,omitempty"`
}

type endedJSON struct {
	Reason string `json:"reason"`
	At     int64  `json:"at"`
	Page   string `json:"page"`
}

// RegisterStanding mounts the standing routes on mux:
//
//	GET  /lab/session        the caller's standing (JSON); never counts as a visit
//	POST /lab/stay           counts as a visit: the idle period starts again
//	POST /lab/help           raises the caller's hand (note), or changes its note
//	POST /lab/help/lower     takes it down
//	GET  /lab/ended          the page of an ended session: what ended, its export
//	GET  /lab/ended/export   the lab export taken as it ended
//	POST /lab/again          a new lab, with the name and record of the ended one
func (h Handler) RegisterStanding(mux *http.ServeMux, s Standing) {
	st := standing{s: s, h: h}
	mux.HandleFunc("GET /lab/session", st.get)
	mux.HandleFunc("POST /lab/stay", st.stay)
	mux.HandleFunc("POST /lab/help", st.raise)
	mux.HandleFunc("POST /lab/help/lower", st.lower)
	mux.HandleFunc("GET /lab/ended", st.endedPage)
	mux.HandleFunc("GET /lab/ended/export", st.export)
	mux.HandleFunc("POST /lab/again", st.again)
}

type standing struct {
	s Standing
	h Handler
}

// answer writes the caller's standing, or that it ended, or that there is
// none.
func (st standing) answer(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	s, err := st.s.Peek(r)
	if err != nil {
		if e, ok := st.s.EndedOf(r); ok {
			httpx.JSON(w, http.StatusGone, standingJSON{Ended: &endedJSON{Reason: e.Reason, At: e.At.UnixMilli(), Page: "/lab/ended"}})
			return
		}
		httpx.JSON(w, http.StatusForbidden, standingJSON{Error: "no lab session: open /lab first"})
		return
	}
	httpx.JSON(w, http.StatusOK, standingJSON{Namespace: s.Namespace, Name: s.Name, Expires: s.Expires.UnixMilli(),
		Warn: min(WarnBefore, s.Idle/4).Milliseconds(), Now: time.Now().UnixMilli(), Instructor: s.Instructor, Hand: s.Help})
}

func (st standing) get(w http.ResponseWriter, r *http.Request) { st.answer(w, r) }

// stay is the banner's one click: a request of the session, so its idle
// period starts again.
func (st standing) stay(w http.ResponseWriter, r *http.Request) {
	if _, err := st.s.Lookup(r); err != nil {
		st.answer(w, r)
		return
	}
	st.answer(w, r)
}

// raise raises the caller's hand with the note it carries (a form field or
// JSON {"note": "..."}).
func (st standing) raise(w http.ResponseWriter, r *http.Request) {
	note, err := readNote(w, r)
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, map[string]string{"field": "note", "error": err.Error()})
		return
	}
	if _, err := st.s.RaiseHand(r, note); err != nil {
		httpx.JSON(w, http.StatusForbidden, map[string]string{"field": "session", "error": err.Error()})
		return
	}
	if !httpx.WantsJSON(r) {
		http.Redirect(w, r, backTo(r), http.StatusSeeOther)
		return
	}
	st.answer(w, r)
}

func (st standing) lower(w http.ResponseWriter, r *http.Request) {
	if err := st.s.LowerHand(r); err != nil {
		httpx.JSON(w, http.StatusForbidden, map[string]string{"field": "session", "error": err.Error()})
		return
	}
	if !httpx.WantsJSON(r) {
		http.Redirect(w, r, backTo(r), http.StatusSeeOther)
		return
	}
	st.answer(w, r)
}

// backTo is the page a form came from, if it is oplab's own, else /lab.
func backTo(r *http.Request) string {
	if p := r.PostFormValue("back"); strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && !strings.ContainsAny(p, "\\\r\n") {
		return p
	}
	return "/lab"
}

// readNote reads and checks a raised hand's note.
func readNote(w http.ResponseWriter, r *http.Request) (string, error) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	var note string
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			Note string `json:"note"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("note: the body is not {\"note\": \"...\"}: %v", err)
		}
		note = body.Note
	} else {
		note = r.PostFormValue("note")
	}
	note = strings.TrimSpace(note)
	if !utf8.ValidString(note) {
		return "", errors.New("note: not valid UTF-8 text")
	}
	if n := utf8.RuneCountInString(note); n > maxNote {
		return "", fmt.Errorf("note: %d characters, at most %d", n, maxNote)
	}
	if strings.IndexFunc(note, func(c rune) bool { return unicode.IsControl(c) || unicode.Is(unicode.Cf, c) }) >= 0 {
		return "", errors.New("note: holds a control character: one line of plain text")
	}
	return note, nil
}

// endedPage shows the caller's ended session, or sends them to the lab.
func (st standing) endedPage(w http.ResponseWriter, r *http.Request) {
	e, ok := st.s.EndedOf(r)
	if !ok {
		http.Redirect(w, r, "/lab", http.StatusSeeOther)
		return
	}
	writeEnded(w, r, st.h, e)
}

func writeEnded(w http.ResponseWriter, r *http.Request, h Handler, e session.Ended) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.Render(w, r, h.Logger, http.StatusGone, EndedPage(endedView(e, h.KeepFor)))
}

// export downloads the lab export kept with the caller's ended session:
// only that session's cookie reaches it.
func (st standing) export(w http.ResponseWriter, r *http.Request) {
	e, data, err := st.s.EndedExport(r)
	switch {
	case errors.Is(err, session.ErrNoSession):
		http.Error(w, "no ended lab session of yours is kept here", http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "the export kept could not be read: "+err.Error(), http.StatusServiceUnavailable)
		return
	case data == nil:
		http.Error(w, "no export was kept of this lab (it was larger than oplab keeps): your results are on the page", http.StatusNotFound)
		return
	}
	name := fmt.Sprintf("oplab-timeline-%s-%s.json", e.Namespace, e.At.UTC().Format("20060102-150405"))
	httpx.Attachment(w, name, "application/json", data)
}

// again starts a new lab for the learner of an ended session.
func (st standing) again(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if _, err := st.s.BeginAgain(w, r, ""); err != nil {
		if errors.Is(err, session.ErrJoin) {
			WriteForm(w, r, st.h.Logger, err)
			return
		}
		http.Error(w, "could not start a new lab: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	http.Redirect(w, r, "/lab", http.StatusSeeOther)
}

// Ended is the view model of the ended page.
type Ended struct {
	Namespace, Name, Reason string
	At, KeptUntil           string
	Export                  bool
	// Results are what the server saw of the learner's work, in words.
	Results []string
}

func endedView(e session.Ended, keepFor time.Duration) Ended {
	if keepFor <= 0 {
		keepFor = session.DefaultKeepFor
	}
	v := Ended{Namespace: e.Namespace, Name: e.Name, At: e.At.UTC().Format("15:04 UTC, Jan 2"),
		KeptUntil: e.Until(keepFor).UTC().Format("15:04 UTC, Jan 2"), Export: e.Export}
	switch e.Reason {
	case session.ReasonEnded:
		v.Reason = "The instructor ended the class"
	case session.ReasonEvicted:
		v.Reason = "Your lab had been idle, and oplab was full: it made room for a newcomer"
	default:
		v.Reason = "Your lab had been idle for longer than this oplab keeps a lab"
	}
	rec := e.Record
	if n := len(rec.ScenariosDone()); n > 0 {
		v.Results = append(v.Results, fmt.Sprintf("%d lab scenarios seen through", n))
	}
	for _, id := range slices.Sorted(maps.Keys(rec.Challenges)) {
		if n := len(rec.Challenges[id].Verified()); n > 0 {
			v.Results = append(v.Results, fmt.Sprintf("challenge %s: %d tasks checked done", id, n))
		}
	}
	if rec.Quiz.Best > 0 || len(rec.Quiz.First) > 0 {
		v.Results = append(v.Results, fmt.Sprintf("quiz: %d right at the first try, best attempt %d", rec.Quiz.FirstRight(), rec.Quiz.Best))
	}
	if rec.Cards.Reviews > 0 {
		v.Results = append(v.Results, fmt.Sprintf("%d flashcard reviews", rec.Cards.Reviews))
	}
	if rec.ActiveMinutes == 1 {
		v.Results = append(v.Results, "1 minute on task")
	} else if rec.ActiveMinutes > 1 {
		v.Results = append(v.Results, fmt.Sprintf("%d minutes on task", rec.ActiveMinutes))
	}
	return v
}
