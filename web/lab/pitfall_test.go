package lab

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/lab/state"
)

// A hidden pitfall's card says "hidden" and selects "keep as it is"; keeping
// changes nothing, and the other choices go to the store as any other.
func TestHiddenPitfallCardAndMenu(t *testing.T) {
	hidden := state.Database{Namespace: "lab-x", Name: "alpha", Engine: "postgres", Replicas: 1, Pitfall: controller.PitfallHidden}
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
