package web

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/lab"
)

// scenarioLinkErrors checks every "try it live" block, every lab link in
// the lessons and every quiz demo against lab.Scenarios, the one list of
// scenario names, and names each link that leads nowhere.
func scenarioLinkErrors(course *lessons.Course, bank quiz.Bank) []string {
	var bad []string
	check := func(where, link string) {
		u, err := url.Parse(link)
		if err != nil || u.Path != "/lab" || !u.Query().Has("scenario") {
			return
		}
		name := u.Query().Get("scenario")
		if _, ok := lab.FindScenario(name); !ok {
			bad = append(bad, fmt.Sprintf("%s: link %s names scenario %q, which is not in web/lab's Scenarios", where, link, name))
		}
	}
	for _, l := range course.Lessons {
		for _, live := range l.Live {
			check(fmt.Sprintf("lesson %s, live block in #%s", l.Slug, live.Section), live.URL())
		}
		for _, link := range l.Links() {
			check("lesson "+l.Slug, link)
		}
	}
	for _, q := range bank.Questions {
		check("quiz question "+q.ID+" (demo)", q.DemoURL())
	}
	return bad
}

func TestEveryScenarioLinkNamesARealScenario(t *testing.T) {
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range scenarioLinkErrors(course, bank) {
		t.Error(e)
	}
	// The course links every scenario somewhere, or the lab offers one
	// nobody is sent to.
	linked := map[string]bool{}
	for _, l := range course.Lessons {
		for _, live := range l.Live {
			linked[live.Scenario] = true
		}
	}
	for _, q := range bank.Questions {
		linked[q.Demo] = true
	}
	for _, s := range lab.Scenarios {
		if !linked[s.Name] {
			t.Errorf("scenario %s is linked from no lesson and no quiz question", s.Name)
		}
	}
}

// The check must fail, naming the link, for each kind of link.
func TestScenarioLinkCheckNamesTheBadLink(t *testing.T) {
	const front = "---\ntitle: T\nslug: s\nsummary: x\nkind: lesson\norder: 1\n---\n"
	md := front + "## Sec\n\n```live:meltdown Melt it\nwatch\n```\n\n[go](/lab?scenario=fission)\n\n```live:finalizer Delete\nwatch\n```\n"
	course, err := lessons.Load(fstest.MapFS{"a.md": {Data: []byte(md)}}, fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	bank := quiz.Bank{Questions: []quiz.Question{{ID: "q1", Demo: "fusion"}, {ID: "q2", Demo: "finalizer"}}}
	got := strings.Join(scenarioLinkErrors(course, bank), "\n")
	for _, want := range []string{
		`lesson s, live block in #sec: link /lab?scenario=meltdown names scenario "meltdown"`,
		`lesson s: link /lab?scenario=fission names scenario "fission"`,
		`quiz question q1 (demo): link /lab?scenario=fusion names scenario "fusion"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"finalizer"`) || strings.Count(got, "\n") != 2 {
		t.Errorf("want exactly the three bad links, got:\n%s", got)
	}
}

// Lesson 1 opens the lab on a normal reconcile before any pitfall.
func TestFirstLessonFirstShowsANormalReconcile(t *testing.T) {
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	first := course.Lessons[0]
	if len(first.Live) == 0 || first.Live[0].Scenario != "first-reconcile" {
		t.Errorf("lesson %s: first live block %+v, want first-reconcile", first.Slug, first.Live)
	}
}
