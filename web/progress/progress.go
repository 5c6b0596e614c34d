// Package progress is a learner's progress report: what their browser
// says of their work (POST /lab/progress: the scenarios seen through, the
// challenges' tasks done, the best quiz score, the flashcards reviewed, and
// the display name), checked against the course that exists and kept on
// their session for the instructor's roster. The session table holds it;
// this package reads and checks it, and names the field a report got
// wrong.
package progress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/web/httpx"
)

// Progress is what a learner's browser reports of their work (POST
// /lab/progress): it is kept on the session, in memory only, for the
// instructor's roster, and goes with the session.
type Progress struct {
	// Scenarios are the lab scenarios the learner saw through, by name.
	Scenarios []string `json:"scenarios"`
	// Challenges are the learner's challenges by ID, with their tasks done.
	Challenges map[string]ChallengeProgress `json:"challenges"`
	// QuizBest is the learner's best quiz score.
	QuizBest int `json:"quizBest"`
	// CardsReviewed counts the flashcard reviews.
	CardsReviewed int `json:"cardsReviewed"`
	// Reported is when the browser last reported; zero when never.
	Reported time.Time `json:"-"`
}

// ChallengeProgress is how far one challenge is done.
type ChallengeProgress struct {
	Done int `json:"done"`
	Of   int `json:"of"`
}

// Complete reports whether every task is done.
func (c ChallengeProgress) Complete() bool { return c.Of > 0 && c.Done == c.Of }

// Bounds on a progress report's shape. The numbers it carries are also
// held to the real totals (Known): the roster shows them to the
// instructor as a learner's progress.
const (
	maxProgressBody = 4 << 10
	maxName         = 40
	maxScenarios    = 32
	maxChallenges   = 64
	// maxCardsReviewed is the most reviews the browser's log holds
	// (MAX_LOG in web/static/learn/deck.js): the count it reports is that
	// log's length.
	maxCardsReviewed = 500
)

// maxChallengeID bounds a reported challenge ID before anything looks it
// up: the course's are a few words.
const maxChallengeID = 63

// Error is a report refused: Field names what was wrong, in the
// JSON's terms ("scenarios[1]", "challenges.drift-repair.done").
type Error struct {
	Field, Message string
}

func (e *Error) Error() string { return e.Field + ": " + e.Message }

// ValidateName returns a display name trimmed, or says why it cannot be
// one: too long, or holding control characters (a name is shown on the
// instructor's screen, one line, as typed).
func ValidateName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", &Error{Field: "name", Message: "not valid UTF-8 text"}
	}
	if n := utf8.RuneCountInString(s); n > maxName {
		return "", &Error{Field: "name", Message: fmt.Sprintf("%d characters, at most %d", n, maxName)}
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return "", &Error{Field: "name", Message: fmt.Sprintf("holds the control character %U: use letters, digits, spaces and punctuation", r)}
	}
	return s, nil
}

// NameAsTyped is a refused display name cut to the longest one allowed,
// to show it again as typed.
func NameAsTyped(raw string) string { return httpx.Excerpt(raw, maxName) }

// report is the body of POST /lab/progress. Name is a pointer so that a
// report without one keeps the name given earlier (on the join form).
type report struct {
	Name          *string                      `json:"name"`
	Scenarios     []string                     `json:"scenarios"`
	Challenges    map[string]ChallengeProgress `json:"challenges"`
	QuizBest      int                          `json:"quizBest"`
	CardsReviewed int                          `json:"cardsReviewed"`
}

// Known is what a report is checked against: the scenarios, challenges
// and quiz that exist.
type Known struct {
	// Scenario reports whether a report may name a lab scenario; nil
	// accepts none.
	Scenario func(name string) bool
	// ChallengeTasks returns the number of tasks of a challenge by ID, or
	// false when there is no such challenge; a report may name only known
	// challenges, with no more tasks than they have. Nil accepts none.
	ChallengeTasks func(id string) (int, bool)
	// QuizSize is the number of questions of the quiz: the best score a
	// report may claim.
	QuizSize int
}

// parseReport decodes and checks a report against what exists.
func parseReport(body []byte, known Known) (report, error) {
	var rep report
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return report{}, decodeError(err)
	}
	if dec.More() {
		return report{}, &Error{Field: "body", Message: "more than one JSON value"}
	}
	if rep.Name != nil {
		name, err := ValidateName(*rep.Name)
		if err != nil {
			return report{}, err
		}
		rep.Name = &name
	}
	if len(rep.Scenarios) > maxScenarios {
		return report{}, &Error{Field: "scenarios", Message: fmt.Sprintf("%d names, at most %d", len(rep.Scenarios), maxScenarios)}
	}
	for i, s := range rep.Scenarios {
		if known.Scenario == nil || !known.Scenario(s) {
			return report{}, &Error{Field: fmt.Sprintf("scenarios[%d]", i), Message: fmt.Sprintf("unknown scenario %q", httpx.Excerpt(s, maxQuoted))}
		}
	}
	slices.Sort(rep.Scenarios)
	rep.Scenarios = slices.Compact(rep.Scenarios)
	if len(rep.Challenges) > maxChallenges {
		return report{}, &Error{Field: "challenges", Message: fmt.Sprintf("%d challenges, at most %d", len(rep.Challenges), maxChallenges)}
	}
	for id, c := range rep.Challenges {
		if err := checkChallenge(id, c, known.ChallengeTasks); err != nil {
			return report{}, err
		}
	}
	if rep.QuizBest < 0 || rep.QuizBest > known.QuizSize {
		return report{}, &Error{Field: "quizBest", Message: fmt.Sprintf("%d is not a quiz score (0 to %d, the quiz's questions)", rep.QuizBest, known.QuizSize)}
	}
	if rep.CardsReviewed < 0 || rep.CardsReviewed > maxCardsReviewed {
		return report{}, &Error{Field: "cardsReviewed", Message: fmt.Sprintf("%d is not a count of reviews (0 to %d)", rep.CardsReviewed, maxCardsReviewed)}
	}
	return rep, nil
}

func checkChallenge(id string, c ChallengeProgress, tasksOf func(string) (int, bool)) error {
	if len(id) > maxChallengeID || !lessons.ValidSlug(id) {
		return &Error{Field: "challenges", Message: fmt.Sprintf("%q is not a challenge ID (lowercase letters, digits and dashes)", httpx.Excerpt(id, maxQuoted))}
	}
	field := "challenges." + id
	tasks, ok := 0, false
	if tasksOf != nil {
		tasks, ok = tasksOf(id)
	}
	if !ok {
		return &Error{Field: field, Message: fmt.Sprintf("no challenge has the ID %q", id)}
	}
	switch {
	case c.Of < 1 || c.Of > tasks:
		return &Error{Field: field + ".of", Message: fmt.Sprintf("%d tasks: the challenge has %d", c.Of, tasks)}
	case c.Done < 0 || c.Done > c.Of:
		return &Error{Field: field + ".done", Message: fmt.Sprintf("%d tasks done of %d", c.Done, c.Of)}
	}
	return nil
}

// decodeError names the field a JSON error is about, when it can.
func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return &Error{Field: typeErr.Field, Message: fmt.Sprintf("want a %s, not a JSON %s", typeErr.Type, typeErr.Value)}
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &Error{Field: strings.Trim(msg, `"`), Message: "not a field of a progress report (want name, scenarios, challenges, quizBest, cardsReviewed)"}
	}
	return &Error{Field: "body", Message: "not a JSON progress report: " + err.Error()}
}

// maxQuoted bounds what an error quotes of what a client sent.
const maxQuoted = 64

// Sessions is what the handler needs of the session table
// (session.Manager).
type Sessions interface {
	// Check reports whether the caller has a session (an error when not),
	// and marks it seen.
	Check(r *http.Request) error
	// Report keeps p on the caller's session, and name as its display
	// name unless name is nil, and returns the display name the session
	// then holds; an error when the caller has no session.
	Report(r *http.Request, p Progress, name *string) (string, error)
}

// Handler serves POST /lab/progress.
type Handler struct {
	Sessions Sessions
	Known    Known
	// Reported, when set, hears of every report kept: the server checks
	// there what it can of the claims (a scenario seen through, on the
	// learner's own timeline). It must not block long.
	Reported func(r *http.Request, p Progress)
}

// Register mounts POST /lab/progress, the browser's progress report.
func (h Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /lab/progress", h.progress)
}

// progress stores a browser's report on its session. It never starts a
// session: without one it is refused (403).
func (h Handler) progress(w http.ResponseWriter, r *http.Request) {
	// The session first: a browser without one is told so (progress.js
	// stops reporting on a 403), whatever its report says.
	if err := h.Sessions.Check(r); err != nil {
		writeJSONError(w, http.StatusForbidden, "session", err.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProgressBody))
	if err != nil {
		writeJSONError(w, http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("body: over %d bytes, the most a progress report may be", maxProgressBody))
		return
	}
	rep, err := parseReport(body, h.Known)
	if err != nil {
		var pe *Error
		errors.As(err, &pe)
		writeJSONError(w, http.StatusBadRequest, pe.Field, pe.Error())
		return
	}
	p := Progress{Scenarios: rep.Scenarios, Challenges: rep.Challenges, QuizBest: rep.QuizBest, CardsReviewed: rep.CardsReviewed}
	name, err := h.Sessions.Report(r, p, rep.Name)
	if err != nil {
		writeJSONError(w, http.StatusForbidden, "session", err.Error())
		return
	}
	if h.Reported != nil {
		h.Reported(r, p)
	}
	// The answer is the learner's own name as the session holds it, so a
	// browser that does not have it (given on the join form without
	// script) shows it in the lab's name field.
	httpx.JSON(w, http.StatusOK, map[string]string{"name": name})
}

// writeJSONError names the field the report got wrong, so the browser can
// drop just that field and report again.
func writeJSONError(w http.ResponseWriter, code int, field, msg string) {
	httpx.JSON(w, code, map[string]string{"field": field, "error": msg})
}
