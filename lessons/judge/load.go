package judge

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/yuin/goldmark"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/content"
	"github.com/oplab-dev/oplab/quiz"
)

// Challenge is one loaded challenge file.
type Challenge struct {
	ID    string
	Title string
	// Lesson is the "slug#section" the challenge practises; LessonSlug and
	// LessonSection are its two halves.
	Lesson, LessonSlug, LessonSection string
	// Also are the other lesson sections the challenge genuinely
	// practises (front matter "also"), each validated as Lesson is.
	Also []LessonRef
	// Prepare names the registered Prepare that builds the start; empty
	// means the start is an empty namespace.
	Prepare string
	// Starter, on a code exercise, is the code page's starting code the
	// challenge begins from (starters.All): the code page lists the
	// challenges that have one beside the editor.
	Starter string
	// Tasks are in dependency order: every task comes after the tasks it
	// names in After.
	Tasks []Task
	// HTML is the rendered markdown body. It comes from our own embedded
	// files with raw HTML disabled, so it is safe to emit unescaped.
	HTML string
	// File is the file the challenge was read from.
	File string
}

// URL is the challenge's page.
func (c *Challenge) URL() string { return "/challenges/" + c.ID }

// LessonURL is the lesson section the challenge practises.
func (c *Challenge) LessonURL() string { return "/lessons/" + c.LessonSlug + "#" + c.LessonSection }

// LessonRef is one "slug#section" a challenge practises.
type LessonRef struct {
	Ref, Slug, Section string
}

// URL is the lesson section's address.
func (r LessonRef) URL() string { return "/lessons/" + r.Slug + "#" + r.Section }

// SectionIn returns the section of lesson slug the challenge practises: its
// main section when that is in slug, else the first of Also that is; ok is
// false when it practises no section of slug.
func (c *Challenge) SectionIn(slug string) (section string, ok bool) {
	if c.LessonSlug == slug {
		return c.LessonSection, true
	}
	for _, a := range c.Also {
		if a.Slug == slug {
			return a.Section, true
		}
	}
	return "", false
}

// Task is one step of a challenge.
type Task struct {
	ID string
	// Text and Hints are markdown as written; TextHTML and HintsHTML are
	// rendered (inline), safe to emit unescaped for the reason HTML is.
	Text      string
	Hints     []string
	TextHTML  string
	HintsHTML []string
	// Check names the registered Check that judges the task against the
	// namespace and trace; Question, instead, is a quiz question the
	// learner answers on the page, graded by Answer. A task has one of the
	// two: a judgement ("is an operator worth it here?") leaves nothing in
	// a cluster to check.
	Check    string
	Question *quiz.Question
	// Input, instead, names the registered Input the learner types an
	// answer for: what a find or read task found, judged by Submit
	// against the namespace and trace.
	Input string
	After []string
}

// frontMatter is a challenge file's YAML head (contract 3).
type frontMatter struct {
	ID      string     `json:"id"`
	Title   string     `json:"title"`
	Lesson  string     `json:"lesson"`
	Also    []string   `json:"also"`
	Prepare string     `json:"prepare"`
	Starter string     `json:"starter"`
	Tasks   []taskYAML `json:"tasks"`
}

type taskYAML struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Hints    []string `json:"hints"`
	Check    string   `json:"check"`
	Question string   `json:"question"`
	Input    string   `json:"input"`
	After    []string `json:"after"`
}

// Resolver checks that a link within oplab leads somewhere; *lessons.Course
// is one. The loader asks it about each challenge's lesson section.
type Resolver interface {
	Resolve(link string) error
}

// Set is every challenge, sorted by ID.
type Set struct {
	Challenges []*Challenge
}

// Get finds a challenge by ID.
func (s *Set) Get(id string) (*Challenge, bool) {
	i := slices.IndexFunc(s.Challenges, func(c *Challenge) bool { return c.ID == id })
	if i < 0 {
		return nil, false
	}
	return s.Challenges[i], true
}

// ForLesson returns the challenges that practise a section of lesson slug,
// as their main lesson or in Also.
func (s *Set) ForLesson(slug string) []*Challenge {
	var out []*Challenge
	for _, c := range s.Challenges {
		if _, ok := c.SectionIn(slug); ok {
			out = append(out, c)
		}
	}
	return out
}

// Load reads every .md file at the root of files and validates it: the
// checks and prepare it names are registered, the questions it names are
// in questions, every `after` names a task of the same challenge that does
// not depend on it, and its lesson section exists (asked of course).
// Every defect is reported, each naming its file and field.
func Load(files fs.FS, course Resolver, questions []quiz.Question) (*Set, error) {
	names, err := fs.Glob(files, "*.md")
	if err != nil {
		return nil, fmt.Errorf("list challenges: %w", err)
	}
	if len(names) == 0 {
		return nil, errors.New("no challenges: the folder holds no .md files")
	}
	md := lessons.Markdown() // as the lessons are rendered
	s := &Set{}
	var errs []error
	for _, name := range names {
		c, err := loadFile(md, files, name, course, questions)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.Challenges = append(s.Challenges, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(s.Challenges, func(a, b *Challenge) int { return strings.Compare(a.ID, b.ID) })
	return s, nil
}

func loadFile(md goldmark.Markdown, files fs.FS, name string, resolver Resolver, questions []quiz.Question) (*Challenge, error) {
	src, err := fs.ReadFile(files, name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	var fm frontMatter
	body, err := lessons.SplitFrontMatter(src, &fm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c, err := fm.challenge(strings.TrimSuffix(path.Base(name), ".md"), resolver, questions)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.File = name
	if c.HTML, err = render(md, body); err != nil {
		return nil, fmt.Errorf("%s: body: %w", name, err)
	}
	for i := range c.Tasks {
		t := &c.Tasks[i]
		if t.TextHTML, err = renderInline(md, t.Text); err != nil {
			return nil, fmt.Errorf("%s: task %q: text: %w", name, t.ID, err)
		}
		for _, h := range t.Hints {
			html, err := renderInline(md, h)
			if err != nil {
				return nil, fmt.Errorf("%s: task %q: hints: %w", name, t.ID, err)
			}
			t.HintsHTML = append(t.HintsHTML, html)
		}
	}
	return c, nil
}

// challenge validates the front matter and builds the Challenge. base is
// the file's name without ".md", which the id must equal.
func (fm frontMatter) challenge(base string, course Resolver, questions []quiz.Question) (*Challenge, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !lessons.ValidSlug(fm.ID) {
		bad("id %q must be lowercase letters, digits and dashes", fm.ID)
	} else if fm.ID != base {
		bad("id %q must equal the file name %q", fm.ID, base)
	}
	if strings.TrimSpace(fm.Title) == "" {
		bad("title is empty")
	}
	main, err := lessonRef("lesson", fm.Lesson, course)
	if err != nil {
		errs = append(errs, err)
	}
	var also []LessonRef
	for i, ref := range fm.Also {
		r, err := lessonRef(fmt.Sprintf("also[%d]", i), ref, course)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ref == fm.Lesson || slices.Contains(fm.Also[:i], ref):
			bad("also[%d] %q repeats a section already named", i, ref)
		default:
			also = append(also, r)
		}
	}
	if fm.Prepare != "" {
		if _, ok := LookupPrepare(fm.Prepare); !ok {
			bad("prepare %q is not registered (RegisterPrepare)", fm.Prepare)
		}
	}
	if fm.Starter != "" && starters.Source(fm.Starter) == "" {
		bad("starter %q is not a starting code of the code page (known: %s)", fm.Starter, strings.Join(starterIDs(), ", "))
	}
	if len(fm.Tasks) == 0 {
		bad("tasks: a challenge needs at least one task")
	}
	tasks := make([]Task, 0, len(fm.Tasks))
	seen := map[string]bool{}
	for i, t := range fm.Tasks {
		where := fmt.Sprintf("tasks[%d] (%s)", i, t.ID)
		switch {
		case !lessons.ValidSlug(t.ID):
			bad("tasks[%d]: id %q must be lowercase letters, digits and dashes", i, t.ID)
		case seen[t.ID]:
			bad("%s: id %q is used by an earlier task", where, t.ID)
		}
		seen[t.ID] = true
		if strings.TrimSpace(t.Text) == "" {
			bad("%s: text is empty", where)
		}
		task := Task{ID: t.ID, Text: t.Text, Hints: t.Hints, Check: t.Check, Input: t.Input, After: t.After}
		var ways []string
		for _, w := range []struct{ field, value string }{{"check", t.Check}, {"question", t.Question}, {"input", t.Input}} {
			if w.value != "" {
				ways = append(ways, fmt.Sprintf("%s %q", w.field, w.value))
			}
		}
		switch {
		case len(ways) == 2:
			bad("%s: names both %s: a task is judged one way", where, strings.Join(ways, " and "))
		case len(ways) > 2:
			bad("%s: names %s: a task is judged one way", where, strings.Join(ways, " and "))
		case len(ways) == 0:
			bad("%s: names neither a check, a question nor an input: say how the task is judged", where)
		case t.Input != "":
			if _, ok := LookupInput(t.Input); !ok {
				bad("%s: input %q is not registered (RegisterInput; known: %s)", where, t.Input, strings.Join(InputNames(), ", "))
			}
		case t.Question != "":
			q, err := quiz.Find(questions, t.Question)
			if err != nil {
				bad("%s: question %q is not a challenge question (lessons/content/quiz/challenge-questions.yaml)", where, t.Question)
			}
			task.Question = &q
		default:
			if _, ok := LookupCheck(t.Check); !ok {
				bad("%s: check %q is not registered (RegisterCheck)", where, t.Check)
			}
		}
		tasks = append(tasks, task)
	}
	for i, t := range fm.Tasks {
		for _, a := range t.After {
			switch {
			case a == t.ID:
				bad("tasks[%d] (%s): after names the task itself", i, t.ID)
			case !seen[a]:
				bad("tasks[%d] (%s): after %q names no task of this challenge", i, t.ID, a)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ordered, err := dependencyOrder(tasks)
	if err != nil {
		return nil, err
	}
	return &Challenge{
		ID: fm.ID, Title: fm.Title, Lesson: fm.Lesson, LessonSlug: main.Slug, LessonSection: main.Section, Also: also,
		Prepare: fm.Prepare, Starter: fm.Starter, Tasks: ordered,
	}, nil
}

func starterIDs() []string {
	var ids []string
	for _, s := range starters.All {
		ids = append(ids, s.ID)
	}
	return ids
}

// lessonRef parses and resolves a "slug#section" named by field (lesson,
// or also[i]).
func lessonRef(field, ref string, course Resolver) (LessonRef, error) {
	slug, section, ok := strings.Cut(ref, "#")
	if !ok || slug == "" || section == "" {
		return LessonRef{}, fmt.Errorf("%s %q must be a lesson slug and a section anchor, as in reconciliation-loop#the-loop", field, ref)
	}
	r := LessonRef{Ref: ref, Slug: slug, Section: section}
	if course != nil {
		if err := course.Resolve(r.URL()); err != nil {
			return LessonRef{}, fmt.Errorf("%s %q: %w", field, ref, err)
		}
	}
	return r, nil
}

// dependencyOrder sorts tasks so that each comes after those it names in
// After, keeping the written order otherwise; a cycle is an error naming
// the tasks in it.
func dependencyOrder(tasks []Task) ([]Task, error) {
	placed := map[string]bool{}
	out := make([]Task, 0, len(tasks))
	for len(out) < len(tasks) {
		progress := false
		for _, t := range tasks {
			if placed[t.ID] || !allPlaced(t.After, placed) {
				continue
			}
			placed[t.ID], progress = true, true
			out = append(out, t)
		}
		if !progress {
			var stuck []string
			for _, t := range tasks {
				if !placed[t.ID] {
					stuck = append(stuck, t.ID)
				}
			}
			return nil, fmt.Errorf("tasks: after forms a cycle among %s", strings.Join(stuck, ", "))
		}
	}
	return out, nil
}

func allPlaced(ids []string, placed map[string]bool) bool {
	for _, id := range ids {
		if !placed[id] {
			return false
		}
	}
	return true
}

func render(md goldmark.Markdown, src []byte) (string, error) {
	var buf bytes.Buffer
	if err := md.Convert(src, &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// renderInline renders a one-paragraph text without its <p> wrapper, for a
// task's text and hints.
func renderInline(md goldmark.Markdown, src string) (string, error) {
	html, err := render(md, []byte(src))
	if err != nil {
		return "", err
	}
	html = strings.TrimSpace(html)
	if inner, ok := strings.CutPrefix(html, "<p>"); ok && strings.Count(html, "<p>") == 1 {
		html = strings.TrimSuffix(inner, "</p>")
	}
	return html, nil
}

// LoadEmbedded loads the challenges shipped in lessons/content/challenges against
// the questions shipped in lessons/content/quiz (read by quiz).
func LoadEmbedded(course Resolver) (*Set, error) {
	bank, err := quiz.Load()
	if err != nil {
		return nil, fmt.Errorf("load the quiz the challenges ask from: %w", err)
	}
	return Load(content.Challenges, course, bank.ChallengeQuestions)
}
