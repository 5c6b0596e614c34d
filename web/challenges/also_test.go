package challenges

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/web/learn"
)

// A challenge's page names every other section it practises, with a link,
// and the list shows each challenge once, under its main lesson.
func TestPageShowsAlsoPractises(t *testing.T) {
	content, err := learn.LoadContent()
	if err != nil {
		t.Fatal(err)
	}
	course, set := content.Course, content.Challenges
	h := &Handler{opts: Options{Course: course, Set: set}}
	withAlso := 0
	for _, c := range set.Challenges {
		var buf bytes.Buffer
		if err := challengePage(h.pageView(c, "lab-x", time.Time{}, "")).Render(context.Background(), &buf); err != nil {
			t.Fatalf("render %s: %v", c.ID, err)
		}
		body := buf.String()
		if len(c.Also) == 0 {
			if strings.Contains(body, "Also practises") {
				t.Errorf("%s: says Also practises with no also", c.ID)
			}
			continue
		}
		withAlso++
		if !strings.Contains(body, "Also practises") {
			t.Errorf("%s: no Also practises line", c.ID)
		}
		for _, a := range c.Also {
			_, heading := h.titles(a.Slug, a.Section)
			if heading == a.Section {
				t.Errorf("%s: also %s has no heading title", c.ID, a.Ref)
			}
			if !strings.Contains(body, `href="`+a.URL()+`"`) || !strings.Contains(body, heading) {
				t.Errorf("%s: page lacks a link to %s titled %q", c.ID, a.URL(), heading)
			}
		}
	}
	if withAlso == 0 {
		t.Fatal("no embedded challenge has an also: the test proves nothing")
	}
	seen := map[string]int{}
	for _, g := range h.listView().Groups {
		for _, it := range g.Items {
			seen[it.ID]++
		}
	}
	for _, c := range set.Challenges {
		if seen[c.ID] != 1 {
			t.Errorf("list shows %s %d times, want once", c.ID, seen[c.ID])
		}
	}
}
