// Package learn serves the course pages: home, lessons, quiz and
// flashcards. Pages are rendered on the server from view models and read
// fine without JavaScript; the modules under /static/learn/ add immediate
// quiz feedback, the flashcard deck and progress kept in the browser's
// localStorage.
//
// The server keeps no learner state, and it alone knows the answers: the
// quiz page carries no correct choices or explanations, which come back
// from POST /quiz/answer (or the graded page) once the learner has
// answered. Flashcard scheduling runs here too (the Go FSRS-6 in package
// quiz): POST /flashcards/review takes a card's state from the browser and
// returns the next one, POST /flashcards/states predicts each card's
// recall, and POST /flashcards/preview
// gives each rating button its interval before it is pressed.
package learn

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/progress"
)

// Register mounts the course pages on mux:
//
//	GET  /{$}                 home: outline and progress
//	GET  /lessons             every lesson and reference page
//	GET  /lessons/{slug}      one page
//	GET  /quiz                the quiz (?only=id,id retries a subset)
//	POST /quiz                grades a submitted quiz (works without JS)
//	POST /quiz/answer         grades one answer (JSON)
//	GET  /flashcards          the flashcard deck
//	POST /flashcards/review   schedules one review (JSON)
//	POST /flashcards/states   reads the stored deck, predicts recall (JSON)
//	POST /flashcards/preview  what each rating would do to one card (JSON)
//
// content is the course cmd/oplab loaded once (LoadContent).
func Register(mux *http.ServeMux, content *Content) {
	RegisterWith(mux, content, nil)
}

// Recorder records on the caller's session what the server graded of
// their work: each quiz answer, each flashcard review
// (session.Manager.RecordFor). A caller without a session records
// nothing.
type Recorder interface {
	RecordFor(r *http.Request, f func(*progress.Record) bool)
}

// RegisterWith is Register with the learners' answers and reviews
// recorded on their sessions by rec (nil: none), so the instructor's
// roster shows the quiz as the server graded it, not as a browser says.
func RegisterWith(mux *http.ServeMux, content *Content, rec Recorder) {
	s := newSite(content, time.Now)
	s.record = rec
	s.register(mux)
}

// site serves the loaded course; it is read-only once built, so handlers
// share it without locking.
type site struct {
	course  *lessons.Course
	outline outline
	// challenges link each lesson page to the challenges practising it.
	challenges *judge.Set
	bank       quiz.Bank
	now        func() time.Time
	// log is where a page that fails to render is reported. Register has
	// no logger of its own to take, so the course logs through slog.
	log logr.Logger
	// record keeps what the server graded on the caller's session; nil:
	// nothing is kept.
	record Recorder
}

// graded records answers graded in the quiz attempt named attempt (the
// visit's choice order; "" when none was sent).
func (s *site) graded(r *http.Request, attempt string, items ...quiz.Graded) {
	if s.record == nil {
		return
	}
	s.record.RecordFor(r, func(rec *progress.Record) bool {
		for _, g := range items {
			if g.Answered {
				rec.Answered(attempt, g.Question.ID, g.Correct)
			}
		}
		return true
	})
}

func newSite(c *Content, now func() time.Time) *site {
	o := newOutline(c.Course)
	o.challenges = map[string]string{}
	for _, q := range c.Quiz.Questions {
		if ch, ok := c.Challenges.Get(q.Challenge); ok {
			o.challenges[ch.ID] = ch.Title
		}
	}
	return &site{course: c.Course, outline: o, bank: c.Quiz, now: now, challenges: c.Challenges, log: logr.FromSlogHandler(slog.Default().Handler())}
}

func (s *site) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /lessons", s.lessonList)
	mux.HandleFunc("GET /lessons/{slug}", s.lesson)
	mux.HandleFunc("GET /quiz", s.quizForm)
	mux.HandleFunc("POST /quiz", s.quizGrade)
	mux.HandleFunc("POST /quiz/answer", s.answer)
	mux.HandleFunc("GET /flashcards", s.flashcards)
	mux.HandleFunc("POST /flashcards/review", s.review)
	mux.HandleFunc("POST /flashcards/states", s.states)
	mux.HandleFunc("POST /flashcards/preview", s.preview)
}

func (s *site) home(w http.ResponseWriter, r *http.Request) {
	httpx.Render(w, r, s.log, http.StatusOK, homePage(newHomeView(s.course, s.bank)))
}

func (s *site) lessonList(w http.ResponseWriter, r *http.Request) {
	httpx.Render(w, r, s.log, http.StatusOK, lessonListPage(s.outline))
}

func (s *site) lesson(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	l, ok := s.course.Lesson(slug)
	if !ok {
		httpx.Render(w, r, s.log, http.StatusNotFound, notFoundPage(fmt.Sprintf("There is no lesson called “%s”.", slug), s.outline))
		return
	}
	httpx.Render(w, r, s.log, http.StatusOK, lessonPage(newLessonView(s.course, l).withChallenges(s.challenges)))
}

func (s *site) quizForm(w http.ResponseWriter, r *http.Request) {
	ids := httpx.SplitIDs(r.URL.Query().Get("only"), len(s.bank.Questions))
	qs, err := quiz.Select(s.bank.Questions, ids)
	if err != nil {
		httpx.Render(w, r, s.log, http.StatusBadRequest, quizPage(quizErrorView(s.bank, fmt.Sprintf("Cannot retry those questions: %v.", err))))
		return
	}
	httpx.Render(w, r, s.log, http.StatusOK, quizPage(newQuizView(s.bank, s.outline, qs, ids, freshOrder())))
}

// quizGrade grades a submitted form. The hidden field "only" carries the
// subset being retried, so the result covers the questions that were shown,
// and "order" the order their choices were shown in.
func (s *site) quizGrade(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		httpx.Render(w, r, s.log, http.StatusBadRequest, quizPage(quizErrorView(s.bank, fmt.Sprintf("Could not read the submitted answers: %v.", err))))
		return
	}
	ids := httpx.SplitIDs(r.PostForm.Get("only"), len(s.bank.Questions))
	order, err := parseOrder(r.PostForm.Get("order"))
	var qs []quiz.Question
	if err == nil {
		qs, err = quiz.Select(s.bank.Questions, ids)
	}
	if err == nil {
		var answers quiz.Answers
		answers, err = quiz.ParseForm(qs, r.PostForm)
		if err == nil {
			result, _ := quiz.Grade(qs, answers) // ParseForm already graded these answers without error
			s.graded(r, order.String(), result.Items...)
			httpx.Render(w, r, s.log, http.StatusOK, quizPage(newGradedView(s.bank, s.outline, result, ids, order)))
			return
		}
	}
	httpx.Render(w, r, s.log, http.StatusBadRequest, quizPage(quizErrorView(s.bank, fmt.Sprintf("Those answers could not be graded: %v.", err))))
}

func (s *site) flashcards(w http.ResponseWriter, r *http.Request) {
	httpx.Render(w, r, s.log, http.StatusOK, flashcardsPage(newCardsView(s.outline, s.bank.Cards)))
}
