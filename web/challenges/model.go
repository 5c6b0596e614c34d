package challenges

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/layout"
)

// listView is /challenges: the challenges grouped by the lesson they
// practise, in course order.
type listView struct {
	Groups []listGroup
}

type listGroup struct {
	LessonTitle, LessonURL string
	Items                  []listItem
}

type listItem struct {
	ID, Title, URL          string
	SectionTitle, LessonURL string
	Tasks                   int
}

func (h *Handler) listView() listView {
	var v listView
	for _, l := range h.opts.Course.Lessons {
		g := listGroup{LessonTitle: l.Title, LessonURL: l.URL()}
		for _, c := range h.opts.Set.ForLesson(l.Slug) {
			if c.LessonSlug != l.Slug {
				continue // listed once, under its main lesson; the page names the others
			}
			g.Items = append(g.Items, listItem{
				ID: c.ID, Title: c.Title, URL: c.URL(), Tasks: len(c.Tasks),
				SectionTitle: h.sectionTitle(c), LessonURL: c.LessonURL(),
			})
		}
		if len(g.Items) > 0 {
			v.Groups = append(v.Groups, g)
		}
	}
	return v
}

// sectionTitle is the heading of the section c practises (its anchor if
// the course has no such heading, which the loader already refuses).
func (h *Handler) sectionTitle(c *judge.Challenge) string {
	_, title := h.titles(c.LessonSlug, c.LessonSection)
	return title
}

// titles returns the titles of lesson slug and of its section (the slug
// and the anchor when the course has no such lesson or heading).
func (h *Handler) titles(slug, section string) (lesson, heading string) {
	l, ok := h.opts.Course.Lesson(slug)
	if !ok {
		return slug, section
	}
	i := slices.IndexFunc(l.Sections, func(s lessons.Section) bool { return s.ID == section })
	if i < 0 {
		return l.Title, section
	}
	return l.Title, l.Sections[i].Title
}

// alsoLink is one more lesson section a challenge practises.
type alsoLink struct {
	LessonTitle, SectionTitle, URL string
	// FirstOfLesson: the lesson's title is written before this link only,
	// so sections of one lesson read as one list.
	FirstOfLesson bool
}

// pageView is /challenges/{id}.
type pageView struct {
	ID, Title               string
	LessonTitle, LessonURL  string
	SectionTitle            string
	Also                    []alsoLink
	HTML                    string
	Namespace               string
	Tasks                   []taskView
	Done                    int
	StatusURL, StartURL     string
	WipeSummary             string
	Since                   string // Unix ms of the Start the page judges from, "" for none
	Message                 string // what the last Start said (no-JS redirect)
	Kubeconfig, KubectlLine string
	ExportLine              string
	// Waiting says, while the cluster is not up (Reading), how far it is:
	// the page is then the challenge's text alone, and reloads itself when
	// the cluster is up. WaitingPhase is that status's phase.
	Waiting, WaitingPhase string
}

// frame is the page's frame: the challenge's script, or while the cluster
// is not up the one that turns the page live when it is.
func (v pageView) frame() layout.Page {
	if v.Waiting != "" {
		return layout.Page{Title: v.Title, Active: "challenges", Styles: []string{"/static/challenges.css"}, Modules: []string{"/static/starting.js"}}
	}
	return frame(v.Title)
}

// tasksHeading numbers the tasks after Start and the work, which a page
// without the cluster does not show.
func (v pageView) tasksHeading() string {
	if v.Waiting != "" {
		return "Tasks"
	}
	return "3. Tasks"
}

type taskView struct {
	N         int
	ID        string
	TextHTML  string
	HintsHTML []string
	State     judge.State
	Detail    string
	After     []string
	// Question is set on a task answered on the page instead of checked.
	Question *questionView
	// Input is set on a task whose answer the learner types.
	Input *inputView
}

// inputView is an input task's form: a labelled text field and Submit.
// The page holds nothing of the answer: the server judges it.
type inputView struct {
	Label, Shape string
	// FieldID, ShapeID and FeedbackID tie the field to its description and
	// to what the last answer was told (aria-describedby).
	FieldID, ShapeID, FeedbackID string
	AnswerURL                    string
	// Since and Done are the page's, sent back for the no-JS redirect.
	Since, Done string
	// Feedback is what the last answer without JavaScript was told;
	// Invalid says it was refused.
	Feedback string
	Invalid  bool
}

// questionView is a question task's form. Its choices carry no verdict:
// the server grades the answer.
type questionView struct {
	Prompt    string
	Multi     bool
	Choices   []choiceView
	AnswerURL string
	// Since and Done are the page's, sent back for the no-JS redirect.
	Since, Done string
	// Feedback is what the last answer without JavaScript was told.
	Feedback string
}

type choiceView struct {
	InputID, Value, Text string
}

// StateLabel says the task's state in words: the page never shows it by
// colour alone.
func (t taskView) StateLabel() string {
	switch t.State {
	case judge.StateDone:
		return "Done"
	case judge.StateLocked:
		return "Locked"
	}
	return "To do"
}

func (h *Handler) pageView(c *judge.Challenge, ns string, since time.Time, done string) pageView {
	v := pageView{
		ID: c.ID, Title: c.Title, LessonURL: c.LessonURL(), SectionTitle: h.sectionTitle(c),
		HTML: withNamespace(c.HTML, ns), Namespace: ns,
		StatusURL: c.URL() + "/status", StartURL: c.URL() + "/start", WipeSummary: judge.WipeSummary,
	}
	if l, ok := h.opts.Course.Lesson(c.LessonSlug); ok {
		v.LessonTitle = l.Title
	}
	for _, a := range c.Also {
		lt, st := h.titles(a.Slug, a.Section)
		first := len(v.Also) == 0 || v.Also[len(v.Also)-1].LessonTitle != lt
		v.Also = append(v.Also, alsoLink{LessonTitle: lt, SectionTitle: st, URL: a.URL(), FirstOfLesson: first})
	}
	if !since.IsZero() {
		v.Since = strconv.FormatInt(since.UnixMilli(), 10)
	}
	if h.opts.KubeconfigPath != "" && h.opts.KubectlCommand != nil {
		v.Kubeconfig, v.KubectlLine = h.opts.KubeconfigPath, h.opts.KubectlCommand(ns)
		if h.opts.KubeconfigExport != nil {
			v.ExportLine = h.opts.KubeconfigExport(ns)
		}
	}
	for i, t := range c.Tasks {
		tv := taskView{N: i + 1, ID: t.ID, TextHTML: withNamespace(t.TextHTML, ns), State: judge.StateTodo}
		for _, hint := range t.HintsHTML {
			tv.HintsHTML = append(tv.HintsHTML, withNamespace(hint, ns))
		}
		if q := t.Question; q != nil {
			qv := &questionView{Prompt: q.Prompt, Multi: q.Multi(), AnswerURL: c.URL() + "/answer", Since: v.Since, Done: done}
			// The choices in an order of the learner's own (their
			// namespace's), the same at each visit: a no-JS answer draws
			// the page again.
			for _, j := range q.ChoiceOrder(quiz.SeedOf(ns)) {
				ch := q.Choices[j]
				qv.Choices = append(qv.Choices, choiceView{
					InputID: fmt.Sprintf("%s-choice-%d", t.ID, j), Value: strconv.Itoa(j), Text: ch.Text,
				})
			}
			tv.Question = qv
		}
		if t.Input != "" {
			in, _ := judge.LookupInput(t.Input)
			tv.Input = &inputView{
				Label: in.Label, Shape: "Type " + in.Shape + ".",
				FieldID: "answer-" + t.ID, ShapeID: "shape-" + t.ID, FeedbackID: "feedback-" + t.ID,
				AnswerURL: c.URL() + "/answer", Since: v.Since, Done: done,
			}
		}
		v.Tasks = append(v.Tasks, tv)
	}
	return v
}

// answerFeedback puts a no-JS answer's message under question or input
// task id (refused says it was an error); false when id is no such task of
// the page.
func (v *pageView) answerFeedback(id, message string, refused bool) bool {
	for i := range v.Tasks {
		t := &v.Tasks[i]
		switch {
		case t.ID != id:
		case t.Question != nil:
			t.Question.Feedback = message
			return true
		case t.Input != nil:
			t.Input.Feedback, t.Input.Invalid = message, refused
			return true
		}
	}
	return false
}

// apply sets each task's state from an evaluation.
func (v *pageView) apply(states []judge.TaskState) {
	v.Done = 0
	for i := range v.Tasks {
		for _, s := range states {
			if s.ID == v.Tasks[i].ID {
				v.Tasks[i].State, v.Tasks[i].Detail = s.State, s.Detail
			}
		}
		if v.Tasks[i].State == judge.StateDone {
			v.Done++
		}
	}
}

// withNamespace fills the learner's namespace into "$NS" in a challenge's
// rendered HTML, so hints paste as they are. Namespace names are DNS labels
// (lowercase letters, digits, dashes): nothing to escape.
func withNamespace(html, ns string) string {
	return strings.ReplaceAll(html, "$NS", ns)
}
