package lab

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Every scenario says what seeing it through is, in a kind progress.js
// knows, about the Database its setup makes; progress.js knows the kinds,
// not the scenarios, which are listed in Go alone.
func TestEveryScenarioSaysWhatSeeingItThroughIs(t *testing.T) {
	src, err := os.ReadFile("../static/progress.js")
	if err != nil {
		t.Fatal(err)
	}
	js := string(src)
	for _, kind := range SeenThroughKinds {
		if !strings.Contains(js, `"`+kind+`": (name) =>`) && !strings.Contains(js, kind+": (name) =>") {
			t.Errorf("progress.js's THROUGH has no rule for %q", kind)
		}
	}
	for _, s := range Scenarios {
		if !slices.Contains(SeenThroughKinds, s.Through.Kind) {
			t.Errorf("scenario %s: seen through by %q, not one of %v", s.Name, s.Through.Kind, SeenThroughKinds)
		}
		if text := s.Setup + " " + strings.Join(s.Watch, " "); s.Through.Database == "" || !strings.Contains(text, s.Through.Database) {
			t.Errorf("scenario %s: seen through on Database %q, which its setup and What to watch do not name", s.Name, s.Through.Database)
		}
	}
}
