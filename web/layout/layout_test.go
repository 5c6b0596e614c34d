package layout

import (
	"bytes"
	"context"
	"regexp"
	"testing"
)

// The nav's first link is the site's name and links home; the current page
// is the one link marked aria-current. Labelled "Home" and bold, the first
// link read as a second current page beside the underlined one.
func TestNavNamesTheSiteAndMarksOneCurrentPage(t *testing.T) {
	links := regexp.MustCompile(`<a href="([^"]*)"( aria-current="page")?>([^<]*)</a>`)
	for _, active := range []string{"home", "quiz"} {
		var buf bytes.Buffer
		if err := Base(Page{Title: "T", Active: active}).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		nav := buf.String()[bytes.Index(buf.Bytes(), []byte(`<nav aria-label="Main">`)):]
		nav = nav[:bytes.Index([]byte(nav), []byte(`</nav>`))]
		found := links.FindAllStringSubmatch(nav, -1)
		if len(found) != len(navItems) {
			t.Fatalf("active %s: %d nav links, want %d: %s", active, len(found), len(navItems), nav)
		}
		if found[0][1] != "/" || found[0][3] != "oplab" {
			t.Errorf("active %s: the first link is %q to %s, want the site's name, oplab, to /", active, found[0][3], found[0][1])
		}
		var current []string
		for i, l := range found {
			if l[2] != "" {
				current = append(current, l[3])
				if navItems[i].key != active {
					t.Errorf("active %s: %q is marked current", active, l[3])
				}
			}
		}
		if len(current) != 1 {
			t.Errorf("active %s: current links %q, want one", active, current)
		}
	}
}
