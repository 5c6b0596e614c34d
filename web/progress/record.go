package progress

import (
	"slices"
	"time"
)

// Record is what the server itself saw of a learner's work: the tasks its
// own challenge checks found done, the quiz answers it graded, the
// flashcard reviews it scheduled, the scenarios whose point it found on the
// learner's timeline, and the minutes the learner was there. Unlike a
// Progress, which is what the browser says, nothing in a Record comes from
// the learner's word: it is what the roster and the class export mark
// verified, and the only thing they count as a grade.
//
// The session table keeps it (web/session) and saves it on the learner's
// namespace, so it survives a restart of oplab; its methods are called on
// the table's owner goroutine, which is why they need no lock.
type Record struct {
	// Challenges are the challenges the learner started, by ID.
	Challenges map[string]*ChallengeRecord `json:"challenges,omitempty"`
	// Quiz is what the server graded of the learner's quiz answers.
	Quiz QuizRecord `json:"quiz,omitzero"`
	// Cards are the flashcard reviews the server scheduled.
	Cards CardRecord `json:"cards,omitzero"`
	// Scenarios are the lab scenarios the learner set up, by name.
	Scenarios map[string]*ScenarioRecord `json:"scenarios,omitempty"`
	// ActiveMinutes counts the minutes in which the learner had an oplab
	// page open or made a request: their time on task.
	ActiveMinutes int `json:"activeMinutes,omitempty"`
	// ActiveMinute is the last minute counted (Unix minutes), so a minute
	// is counted once however many requests it holds.
	ActiveMinute int64 `json:"activeMinute,omitempty"`
}

// ChallengeRecord is one challenge as the server checked it.
type ChallengeRecord struct {
	// Started is when the learner last pressed Start (Unix ms): the checks
	// judge the trace from then, and only a status asked with this start
	// is recorded.
	Started int64 `json:"started,omitempty"`
	// Tasks are the tasks the server found done since that Start: by its
	// own checks, or by its grading of a question or typed answer.
	Tasks []string `json:"tasks,omitempty"`
	// Best are the tasks of the earlier Start that got furthest: a
	// learner who starts again keeps what they had shown.
	Best []string `json:"best,omitempty"`
}

// Verified is the larger of the tasks done since the latest Start and in
// the best earlier one.
func (c *ChallengeRecord) Verified() []string {
	if c == nil {
		return nil
	}
	if len(c.Best) > len(c.Tasks) {
		return c.Best
	}
	return c.Tasks
}

// QuizRecord is the learner's quiz as the server graded it.
type QuizRecord struct {
	// First holds, per question, whether the first answer the server
	// graded for this learner was right: a score a retake cannot raise.
	First map[string]bool `json:"first,omitempty"`
	// Attempts are the latest quiz attempts (a visit of /quiz, named by
	// its choice order), each question's first answer in it.
	Attempts []QuizAttempt `json:"attempts,omitempty"`
	// Best is the most questions answered right in one attempt.
	Best int `json:"best,omitempty"`
}

// QuizAttempt is one visit of the quiz: per question, whether its first
// answer in that visit was right. Answering again in the same visit
// changes nothing, so an attempt's score is earned, not retried.
type QuizAttempt struct {
	ID      string          `json:"id"`
	Answers map[string]bool `json:"answers"`
}

// maxAttempts is how many quiz attempts a record keeps besides Best.
const maxAttempts = 4

// FirstRight counts the questions whose first graded answer was right.
func (q QuizRecord) FirstRight() int {
	n := 0
	for _, ok := range q.First {
		if ok {
			n++
		}
	}
	return n
}

// CardRecord is the learner's flashcard reviews as the server scheduled
// them. A review's rating is the learner's own judgement of their recall,
// so the record counts reviews, it never grades them.
type CardRecord struct {
	Reviews int `json:"reviews,omitempty"`
	// Cards are the distinct cards reviewed, by ID, sorted.
	Cards []string `json:"cards,omitempty"`
}

// ScenarioRecord is one lab scenario: when the learner set it up and when
// the server found its point on their timeline.
type ScenarioRecord struct {
	Started int64 `json:"started,omitempty"` // Unix ms
	Done    int64 `json:"done,omitempty"`    // Unix ms; 0: not yet
	// Checked is when the server last read the learner's timeline for
	// it (Unix ms), so a flood of claims costs one read in a while.
	Checked int64 `json:"-"`
}

// ChallengeStarted records a Start of challenge id at at (Unix ms): the
// tasks shown since the last Start become Best if they went further.
func (r *Record) ChallengeStarted(id string, at int64) {
	if r.Challenges == nil {
		r.Challenges = map[string]*ChallengeRecord{}
	}
	c := r.Challenges[id]
	if c == nil {
		c = &ChallengeRecord{}
		r.Challenges[id] = c
	}
	if len(c.Tasks) > len(c.Best) {
		c.Best = c.Tasks
	}
	c.Started, c.Tasks = at, nil
}

// TasksDone records tasks of challenge id found done by the server since
// the Start at started (Unix ms); a Start other than the latest records
// nothing (a status asked with an old or made-up start). It reports
// whether anything was new.
func (r *Record) TasksDone(id string, started int64, tasks []string) bool {
	c := r.Challenges[id]
	if c == nil || c.Started != started {
		return false
	}
	changed := false
	for _, t := range tasks {
		if !slices.Contains(c.Tasks, t) {
			c.Tasks = append(c.Tasks, t)
			changed = true
		}
	}
	slices.Sort(c.Tasks)
	return changed
}

// Answered records one quiz answer the server graded, in attempt (the
// quiz visit's ID; "" when the page named none). Only the first answer to
// a question counts, in an attempt and in First.
func (r *Record) Answered(attempt, question string, right bool) {
	if r.Quiz.First == nil {
		r.Quiz.First = map[string]bool{}
	}
	if _, ok := r.Quiz.First[question]; !ok {
		r.Quiz.First[question] = right
	}
	i := slices.IndexFunc(r.Quiz.Attempts, func(a QuizAttempt) bool { return a.ID == attempt })
	if i < 0 {
		if len(r.Quiz.Attempts) >= maxAttempts {
			r.Quiz.Attempts = slices.Delete(r.Quiz.Attempts, 0, 1)
		}
		r.Quiz.Attempts = append(r.Quiz.Attempts, QuizAttempt{ID: attempt, Answers: map[string]bool{}})
		i = len(r.Quiz.Attempts) - 1
	}
	a := &r.Quiz.Attempts[i]
	if _, ok := a.Answers[question]; ok {
		return
	}
	a.Answers[question] = right
	score := 0
	for _, ok := range a.Answers {
		if ok {
			score++
		}
	}
	r.Quiz.Best = max(r.Quiz.Best, score)
}

// Reviewed records one flashcard review the server scheduled.
func (r *Record) Reviewed(card string) {
	r.Cards.Reviews++
	if i, found := slices.BinarySearch(r.Cards.Cards, card); !found {
		r.Cards.Cards = slices.Insert(r.Cards.Cards, i, card)
	}
}

// ScenarioStarted records that the learner set up scenario name at at.
func (r *Record) ScenarioStarted(name string, at int64) {
	if r.Scenarios == nil {
		r.Scenarios = map[string]*ScenarioRecord{}
	}
	s := r.Scenarios[name]
	if s == nil {
		s = &ScenarioRecord{}
		r.Scenarios[name] = s
	}
	s.Started = at
}

// ScenarioDone records that the server found scenario name's point on the
// learner's timeline at at; it reports whether that is news.
func (r *Record) ScenarioDone(name string, at int64) bool {
	s := r.Scenarios[name]
	if s == nil || s.Done != 0 {
		return false
	}
	s.Done = at
	return true
}

// ScenariosDone lists the scenarios the server saw through, sorted.
func (r *Record) ScenariosDone() []string {
	var out []string
	for name, s := range r.Scenarios {
		if s.Done != 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Active counts minute at toward the learner's time on task, once.
func (r *Record) Active(at time.Time) bool {
	m := at.Unix() / 60
	if m == r.ActiveMinute {
		return false
	}
	r.ActiveMinute = m
	r.ActiveMinutes++
	return true
}

// Clone is a deep copy, for a reader off the owner goroutine.
func (r Record) Clone() Record {
	out := r
	if r.Challenges != nil {
		out.Challenges = make(map[string]*ChallengeRecord, len(r.Challenges))
		for k, v := range r.Challenges {
			c := *v
			c.Tasks, c.Best = slices.Clone(v.Tasks), slices.Clone(v.Best)
			out.Challenges[k] = &c
		}
	}
	if r.Quiz.First != nil {
		out.Quiz.First = make(map[string]bool, len(r.Quiz.First))
		for k, v := range r.Quiz.First {
			out.Quiz.First[k] = v
		}
	}
	out.Quiz.Attempts = make([]QuizAttempt, len(r.Quiz.Attempts))
	for i, a := range r.Quiz.Attempts {
		m := make(map[string]bool, len(a.Answers))
		for k, v := range a.Answers {
			m[k] = v
		}
		out.Quiz.Attempts[i] = QuizAttempt{ID: a.ID, Answers: m}
	}
	out.Cards.Cards = slices.Clone(r.Cards.Cards)
	if r.Scenarios != nil {
		out.Scenarios = make(map[string]*ScenarioRecord, len(r.Scenarios))
		for k, v := range r.Scenarios {
			s := *v
			out.Scenarios[k] = &s
		}
	}
	return out
}

// Clone is a deep copy of a report.
func (p Progress) Clone() Progress {
	out := p
	out.Scenarios = slices.Clone(p.Scenarios)
	if p.Challenges != nil {
		out.Challenges = make(map[string]ChallengeProgress, len(p.Challenges))
		for k, v := range p.Challenges {
			out.Challenges[k] = v
		}
	}
	return out
}
