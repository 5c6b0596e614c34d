// Package quiz reads the course's quiz questions and flashcards (their
// files are in lessons/content/quiz), grades answers, and schedules card
// reviews with FSRS-6 (see fsrs.go). It knows nothing of the cluster or of
// HTTP.
package quiz

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/content"
)

// Choice is one possible answer.
type Choice struct {
	Text    string `json:"text"`
	Correct bool   `json:"correct,omitempty"`
}

// Question is one quiz question.
type Question struct {
	// ID is stable and kebab-case; forms and retry links use it.
	ID     string `json:"id"`
	Prompt string `json:"prompt"`
	// Code is an optional excerpt the question asks about (a trace, a YAML
	// object), shown verbatim under the prompt.
	Code    string   `json:"code,omitempty"`
	Choices []Choice `json:"choices"`
	// Explanation is shown once the question is answered, right or wrong.
	Explanation string `json:"explanation"`
	// Lesson links the section that teaches the answer (/lessons/SLUG#ANCHOR).
	Lesson string `json:"lesson"`
	// Demo names the lab scenario that shows it live.
	Demo string `json:"demo"`
	// Challenge optionally names the challenge that practises it, once
	// challenges exist; it is kebab-case like every other ID.
	Challenge string `json:"challenge,omitempty"`
}

// Correct returns the indexes of the correct choices, ascending.
func (q Question) Correct() []int {
	var out []int
	for i, c := range q.Choices {
		if c.Correct {
			out = append(out, i)
		}
	}
	return out
}

// Multi reports whether the question has more than one correct choice, and
// so is answered with checkboxes rather than radio buttons.
func (q Question) Multi() bool { return len(q.Correct()) > 1 }

// ChoiceOrder lists the written indexes of q's choices in the order a page
// shows them under seed. Pages shuffle the choices so that a learner who
// meets a question again must know the answer, not where it sat; a choice
// keeps its written index as its value, so grading never sees the order.
// Under one seed each question has an order of its own.
func (q Question) ChoiceOrder(seed uint64) []int {
	return rand.New(rand.NewPCG(seed, SeedOf(q.ID))).Perm(len(q.Choices))
}

// SeedOf turns a name into a seed for ChoiceOrder: the same name, the same
// order (a learner's namespace keeps their challenge questions' order).
func SeedOf(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// DemoURL is the lab link of the question's demo. The scenario names are the
// lab's; a test in web/ checks every demo against them.
func (q Question) DemoURL() string { return lessons.ScenarioURL(q.Demo) }

// Card is one flashcard.
type Card struct {
	ID     string `json:"id"`
	Front  string `json:"front"`
	Back   string `json:"back"`
	Lesson string `json:"lesson"`
}

// Bank is every question and card.
type Bank struct {
	// Questions are the quiz's; ChallengeQuestions are asked only by a
	// challenge's question task, so the quiz never shows their answers.
	Questions, ChallengeQuestions []Question
	Cards                         []Card
}

// Load parses the embedded questions and cards (lessons/content/quiz).
func Load() (Bank, error) {
	qs, err := ParseQuestions(content.Questions)
	if err != nil {
		return Bank{}, fmt.Errorf("questions.yaml: %w", err)
	}
	chs, err := ParseQuestions(content.ChallengeQuestions)
	if err != nil {
		return Bank{}, fmt.Errorf("challenge-questions.yaml: %w", err)
	}
	for _, q := range chs {
		if _, err := Find(qs, q.ID); err == nil {
			return Bank{}, fmt.Errorf("challenge-questions.yaml: id %q is also a quiz question in questions.yaml", q.ID)
		}
	}
	cs, err := ParseCards(content.Cards)
	if err != nil {
		return Bank{}, fmt.Errorf("cards.yaml: %w", err)
	}
	return Bank{Questions: qs, ChallengeQuestions: chs, Cards: cs}, nil
}

// ParseQuestions decodes and validates a YAML list of questions.
func ParseQuestions(data []byte) ([]Question, error) {
	var qs []Question
	if err := yaml.UnmarshalStrict(data, &qs); err != nil {
		return nil, fmt.Errorf("decode questions: %w", err)
	}
	if len(qs) == 0 {
		return nil, errors.New("no questions")
	}
	seen := map[string]bool{}
	for i, q := range qs {
		if err := q.validate(); err != nil {
			return nil, fmt.Errorf("question %d (%q): %w", i+1, q.ID, err)
		}
		if seen[q.ID] {
			return nil, fmt.Errorf("question %d: id %q is used twice", i+1, q.ID)
		}
		seen[q.ID] = true
	}
	return qs, nil
}

func (q Question) validate() error {
	switch {
	case !lessons.ValidSlug(q.ID):
		return fmt.Errorf("id %q must be lowercase letters, digits and dashes", q.ID)
	case strings.TrimSpace(q.Prompt) == "":
		return errors.New("prompt is empty")
	case len(q.Choices) < 2:
		return fmt.Errorf("has %d choices, needs at least 2", len(q.Choices))
	case len(q.Correct()) == 0:
		return errors.New("no choice is marked correct")
	case len(q.Correct()) == len(q.Choices):
		return errors.New("every choice is marked correct")
	case strings.TrimSpace(q.Explanation) == "":
		return errors.New("explanation is empty")
	case !strings.HasPrefix(q.Lesson, "/lessons/"):
		return fmt.Errorf("lesson link %q must start with /lessons/", q.Lesson)
	case !lessons.ValidSlug(q.Demo):
		return fmt.Errorf("demo %q must name a lab scenario", q.Demo)
	case q.Challenge != "" && !lessons.ValidSlug(q.Challenge):
		return fmt.Errorf("challenge %q must be lowercase letters, digits and dashes", q.Challenge)
	}
	for i, c := range q.Choices {
		if strings.TrimSpace(c.Text) == "" {
			return fmt.Errorf("choice %d is empty", i+1)
		}
	}
	return nil
}

// ParseCards decodes and validates a YAML list of flashcards.
func ParseCards(data []byte) ([]Card, error) {
	var cs []Card
	if err := yaml.UnmarshalStrict(data, &cs); err != nil {
		return nil, fmt.Errorf("decode cards: %w", err)
	}
	if len(cs) == 0 {
		return nil, errors.New("no cards")
	}
	seen := map[string]bool{}
	for i, c := range cs {
		switch {
		case !lessons.ValidSlug(c.ID):
			return nil, fmt.Errorf("card %d: id %q must be lowercase letters, digits and dashes", i+1, c.ID)
		case seen[c.ID]:
			return nil, fmt.Errorf("card %d: id %q is used twice", i+1, c.ID)
		case strings.TrimSpace(c.Front) == "" || strings.TrimSpace(c.Back) == "":
			return nil, fmt.Errorf("card %d (%q): front and back must both have text", i+1, c.ID)
		case !strings.HasPrefix(c.Lesson, "/lessons/"):
			return nil, fmt.Errorf("card %d (%q): lesson link %q must start with /lessons/", i+1, c.ID, c.Lesson)
		}
		seen[c.ID] = true
	}
	return cs, nil
}

// Select returns the questions with the given IDs, in quiz order, so a
// learner can retry only the ones they missed. No IDs means all questions.
func Select(qs []Question, ids []string) ([]Question, error) {
	if len(ids) == 0 {
		return qs, nil
	}
	for _, id := range ids {
		if !slices.ContainsFunc(qs, func(q Question) bool { return q.ID == id }) {
			return nil, fmt.Errorf("no question has id %q", id)
		}
	}
	var out []Question
	for _, q := range qs {
		if slices.Contains(ids, q.ID) {
			out = append(out, q)
		}
	}
	return out, nil
}

// Find returns the question with the given ID.
func Find(qs []Question, id string) (Question, error) {
	i := slices.IndexFunc(qs, func(q Question) bool { return q.ID == id })
	if i < 0 {
		return Question{}, fmt.Errorf("no question has id %q", id)
	}
	return qs[i], nil
}

// GradeOne marks one answer, as Grade does each: right only when picked is
// exactly the correct choices. Picking nothing is an error here, since a
// single answer is only sent once the learner has chosen.
func GradeOne(q Question, picked []int) (Graded, error) {
	p, err := normalise(q, picked)
	if err != nil {
		return Graded{}, err
	}
	if len(p) == 0 {
		return Graded{}, fmt.Errorf("no choice picked for question %q", q.ID)
	}
	return Graded{Question: q, Picked: p, Answered: true, Correct: slices.Equal(p, q.Correct())}, nil
}

// FieldPrefix starts the form field of each question: "q.<id>".
const FieldPrefix = "q."

// Answers maps a question ID to the indexes of the choices picked.
type Answers map[string][]int

// ParseForm reads answers from a submitted quiz form, where each checked
// choice is a field "q.<id>" with the choice's index as value. Fields not
// starting with "q." are ignored.
func ParseForm(qs []Question, form url.Values) (Answers, error) {
	a := Answers{}
	for key, values := range form {
		id, ok := strings.CutPrefix(key, FieldPrefix)
		if !ok {
			continue
		}
		for _, v := range values {
			i, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("answer %q to question %q is not a choice number", v, id)
			}
			a[id] = append(a[id], i)
		}
	}
	if _, err := Grade(qs, a); err != nil {
		return nil, err
	}
	return a, nil
}

// Graded is one question with the learner's answer.
type Graded struct {
	Question Question
	// Picked are the chosen indexes, ascending and without repeats.
	Picked   []int
	Answered bool
	Correct  bool
}

// Result is a graded quiz.
type Result struct {
	Items []Graded
	// Score counts correct answers out of Total questions.
	Score, Total int
}

// Missed returns the IDs of questions answered wrongly or not at all.
func (r Result) Missed() []string {
	var out []string
	for _, g := range r.Items {
		if !g.Correct {
			out = append(out, g.Question.ID)
		}
	}
	return out
}

// Grade marks answers against qs. An answer is correct when it picks
// exactly the correct choices: on a pick-all question a partly right
// selection is wrong. Answers naming unknown questions or choices, or more
// than one choice on a single-answer question, are errors.
func Grade(qs []Question, a Answers) (Result, error) {
	for id := range a {
		if !slices.ContainsFunc(qs, func(q Question) bool { return q.ID == id }) {
			return Result{}, fmt.Errorf("answer to question %q, which is not in this quiz", id)
		}
	}
	r := Result{Total: len(qs)}
	for _, q := range qs {
		picked, err := normalise(q, a[q.ID])
		if err != nil {
			return Result{}, err
		}
		g := Graded{Question: q, Picked: picked, Answered: len(picked) > 0}
		g.Correct = g.Answered && slices.Equal(picked, q.Correct())
		if g.Correct {
			r.Score++
		}
		r.Items = append(r.Items, g)
	}
	return r, nil
}

// normalise sorts and de-duplicates picked, checking each index.
func normalise(q Question, picked []int) ([]int, error) {
	out := slices.Clone(picked)
	slices.Sort(out)
	out = slices.Compact(out)
	for _, i := range out {
		if i < 0 || i >= len(q.Choices) {
			return nil, fmt.Errorf("question %q has choices 0 to %d, not %d", q.ID, len(q.Choices)-1, i)
		}
	}
	if len(out) > 1 && !q.Multi() {
		return nil, fmt.Errorf("question %q takes one answer, got %d", q.ID, len(out))
	}
	return out, nil
}
