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
// returns the next one, POST /flashcards/states converts states saved
// under SM-2 and predicts each card's recall, and POST /flashcards/preview
// gives each rating button its interval before it is pressed.
package learn

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/httpx"
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
//	POST /flashcards/states   reads the stored deck: converts, predicts recall (JSON)
//	POST /flashcards/preview  what each rating would do to one card (JSON)
//
// The content is compiled in, so a defect in it (bad front matter, a broken
// link, an invalid question) is a build defect that the tests of lessons,
// quiz and this package catch; Register returns it rather than serve a
// half-working course. A controller region that is not marked only logs a
// warning and shows a note in its place.
func Register(mux *http.ServeMux) error {
	s, err := newSite(time.Now)
	if err != nil {
		return fmt.Errorf("course content is broken: %w", err)
	}
	for _, p := range s.course.Problems() {
		slog.Warn("Found a problem in the course", "problem", p)
	}
	s.register(mux)
	return nil
}

// site holds the loaded course; it is read-only once built, so handlers
// share it without locking.
type site struct {
	course  *lessons.Course
	outline outline
	// challenges link each lesson page to the challenges practising it.
	challenges *judge.Set
	bank       quiz.Bank
	now        func() time.Time
	// log is where a page that fails to render is reported. Register has
	// no logger of its own to take, so the course logs through slog, as
	// its start-up warnings do.
	log logr.Logger
}

func newSite(now func() time.Time) (*site, error) {
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		return nil, fmt.Errorf("load lessons: %w", err)
	}
	bank, err := quiz.Load()
	if err != nil {
		return nil, fmt.Errorf("load quiz: %w", err)
	}
	if err := checkLinks(course, bank); err != nil {
		return nil, err
	}
	set, err := judge.LoadEmbedded(course)
	if err != nil {
		return nil, fmt.Errorf("load challenges: %w", err)
	}
	o := newOutline(course)
	o.challenges = map[string]string{}
	for _, q := range bank.Questions {
		if q.Challenge == "" {
			continue
		}
		c, ok := set.Get(q.Challenge)
		if !ok {
			return nil, fmt.Errorf("quiz question %s: challenge %q does not exist", q.ID, q.Challenge)
		}
		o.challenges[c.ID] = c.Title
	}
	return &site{course: course, outline: o, bank: bank, now: now, challenges: set, log: logr.FromSlogHandler(slog.Default().Handler())}, nil
}

// checkLinks resolves every link the quiz and cards make into the course.
func checkLinks(course *lessons.Course, bank quiz.Bank) error {
	for _, q := range bank.Questions {
		for _, link := range []string{q.Lesson, q.DemoURL()} {
			if err := course.Resolve(link); err != nil {
				return fmt.Errorf("question %s: %w", q.ID, err)
			}
		}
	}
	for _, c := range bank.Cards {
		if err := course.Resolve(c.Lesson); err != nil {
			return fmt.Errorf("card %s: %w", c.ID, err)
		}
	}
	return nil
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
	httpx.Render(w, r, s.log, http.StatusOK, quizPage(newQuizView(s.bank, s.outline, qs, ids)))
}

// quizGrade grades a submitted form. The hidden field "only" carries the
// subset being retried, so the result covers the questions that were shown.
func (s *site) quizGrade(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		httpx.Render(w, r, s.log, http.StatusBadRequest, quizPage(quizErrorView(s.bank, fmt.Sprintf("Could not read the submitted answers: %v.", err))))
		return
	}
	ids := httpx.SplitIDs(r.PostForm.Get("only"), len(s.bank.Questions))
	qs, err := quiz.Select(s.bank.Questions, ids)
	if err == nil {
		var answers quiz.Answers
		answers, err = quiz.ParseForm(qs, r.PostForm)
		if err == nil {
			result, _ := quiz.Grade(qs, answers) // ParseForm already graded these answers without error
			httpx.Render(w, r, s.log, http.StatusOK, quizPage(newGradedView(s.bank, s.outline, result, ids)))
			return
		}
	}
	httpx.Render(w, r, s.log, http.StatusBadRequest, quizPage(quizErrorView(s.bank, fmt.Sprintf("Those answers could not be graded: %v.", err))))
}

func (s *site) flashcards(w http.ResponseWriter, r *http.Request) {
	httpx.Render(w, r, s.log, http.StatusOK, flashcardsPage(newCardsView(s.outline, s.bank.Cards)))
}
