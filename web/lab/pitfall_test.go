package lab

import (
	"encoding/json"
	"html/template"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// A hidden pitfall's card says "hidden" and selects "keep as it is"; keeping
// changes nothing, and the other choices go to the store as any other.
func TestHiddenPitfallCardAndMenu(t *testing.T) {
	hidden := dbview.Database{Namespace: "lab-x", Name: "alpha", Engine: "postgres", Replicas: 1, Pitfall: controller.PitfallHidden}
	h := newHarness(t, hidden)
	page := h.get("/lab").Body.String()
	_, card, ok := strings.Cut(page, `id="db-alpha"`)
	if !ok {
		t.Fatal("no card of alpha on the page")
	}
	card, _, _ = strings.Cut(card, "</article>")
	if !strings.Contains(card, "pitfall: hidden") || !strings.Contains(card, hiddenPitfallNote) {
		t.Errorf("card lacks the hidden pill or its note:\n%s", card)
	}
	selected := regexp.MustCompile(`<option[^>]*\bselected\b[^>]*>([^<]*)`).FindAllStringSubmatch(card, -1)
	if len(selected) != 1 || selected[0][1] != "keep as it is (hidden)" {
		t.Errorf("selected options %q, want only keep as it is (hidden)", selected)
	}

	w := h.post("/lab/databases/alpha/pitfall", url.Values{"pitfall": {keepHiddenPitfall}}, true)
	var res Result
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || w.Code != 200 || !strings.Contains(res.Message, "as it was") {
		t.Errorf("keep = %d %s (%v), want 200 saying it was left as it was", w.Code, w.Body, err)
	}
	if len(h.store.calls) != 0 {
		t.Errorf("keep called the store: %q", h.store.calls)
	}
	h.post("/lab/databases/alpha/pitfall", url.Values{"pitfall": {""}}, true)
	h.post("/lab/databases/alpha/pitfall", url.Values{"pitfall": {controller.PitfallDropEvents}}, true)
	if want := "pitfall alpha |pitfall alpha drop-events"; strings.Join(h.store.calls, "|") != want {
		t.Errorf("store calls = %q, want %q", h.store.calls, want)
	}
}

// Each pitfall's description is on the page, not only in a tooltip: under
// the create form's menu, all of them; on a card, the one switched on.
// A hidden pitfall's card says nothing of it.
func TestPitfallDescriptionsOnThePage(t *testing.T) {
	on := dbview.Database{Namespace: "lab-x", Name: "alpha", Engine: "postgres", Replicas: 1, Pitfall: controller.PitfallDropEvents}
	hidden := dbview.Database{Namespace: "lab-x", Name: "beta", Engine: "postgres", Replicas: 1, Pitfall: controller.PitfallHidden}
	page := newHarness(t, on, hidden).get("/lab").Body.String()
	help, _, ok := strings.Cut(page, "</details>")
	if _, help, ok = strings.Cut(help, `class="pitfall-help"`); !ok {
		t.Fatal("no pitfall help on the page")
	}
	for _, pf := range controller.Pitfalls {
		if d := template.HTMLEscapeString(pf.Description); !strings.Contains(help, d[:40]) {
			t.Errorf("the help under the menu lacks %s's description", pf.Name)
		}
	}
	card := func(name string) string { return cardIn(t, page, name) }
	var drop controller.PitfallInfo
	for _, pf := range controller.Pitfalls {
		if pf.Name == controller.PitfallDropEvents {
			drop = pf
		}
	}
	if c := card("alpha"); !strings.Contains(c, `class="hint small pitfall-now"`) || !strings.Contains(c, template.HTMLEscapeString(drop.Description)[:40]) {
		t.Errorf("alpha's card does not say what its pitfall does:\n%s", c)
	}
	if c := card("beta"); strings.Contains(c, "pitfall-now") {
		t.Errorf("beta's hidden pitfall is described on its card:\n%s", c)
	}
}

// Of Pause and Resume, the one that does not apply is disabled on load,
// and the line after them says why.
func TestPauseAndResumeOnlyWhenTheyApply(t *testing.T) {
	db := dbview.Database{Namespace: "lab-x", Name: "alpha", Engine: "postgres", Replicas: 1}
	page := newHarness(t, db).get("/lab").Body.String()
	button := regexp.MustCompile(`<button[^>]*data-controller="(stop|start)"[^>]*>`)
	disabled := map[string]bool{}
	for _, m := range button.FindAllStringSubmatch(page, -1) {
		disabled[m[1]] = strings.Contains(m[0], " disabled")
	}
	if len(disabled) != 2 || disabled["stop"] || !disabled["start"] {
		t.Errorf("not paused: disabled %v, want only Resume (start) disabled", disabled)
	}
	if !strings.Contains(page, `id="pause-why"`) || !strings.Contains(page, pauseWhy(false)) {
		t.Error("the page does not say why Resume is disabled")
	}
}
