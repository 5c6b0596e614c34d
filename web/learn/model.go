package learn

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/lab"
)

// The view models below are all the templates see: plain strings, numbers
// and URLs, never lessons or quiz types.

// lessonLink is one page in an outline.
type lessonLink struct {
	Slug, URL, Title, Summary string
	// Label is "Lesson 1" or "Reference".
	Label    string
	Minutes  int
	Sections []sectionLink
}

type sectionLink struct {
	Title, URL string
}

// liveLink is a "try it live" action.
type liveLink struct {
	Title, Text, URL string
}

// outline is the course's table of contents.
type outline struct {
	Lessons, References []lessonLink
	// challenges are the challenges' titles by ID, for the quiz's
	// "Practise it" links.
	challenges map[string]string
}

func newOutline(c *lessons.Course) outline {
	var o outline
	for i, l := range c.Kind(lessons.KindLesson) {
		o.Lessons = append(o.Lessons, newLessonLink(l, fmt.Sprintf("Lesson %d", i+1)))
	}
	for _, l := range c.Kind(lessons.KindReference) {
		o.References = append(o.References, newLessonLink(l, "Reference"))
	}
	return o
}

func newLessonLink(l lessons.Lesson, label string) lessonLink {
	link := lessonLink{Slug: l.Slug, URL: l.URL(), Title: l.Title, Summary: l.Summary, Label: label, Minutes: l.Minutes}
	for _, s := range l.Sections {
		link.Sections = append(link.Sections, sectionLink{Title: s.Title, URL: l.URL() + "#" + s.ID})
	}
	return link
}

// find returns the outline entry of slug.
func (o outline) find(slug string) (lessonLink, bool) {
	for _, l := range append(o.Lessons, o.References...) {
		if l.Slug == slug {
			return l, true
		}
	}
	return lessonLink{}, false
}

// describe names the lesson section a link points at, e.g.
// "Lesson 2 · Finalizers".
func (o outline) describe(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	l, ok := o.find(strings.TrimPrefix(u.Path, "/lessons/"))
	if !ok {
		return link
	}
	for _, s := range l.Sections {
		if s.URL == link {
			return l.Label + " · " + s.Title
		}
	}
	return l.Label + " · " + l.Title
}

// homeView is the home page.
type homeView struct {
	Outline   outline
	Start     lessonLink
	Questions int
	Cards     int
	// Pages counts lessons and references, for "pages read".
	Pages int
	// CardIDs lists every card, space-separated, so the page's script can
	// count those due without loading the deck.
	CardIDs   string
	Scenarios []liveLink
}

func newHomeView(c *lessons.Course, b quiz.Bank) homeView {
	o := newOutline(c)
	v := homeView{Outline: o, Questions: len(b.Questions), Cards: len(b.Cards), Pages: len(c.Lessons)}
	if len(o.Lessons) > 0 {
		v.Start = o.Lessons[0]
	}
	ids := make([]string, len(b.Cards))
	for i, card := range b.Cards {
		ids[i] = card.ID
	}
	v.CardIDs = strings.Join(ids, " ")
	for _, s := range lab.Scenarios {
		v.Scenarios = append(v.Scenarios, liveLink{Title: s.Title, URL: lessons.ScenarioURL(s.Name)})
	}
	return v
}

// lessonView is one lesson page.
type lessonView struct {
	Page lessonLink
	// HTML is the rendered markdown from our own embedded content.
	HTML       string
	Live       []liveLink
	Prev, Next *lessonLink
	// Challenges practise a section of the page.
	Challenges []challengeLink
}

// challengeLink is a challenge that practises a section of a lesson.
type challengeLink struct {
	Title, URL, Section string
}

func (v lessonView) withChallenges(set *judge.Set) lessonView {
	for _, c := range set.ForLesson(v.Page.Slug) {
		section, _ := c.SectionIn(v.Page.Slug)
		v.Challenges = append(v.Challenges, challengeLink{Title: c.Title, URL: c.URL(), Section: "#" + section})
	}
	return v
}

func newLessonView(c *lessons.Course, l lessons.Lesson) lessonView {
	o := newOutline(c)
	page, _ := o.find(l.Slug)
	v := lessonView{Page: page, HTML: l.HTML}
	for _, a := range l.Live {
		v.Live = append(v.Live, liveLink{Title: a.Title, Text: a.Text, URL: a.URL()})
	}
	prev, next, hasPrev, hasNext := c.Neighbours(l.Slug)
	if hasPrev {
		p, _ := o.find(prev.Slug)
		v.Prev = &p
	}
	if hasNext {
		n, _ := o.find(next.Slug)
		v.Next = &n
	}
	return v
}

// quizView is the quiz page, blank or graded.
type quizView struct {
	// Error explains bad input; the page then offers a fresh start.
	Error string
	Items []questionView
	// Only is the comma-separated subset being retried, "" for all.
	Only string
	// FullTotal is the size of the whole quiz.
	FullTotal int
	// Order is the form's hidden field "order": the seed of the order the
	// choices are shown in (choiceOrder); "" for the written order.
	Order string

	Graded       bool
	Score, Total int
	// RetryURL retries the missed questions; empty when none were missed.
	RetryURL string
	Missed   int
}

// questionView is one question. Before grading it carries no correct
// choices and no explanation, so the page's source gives nothing away: the
// script asks POST /quiz/answer for the verdict, and the no-script form
// gets a graded page from POST /quiz.
type questionView struct {
	ID, Number, Prompt string
	// Code is the trace excerpt or object the question asks about, shown
	// verbatim; empty for most questions.
	Code    string
	Multi   bool
	Choices []choiceView
	// Explanation is empty until graded.
	Explanation        string
	LessonURL          string
	LessonTitle        string
	DemoURL, DemoTitle string
	// ChallengeURL and ChallengeTitle name the challenge that practises
	// the question; empty when none does.
	ChallengeURL, ChallengeTitle string
	// State is "", or after grading "right", "wrong" or "unanswered".
	State string
}

type choiceView struct {
	Value, InputID, Text string
	// Correct is only ever set on a graded page.
	Checked, Correct bool
}

func newQuizView(b quiz.Bank, o outline, qs []quiz.Question, only []string, order choiceOrder) quizView {
	v := quizView{Only: strings.Join(only, ","), FullTotal: len(b.Questions), Order: order.String()}
	for i, q := range qs {
		v.Items = append(v.Items, newQuestionView(o, i+1, q, nil, false, order))
	}
	return v
}

func newGradedView(b quiz.Bank, o outline, r quiz.Result, only []string, order choiceOrder) quizView {
	v := quizView{Only: strings.Join(only, ","), FullTotal: len(b.Questions), Graded: true, Score: r.Score, Total: r.Total}
	for i, g := range r.Items {
		qv := newQuestionView(o, i+1, g.Question, g.Picked, true, order)
		switch {
		case g.Correct:
			qv.State = "right"
		case g.Answered:
			qv.State = "wrong"
		default:
			qv.State = "unanswered"
		}
		v.Items = append(v.Items, qv)
	}
	if missed := r.Missed(); len(missed) > 0 {
		v.Missed = len(missed)
		v.RetryURL = "/quiz?only=" + url.QueryEscape(strings.Join(missed, ","))
	}
	return v
}

func quizErrorView(b quiz.Bank, msg string) quizView {
	return quizView{Error: msg, FullTotal: len(b.Questions)}
}

// newQuestionView builds one question, its choices in order; the answer and
// its explanation are only put in when graded.
func newQuestionView(o outline, n int, q quiz.Question, picked []int, graded bool, order choiceOrder) questionView {
	v := questionView{
		ID: q.ID, Number: strconv.Itoa(n), Prompt: q.Prompt, Code: q.Code, Multi: q.Multi(),
		LessonURL: q.Lesson, LessonTitle: o.describe(q.Lesson),
		DemoURL: q.DemoURL(), DemoTitle: scenarioTitle(q.Demo),
	}
	if title, ok := o.challenges[q.Challenge]; ok {
		v.ChallengeURL, v.ChallengeTitle = "/challenges/"+q.Challenge, title
	}
	if graded {
		v.Explanation = q.Explanation
	}
	for _, i := range order.of(q) {
		c := q.Choices[i]
		v.Choices = append(v.Choices, choiceView{
			Value: strconv.Itoa(i), InputID: fmt.Sprintf("q-%s-%d", q.ID, i), Text: c.Text,
			Checked: contains(picked, i), Correct: graded && c.Correct,
		})
	}
	return v
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// cardsView is the flashcards page.
type cardsView struct {
	Cards []cardView
}

// cardView is one card; the JSON names are what learn/deck.js reads.
type cardView struct {
	ID          string `json:"id"`
	Front       string `json:"front"`
	Back        string `json:"back"`
	LessonURL   string `json:"lessonURL"`
	LessonTitle string `json:"lessonTitle"`
}

func newCardsView(o outline, cards []quiz.Card) cardsView {
	var v cardsView
	for _, c := range cards {
		v.Cards = append(v.Cards, cardView{ID: c.ID, Front: c.Front, Back: c.Back, LessonURL: c.Lesson, LessonTitle: o.describe(c.Lesson)})
	}
	return v
}

// scenarioTitle is the lab's title of scenario name, or the name itself for
// an unknown one (web's tests check every demo names a real scenario).
func scenarioTitle(name string) string {
	if s, ok := lab.FindScenario(name); ok {
		return s.Title
	}
	return name
}

// RestartURL is this quiz page afresh: the whole quiz, or the same retry.
func (v quizView) RestartURL() string {
	if v.Only != "" {
		return "/quiz?only=" + url.QueryEscape(v.Only)
	}
	return "/quiz"
}
