package learn

import (
	"fmt"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/content"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/quiz"
)

// Content is the course as oplab serves it: the lessons, the quiz and the
// challenges, loaded and checked against each other once (cmd/oplab does,
// at start) and shared read-only by every page that shows or counts them.
type Content struct {
	Course     *lessons.Course
	Quiz       quiz.Bank
	Challenges *judge.Set
}

// LoadContent loads the compiled-in course. The content is compiled in, so
// a defect in it (bad front matter, a broken link, an invalid question) is
// a build defect that the tests of lessons, quiz and this package catch;
// it is returned rather than served as a half-working course. A controller
// region that is not marked is not an error: Course.Problems lists it, and
// its page shows a note in its place.
func LoadContent() (*Content, error) {
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		return nil, fmt.Errorf("course content is broken: load lessons: %w", err)
	}
	bank, err := quiz.Load()
	if err != nil {
		return nil, fmt.Errorf("course content is broken: load quiz: %w", err)
	}
	if err := checkLinks(course, bank); err != nil {
		return nil, fmt.Errorf("course content is broken: %w", err)
	}
	set, err := judge.Load(content.Challenges, course, bank.ChallengeQuestions)
	if err != nil {
		return nil, fmt.Errorf("course content is broken: load challenges: %w", err)
	}
	for _, q := range bank.Questions {
		if _, ok := set.Get(q.Challenge); q.Challenge != "" && !ok {
			return nil, fmt.Errorf("course content is broken: quiz question %s: challenge %q does not exist", q.ID, q.Challenge)
		}
	}
	return &Content{Course: course, Quiz: bank, Challenges: set}, nil
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
