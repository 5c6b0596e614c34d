package trace

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oplab-dev/oplab/controller"
)

// TestOlderStatesKeepOnlyTheirView: a state published with its view (the
// card's HTML beside the view model, and the view model alone) goes out
// whole to the viewers connected, and stays whole while it is its object's
// latest. Once a newer state arrives, the ring keeps the older one as its
// view alone, packed against the newer view: a fresh viewer gets only the
// latest state of each object, an export every state back as its view
// model, and the ring's bytes hold one card, not one per change.
func TestOlderStatesKeepOnlyTheirView(t *testing.T) {
	h := newHarness(t, RecorderOptions{})
	ref := controller.ObjectRef{Kind: "Database", Namespace: "a", Name: "db"}
	card := strings.Repeat("<p>card</p>", 1000)
	// A view model much like the lab's: the same long text in every
	// version, one field changing.
	viewOf := func(replicas int) string {
		return fmt.Sprintf(`{"events":%q,"replicas":%d}`, strings.Repeat("event text ", 200), replicas)
	}
	publish := func(replicas int) {
		view := viewOf(replicas)
		h.rec.PublishRendered(ref, []byte(view[:len(view)-1]+fmt.Sprintf(`,"html":%q}`, card)), []byte(view))
	}
	live := h.dial("a", -1)
	h.waitClients(1)                                  // joined before the first state: it gets every one live
	publish(1)                                        // 1
	h.rec.Emit(step("a", "db", controller.StepEvent)) // 2
	publish(2)                                        // 3
	publish(3)                                        // 4
	waitFor(t, "4 messages", func() bool { return h.rec.Stats().Seq == 4 })

	for _, m := range live.readN(4) {
		if m.Type == TypeState && !strings.Contains(string(m.State), card) {
			t.Errorf("live state %d = %.80s…; want it whole, with its card", m.Seq, m.State)
		}
	}
	fresh := h.dial("a", -1).readN(2)
	if diff := cmp.Diff([]uint64{2, 4}, seqs(fresh)); diff != "" {
		t.Errorf("a fresh viewer's catch-up seqs (-want +got): the older states left out\n%s", diff)
	}
	if got := string(fresh[1].State); !strings.Contains(got, card) || !strings.Contains(got, `"replicas":3`) {
		t.Errorf("the catch-up's state is %.80q…; want the latest, whole", got)
	}
	exported := decoded(t, h.rec.Export("a").Messages)
	if diff := cmp.Diff([]uint64{1, 2, 3, 4}, seqs(exported)); diff != "" {
		t.Fatalf("export seqs (-want +got):\n%s", diff)
	}
	for i, want := range map[int]string{0: viewOf(1), 2: viewOf(2)} {
		if got := string(exported[i].State); got != want {
			t.Errorf("export: the older state seq %d is %.80q; want its view model alone, %.80q", exported[i].Seq, got, want)
		}
	}
	if got := string(exported[3].State); !strings.Contains(got, card) {
		t.Errorf("export: the latest state is %.80q…; want it whole", got)
	}
	// The ring counts what it holds: one card and one view whole, and two
	// older views of a few dozen bytes each.
	h.stop()
	r := h.rec.spaces["a"].ring
	held := 0
	for _, e := range r.after(0) {
		held += e.size()
	}
	if whole := len(card) + 2*len(viewOf(3)); r.bytes != held || r.bytes > whole+1000 {
		t.Errorf("the ring counts %d bytes and holds %d; want them equal and at most a card and two views (%d) and 1000 more", r.bytes, held, whole)
	}
}

// TestOlderStatesAcrossADeletion: the state before a deletion has no newer
// view to be packed against; it is kept as its view alone, and the states
// before it, and those of a Database made again with the same name, are
// exported as they were.
func TestOlderStatesAcrossADeletion(t *testing.T) {
	h := newHarness(t, RecorderOptions{})
	ref := controller.ObjectRef{Kind: "Database", Namespace: "a", Name: "db"}
	publish := func(v string) {
		h.rec.PublishRendered(ref, []byte(`{"v":"`+v+`","html":"<p>`+v+`</p>"}`), []byte(`{"v":"`+v+`"}`))
	}
	publish("first")
	publish("second")
	h.rec.PublishRendered(ref, nil, nil)
	publish("again")
	publish("latest")
	waitFor(t, "5 messages", func() bool { return h.rec.Stats().Seq == 5 })
	var got []string
	for _, m := range decoded(t, h.rec.Export("a").Messages) {
		got = append(got, string(m.State))
	}
	want := []string{`{"v":"first"}`, `{"v":"second"}`, "", `{"v":"again"}`, `{"v":"latest","html":"<p>latest</p>"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exported states (-want +got):\n%s", diff)
	}
	if fresh := h.dial("a", -1).readN(2); fresh[0].Seq != 3 || fresh[1].Seq != 5 {
		t.Errorf("a fresh viewer got seqs %v; want the deletion (3) and the latest state (5)", seqs(fresh))
	}
}

// TestOlderStatesOfANamespaceAndTheGlobalOnes: an export merges the
// namespace's messages with the global ones; a global object with the same
// kind and name, published between two states of the namespace's, must not
// become the older state's dictionary.
func TestOlderStatesOfANamespaceAndTheGlobalOnes(t *testing.T) {
	h := newHarness(t, RecorderOptions{})
	mine := controller.ObjectRef{Kind: "Database", Namespace: "a", Name: "db"}
	global := controller.ObjectRef{Kind: "Database", Name: "db"}
	publish := func(ref controller.ObjectRef, v string) {
		view := fmt.Sprintf(`{"v":%q,"text":%q}`, v, strings.Repeat("the same words in every version ", 20))
		h.rec.PublishRendered(ref, []byte(view[:len(view)-1]+`,"html":"<p/>"}`), []byte(view))
	}
	publish(mine, "mine 1")
	publish(global, "global 1")
	publish(global, "global 2")
	publish(mine, "mine 2")
	waitFor(t, "4 messages", func() bool { return h.rec.Stats().Seq == 4 })
	var got []string
	for _, m := range decoded(t, h.rec.Export("a").Messages) {
		var v struct{ V string }
		if err := json.Unmarshal(m.State, &v); err != nil {
			t.Fatalf("state seq %d: %v: %.80s", m.Seq, err, m.State)
		}
		got = append(got, v.V)
	}
	if diff := cmp.Diff([]string{"mine 1", "global 1", "global 2", "mine 2"}, got); diff != "" {
		t.Errorf("exported states (-want +got):\n%s", diff)
	}
}

// TestRingKeepsNoCardWithARenderer: with RecorderOptions.Card the ring
// keeps no rendered HTML at all, not even on an object's latest state. The
// viewers connected when a state is published get the card it was
// published with; a viewer who connects later gets the latest state with
// its card drawn again by Card from the view model; an export carries view
// models; a card that cannot be drawn goes out as its view alone.
func TestRingKeepsNoCardWithARenderer(t *testing.T) {
	var drawn []string // by Run's goroutine; read once it has stopped
	var fail atomic.Bool
	h := newHarness(t, RecorderOptions{Card: func(kind string, view json.RawMessage) (json.RawMessage, error) {
		drawn = append(drawn, kind)
		if fail.Load() {
			return nil, fmt.Errorf("no card for you")
		}
		return json.RawMessage(string(view[:len(view)-1]) + `,"html":"<p>drawn again</p>"}`), nil
	}})
	ref := controller.ObjectRef{Kind: "Database", Namespace: "a", Name: "db"}
	card := strings.Repeat("<p>card</p>", 1000)
	publish := func(replicas int) {
		view := fmt.Sprintf(`{"replicas":%d}`, replicas)
		h.rec.PublishRendered(ref, []byte(view[:len(view)-1]+fmt.Sprintf(`,"html":%q}`, card)), []byte(view))
	}
	live := h.dial("a", -1)
	h.waitClients(1)
	publish(1) // 1
	publish(2) // 2
	waitFor(t, "2 messages", func() bool { return h.rec.Stats().Seq == 2 })
	for _, m := range live.readN(2) {
		if !strings.Contains(string(m.State), card) {
			t.Errorf("live state %d = %.80s…; want the card it was published with", m.Seq, m.State)
		}
	}
	fresh := h.dial("a", -1).readN(1)
	if got, want := string(fresh[0].State), `{"replicas":2,"html":"<p>drawn again</p>"}`; got != want {
		t.Errorf("a fresh viewer's latest state = %.120s; want %s, drawn again", got, want)
	}
	if got := string(decoded(t, h.rec.Export("a").Messages)[1].State); got != `{"replicas":2}` {
		t.Errorf("export: the latest state = %.80s; want its view model alone", got)
	}
	fail.Store(true)
	publish(3) // 3
	waitFor(t, "3 messages", func() bool { return h.rec.Stats().Seq == 3 })
	// The catch-up built for the viewer before (seq 2), then seq 3.
	if got := string(h.dial("a", -1).readN(2)[1].State); got != `{"replicas":3}` {
		t.Errorf("a card that cannot be drawn: the state sent = %.80s; want the view alone", got)
	}
	h.stop()
	for _, e := range h.rec.spaces["a"].ring.after(0) {
		if strings.Contains(string(e.raw), "card</p>") {
			t.Errorf("the ring holds a card in seq %d: %.80s", e.seq, e.raw)
		}
	}
	if len(drawn) == 0 || drawn[0] != "Database" {
		t.Errorf("Card was called for %v; want the Database", drawn)
	}
}
