package instructor

import (
	"math"
	"slices"
	"time"

	"github.com/oplab-dev/oplab/web/progress"
)

// A learner's work comes to the roster and the class export from two
// sources, kept apart: what the server saw (its own challenge checks, its
// grading of quiz answers and typed answers, the flashcard reviews it
// scheduled, the scenario points it found on the learner's timeline, the
// learner's reconciler test), marked verified, and what their browser
// reported, marked self-reported. Only the verified part is counted: the
// percent complete and every grade column are made of it.

// Verdict is a learner's latest reconciler test, as the code tester
// (issue 51, controller/tester) gives it: whether every schedule passed,
// the bug patterns the failed ones found, how many schedules ran, when.
type Verdict struct {
	Passed    bool      `json:"passed"`
	Patterns  []string  `json:"patterns"`
	Schedules int       `json:"schedules"`
	At        time.Time `json:"at"`
}

// CodeVerdicts gives a learner's latest reconciler test verdict by their
// namespace; the code tester implements it. Roster.Code nil: no verdicts
// (the tester is not there), and the roster and export say "none".
type CodeVerdicts interface {
	VerdictOf(namespace string) (Verdict, bool)
}

// Verified is what the server saw of a learner's work.
type Verified struct {
	// Scenarios are the lab scenarios whose point the server found on the
	// learner's timeline after they set them up.
	Scenarios []string `json:"scenarios"`
	// Challenges are the challenges begun, with the tasks the server's
	// checks and grading found done of the challenge's tasks.
	Challenges []Challenge `json:"challenges"`
	// ChallengesComplete counts the challenges with every task verified.
	ChallengesComplete int `json:"challengesComplete"`
	// QuizFirstTry counts the questions whose first answer the server
	// graded was right; QuizBest the most right in one quiz attempt.
	QuizFirstTry int `json:"quizFirstTry"`
	QuizBest     int `json:"quizBest"`
	// CardsReviewed counts the flashcard reviews the server scheduled. A
	// rating is the learner's own judgement, so this is activity, never a
	// grade.
	CardsReviewed int `json:"cardsReviewed"`
	// Code is the latest reconciler test; nil when none ran (or no tester).
	Code *Verdict `json:"code"`
}

// SelfReported is what the learner's browser reported: shown, never
// counted.
type SelfReported struct {
	// Reported is false while the browser has sent nothing; then the
	// zeros mean "not known".
	Reported           bool        `json:"reported"`
	At                 time.Time   `json:"at,omitzero"`
	Scenarios          []string    `json:"scenarios"`
	Challenges         []Challenge `json:"challenges"`
	ChallengesComplete int         `json:"challengesComplete"`
	QuizBest           int         `json:"quizBest"`
	CardsReviewed      int         `json:"cardsReviewed"`
}

// Totals are the course's: the "of" of each count, and how a challenge's
// tasks are counted.
type Totals struct {
	Scenarios, Challenges, QuizQuestions int
	// ChallengeTasks is a challenge's number of tasks; false: no such
	// challenge (any more).
	ChallengeTasks func(id string) (int, bool)
}

// verifiedOf reads the server's record of a learner's work.
func verifiedOf(rec progress.Record, t Totals) Verified {
	v := Verified{Scenarios: rec.ScenariosDone(), Challenges: []Challenge{}, QuizFirstTry: rec.Quiz.FirstRight(),
		QuizBest: rec.Quiz.Best, CardsReviewed: rec.Cards.Reviews}
	if v.Scenarios == nil {
		v.Scenarios = []string{}
	}
	for id, c := range rec.Challenges {
		of := 0
		if t.ChallengeTasks != nil {
			n, ok := t.ChallengeTasks(id)
			if !ok {
				continue
			}
			of = n
		}
		done := len(c.Verified())
		v.Challenges = append(v.Challenges, Challenge{ID: id, Done: done, Of: of})
		if of > 0 && done >= of {
			v.ChallengesComplete++
		}
	}
	slices.SortFunc(v.Challenges, func(a, b Challenge) int { return cmpString(a.ID, b.ID) })
	return v
}

// selfReportedOf reads what a learner's browser reported.
func selfReportedOf(p progress.Progress) SelfReported {
	s := SelfReported{Reported: !p.Reported.IsZero(), Scenarios: slices.Sorted(slices.Values(p.Scenarios)),
		QuizBest: p.QuizBest, CardsReviewed: p.CardsReviewed}
	if s.Reported {
		s.At = p.Reported.UTC()
	}
	if s.Scenarios == nil {
		s.Scenarios = []string{}
	}
	s.Challenges, s.ChallengesComplete = challengesOf(p)
	return s
}

// percent is the share of the course the server saw done: verified
// scenarios, challenges complete and the best quiz attempt, each as a
// share of the course's, averaged (an unknown total is left out).
func percent(v Verified, t Totals) int {
	var sum float64
	var parts int
	for _, p := range []struct{ done, of int }{{len(v.Scenarios), t.Scenarios}, {v.ChallengesComplete, t.Challenges}, {v.QuizBest, t.QuizQuestions}} {
		if p.of > 0 {
			sum += math.Min(float64(p.done)/float64(p.of), 1)
			parts++
		}
	}
	if parts == 0 {
		return 0
	}
	return int(math.Round(100 * sum / float64(parts)))
}
