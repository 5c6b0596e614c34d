// Package lessons loads the course: lessons and reference pages written as
// markdown with front matter, embedded in the binary and rendered to HTML
// with goldmark. Two fenced-block directives tie the prose to the running
// system:
//
//	```controller:NAME    shows the controller region NAME (see Regions)
//	```live:SCENARIO      a "try it live" box opening /lab?scenario=SCENARIO;
//	                      the block's body says what to watch
//
// A link to screen:NAME marks a phrase that names something on oplab's
// screen, with its exact wording (see Claim): it renders as plain text, and
// a test checks the wording is on that screen.
//
// Links inside the course are checked when it loads, so a renamed section
// breaks a test instead of a learner's click. Scenario names belong to the
// lab (web/lab's Scenarios, the one list); a test in web/ checks every live
// block and lab link of the course against it.
package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/oplab-dev/oplab/lessons/content"
	"sigs.k8s.io/yaml"
)

// Content is the course's markdown, one file per page, at its root.
var Content fs.FS = content.Lessons

// ScenarioURL is the lab link that opens scenario name.
func ScenarioURL(name string) string { return "/lab?scenario=" + url.QueryEscape(name) }

// Kind separates the numbered lessons from the reference pages.
type Kind string

// The kinds of page.
const (
	KindLesson    Kind = "lesson"
	KindReference Kind = "reference"
)

// Lesson is one rendered page of the course.
type Lesson struct {
	Slug    string
	Title   string
	Summary string
	Kind    Kind
	// Order sorts the pages; lessons are numbered by it.
	Order int
	// Minutes is an estimated reading time.
	Minutes int
	// Sections are the level-2 headings, in order, with their anchors.
	Sections []Section
	// Live are the "try it live" actions, in order of appearance.
	Live []Live
	// Code names the controller regions the page shows.
	Code []string
	// HTML is the rendered body. It is produced from our own embedded
	// markdown with raw HTML disabled, so it is safe to emit unescaped.
	HTML string
	// Problems are non-fatal defects, such as a controller region that is
	// not marked (yet); the page shows a note in its place.
	Problems []string

	anchors map[string]bool
	links   []string
	claims  []Claim
	file    string
}

// URL is the page's path.
func (l Lesson) URL() string { return "/lessons/" + l.Slug }

// Section is a level-2 heading.
type Section struct {
	ID    string
	Title string
}

// Live is a "try it live" action, written as a fenced block whose info
// string is "live:SCENARIO LABEL".
type Live struct {
	Scenario string
	// Title labels the button (the LABEL, or DefaultLiveTitle); Text says
	// what to watch for.
	Title, Text string
	// Section is the anchor of the section the action appears in.
	Section string
}

// URL is the lab link of the action.
func (l Live) URL() string { return ScenarioURL(l.Scenario) }

// DefaultLiveTitle labels a live block that names no label.
const DefaultLiveTitle = "Open it in the lab"

// Links are the page's links within oplab, as written.
func (l Lesson) Links() []string { return slices.Clone(l.links) }

// Course is every page, sorted by Order.
type Course struct {
	Lessons []Lesson
}

// frontMatter is the YAML block between the leading "---" lines.
type frontMatter struct {
	Title   string `json:"title"`
	Slug    string `json:"slug"`
	Order   int    `json:"order"`
	Kind    Kind   `json:"kind"`
	Summary string `json:"summary"`
}

// Load reads every .md file at the root of content, renders it, and checks
// the links between pages. code holds the controller's sources from which
// regions are cut (controller.Source). A region that is missing is a
// Problem, not an error, so that a controller mid-rewrite leaves the site
// up; tests insist there are none.
func Load(content, code fs.FS) (*Course, error) {
	regions, err := Regions(code)
	if err != nil {
		return nil, fmt.Errorf("load controller regions: %w", err)
	}
	files, err := fs.Glob(content, "*.md")
	if err != nil {
		return nil, fmt.Errorf("list lessons: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("no lessons: content holds no .md files")
	}
	md := newMarkdown(regions)
	c := &Course{}
	var errs []error
	for _, f := range files {
		l, err := loadFile(md, regions, content, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.Lessons = append(c.Lessons, l)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(c.Lessons, func(a, b Lesson) int { return a.Order - b.Order })
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// loadFile parses and renders one page.
func loadFile(md *markdown, regions map[string]Region, content fs.FS, file string) (Lesson, error) {
	src, err := fs.ReadFile(content, file)
	if err != nil {
		return Lesson{}, fmt.Errorf("read %s: %w", file, err)
	}
	var fm frontMatter
	body, err := SplitFrontMatter(src, &fm)
	if err != nil {
		return Lesson{}, fmt.Errorf("%s: %w", file, err)
	}
	if err := fm.validate(); err != nil {
		return Lesson{}, fmt.Errorf("%s: %w", file, err)
	}
	l := Lesson{Slug: fm.Slug, Title: fm.Title, Summary: fm.Summary, Kind: fm.Kind, Order: fm.Order, file: file}
	if err := md.render(&l, body, regions); err != nil {
		return Lesson{}, fmt.Errorf("%s: %w", file, err)
	}
	l.Minutes = max(1, (len(strings.Fields(string(body)))+199)/200)
	return l, nil
}

// SplitFrontMatter decodes the YAML front matter at the top of src into fm
// and returns the markdown body after it. Unknown fields are errors, so a
// misspelt field does not vanish quietly. The challenges' files
// (lessons/judge) share the format.
func SplitFrontMatter(src []byte, fm any) ([]byte, error) {
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(src, []byte("---\n"))
	if !ok {
		return nil, errors.New(`front matter missing: the file must start with a "---" line`)
	}
	head, body, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return nil, errors.New(`front matter not closed: no second "---" line`)
	}
	if err := yaml.UnmarshalStrict(head, fm); err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	return body, nil
}

// validate names the first missing or malformed field.
func (fm frontMatter) validate() error {
	switch {
	case fm.Title == "":
		return errors.New("front matter: title is empty")
	case fm.Summary == "":
		return errors.New("front matter: summary is empty")
	case !ValidSlug(fm.Slug):
		return fmt.Errorf("front matter: slug %q must be lowercase letters, digits and dashes", fm.Slug)
	case fm.Order <= 0:
		return fmt.Errorf("front matter: order %d must be a positive number", fm.Order)
	case fm.Kind != KindLesson && fm.Kind != KindReference:
		return fmt.Errorf("front matter: kind %q must be %q or %q", fm.Kind, KindLesson, KindReference)
	}
	return nil
}

// Plural is n and the noun, with an s when n is not 1: "1 replica", "3
// replicas". The course's nouns all take an s.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// ValidSlug reports whether s is a slug or ID as the course uses them: lower-case
// letters, digits and inner hyphens. Lessons and quiz data share the rule.
func ValidSlug(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// check finds duplicate slugs and orders and resolves every internal link.
func (c *Course) check() error {
	var errs []error
	slugs := map[string]string{}
	orders := map[int]string{}
	for _, l := range c.Lessons {
		if prev, dup := slugs[l.Slug]; dup {
			errs = append(errs, fmt.Errorf("%s: slug %q is also used by %s", l.file, l.Slug, prev))
		}
		if prev, dup := orders[l.Order]; dup {
			errs = append(errs, fmt.Errorf("%s: order %d is also used by %s", l.file, l.Order, prev))
		}
		slugs[l.Slug], orders[l.Order] = l.file, l.file
	}
	for _, l := range c.Lessons {
		for _, link := range l.links {
			if err := c.Resolve(link); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", l.file, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Lesson finds a page by slug.
func (c *Course) Lesson(slug string) (Lesson, bool) {
	i := slices.IndexFunc(c.Lessons, func(l Lesson) bool { return l.Slug == slug })
	if i < 0 {
		return Lesson{}, false
	}
	return c.Lessons[i], true
}

// Kind returns the pages of one kind, in order.
func (c *Course) Kind(k Kind) []Lesson {
	var out []Lesson
	for _, l := range c.Lessons {
		if l.Kind == k {
			out = append(out, l)
		}
	}
	return out
}

// Neighbours returns the pages before and after slug in course order;
// ok is false at either end.
func (c *Course) Neighbours(slug string) (prev, next Lesson, hasPrev, hasNext bool) {
	i := slices.IndexFunc(c.Lessons, func(l Lesson) bool { return l.Slug == slug })
	if i < 0 {
		return Lesson{}, Lesson{}, false, false
	}
	if i > 0 {
		prev, hasPrev = c.Lessons[i-1], true
	}
	if i+1 < len(c.Lessons) {
		next, hasNext = c.Lessons[i+1], true
	}
	return prev, next, hasPrev, hasNext
}

// Problems lists every page's non-fatal defects, prefixed with its file.
func (c *Course) Problems() []string {
	var out []string
	for _, l := range c.Lessons {
		for _, p := range l.Problems {
			out = append(out, l.file+": "+p)
		}
	}
	return out
}

// Resolve checks that link, a path within oplab, leads somewhere real: a
// course page and, when it has a #fragment, one of that page's headings; a
// lab scenario (by syntax: the names are the lab's, checked by web's
// tests); or one of the top-level pages.
func (c *Course) Resolve(link string) error {
	u, err := url.Parse(link)
	if err != nil {
		return fmt.Errorf("link %q: %w", link, err)
	}
	if u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/") {
		return fmt.Errorf("link %q is not a path within oplab", link)
	}
	switch {
	case u.Path == "/lab":
		return resolveLab(link, u)
	case strings.HasPrefix(u.Path, "/lessons/"):
		return c.resolveLesson(link, u)
	case u.Path == "/challenges" || strings.HasPrefix(u.Path, "/challenges/") && ValidSlug(strings.TrimPrefix(u.Path, "/challenges/")):
		// By syntax, as the lab's scenarios: the challenges are loaded
		// against the course, and web's tests check each link's target.
		return nil
	case slices.Contains([]string{"/", "/lessons", "/quiz", "/flashcards", "/code"}, u.Path):
		if u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("link %q: %s takes no query or fragment", link, u.Path)
		}
		return nil
	}
	return fmt.Errorf("link %q leads to no oplab page", link)
}

func resolveLab(link string, u *url.URL) error {
	q := u.Query()
	if len(q) == 0 {
		return nil
	}
	if len(q) != 1 || len(q["scenario"]) != 1 || q.Get("scenario") == "" {
		return fmt.Errorf("link %q: the lab takes only one scenario parameter", link)
	}
	return nil
}

func (c *Course) resolveLesson(link string, u *url.URL) error {
	slug := strings.TrimPrefix(u.Path, "/lessons/")
	l, ok := c.Lesson(slug)
	if !ok {
		return fmt.Errorf("link %q: no lesson has slug %q", link, slug)
	}
	if u.Fragment != "" && !l.anchors[u.Fragment] {
		return fmt.Errorf("link %q: lesson %q has no section #%s", link, slug, u.Fragment)
	}
	return nil
}
