package code

import (
	"slices"

	"github.com/a-h/templ"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/lessons/judge"
)

// exerciseView is one code challenge as the code page lists it: its tasks,
// whose states the page asks the challenge's status for.
type exerciseView struct {
	ID, Title, URL, StatusURL string
	// Starter and StarterTitle are the starting code it begins from.
	Starter, StarterTitle string
	Tasks                 []exerciseTask
}

type exerciseTask struct {
	ID string
	// Text is the task's rendered markdown (judge.Task.TextHTML, from our
	// own embedded files with raw HTML disabled).
	Text templ.Component
}

// exercisesOf lists the challenges that begin from a starting code, in the
// order the page offers the starting codes.
func exercisesOf(set *judge.Set) []exerciseView {
	if set == nil {
		return nil
	}
	var out []exerciseView
	for _, c := range set.Challenges {
		at := starterAt(c.Starter)
		if at < 0 {
			continue
		}
		v := exerciseView{ID: c.ID, Title: c.Title, URL: c.URL(), StatusURL: c.URL() + "/status", Starter: c.Starter, StarterTitle: starters.All[at].Title}
		for _, t := range c.Tasks {
			v.Tasks = append(v.Tasks, exerciseTask{ID: t.ID, Text: templ.Raw(t.TextHTML)})
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b exerciseView) int { return starterAt(a.Starter) - starterAt(b.Starter) })
	return out
}

func starterAt(id string) int {
	return slices.IndexFunc(starters.All, func(s starters.Starter) bool { return s.ID == id })
}
