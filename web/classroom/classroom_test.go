package classroom

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// recorder keeps what the Classroom published.
type recorder struct {
	mu     sync.Mutex
	states []State
	refs   []controller.ObjectRef
}

func (r *recorder) PublishState(obj controller.ObjectRef, raw json.RawMessage) {
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, s)
	r.refs = append(r.refs, obj)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.states)
}

func (r *recorder) last() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states[len(r.states)-1]
}

// manualClock is an After whose intervals end when the test says so.
type manualClock struct{ fire chan time.Time }

func (m *manualClock) after(time.Duration) <-chan time.Time { return m.fire }

// newTest returns a Classroom whose cooldown ends only on tick.
func newTest(t *testing.T) (*Classroom, *recorder, func()) {
	t.Helper()
	rec := &recorder{}
	clk := &manualClock{fire: make(chan time.Time)}
	c := New(rec, Options{After: clk.after, Now: func() time.Time { return time.UnixMilli(1000) }})
	t.Cleanup(c.Close)
	tick := func() {
		t.Helper()
		select {
		case clk.fire <- time.Now():
		case <-time.After(5 * time.Second):
			t.Fatal("no interval was running: the last change did not start one")
		}
		c.State() // the tick has been handled once this round trip returns
	}
	return c, rec, tick
}

func TestPublishesAtOnceThenCoalesces(t *testing.T) {
	c, rec, tick := newTest(t)
	c.Present("lab-a", "Ada")
	if n := rec.count(); n != 1 {
		t.Fatalf("after Present: %d publications, want 1 (the first change goes out at once)", n)
	}
	for i := range 50 {
		if err := c.Show("lab-a", View{Path: "/lab", Speed: 1, Paused: true, Seq: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := rec.count(); n != 1 {
		t.Fatalf("50 steps within one interval: %d publications, want still 1", n)
	}
	tick()
	if n := rec.count(); n != 2 {
		t.Fatalf("after the interval: %d publications, want 2 (the coalesced steps)", n)
	}
	if got := rec.last(); got.View == nil || got.View.Seq != 50 || !got.View.Paused {
		t.Fatalf("coalesced publication = %+v, want the latest view (seq 50, paused)", got.View)
	}
	tick() // nothing changed since: nothing to publish
	if n := rec.count(); n != 2 {
		t.Fatalf("a quiet interval published: %d publications, want 2", n)
	}
	// The cooldown is over: the next change goes out at once again.
	c.Narrate(Narration{Demo: "tour", Step: 1, Of: 5, Text: "Create a Database"})
	if n := rec.count(); n != 3 {
		t.Fatalf("a change after a quiet interval: %d publications, want 3", n)
	}
	for i, ref := range rec.refs {
		if ref != (controller.ObjectRef{Kind: "Classroom", Name: "presenter"}) {
			t.Errorf("publication %d as %+v: want the global Classroom/presenter (no namespace)", i, ref)
		}
	}
}

func TestUnchangedIsNotPublished(t *testing.T) {
	c, rec, tick := newTest(t)
	c.StopPresenting() // nobody presents: no change
	c.Narrate(Narration{})
	if n := rec.count(); n != 0 {
		t.Fatalf("no-op changes published %d times", n)
	}
	c.Present("lab-a", "")
	tick()
	v := View{Path: "/lab?scenario=first-reconcile", Speed: 0.5, Selected: "shop"}
	if err := c.Show("lab-a", v); err != nil {
		t.Fatal(err)
	}
	tick()
	if err := c.Show("lab-a", v); err != nil { // the same view again
		t.Fatal(err)
	}
	if n := rec.count(); n != 2 {
		t.Fatalf("%d publications, want 2 (Present, the one new view)", n)
	}
	if got := rec.last(); got.Name != DefaultPresenterName || *got.View != v {
		t.Fatalf("published %+v / %+v, want %q and %+v", got, got.View, DefaultPresenterName, v)
	}
}

func TestOnlyThePresenterUpdatesTheView(t *testing.T) {
	c, _, _ := newTest(t)
	v := View{Path: "/lab", Speed: 1}
	if err := c.Show("lab-a", v); !errors.Is(err, ErrNotPresenter) {
		t.Fatalf("Show with nobody presenting = %v, want ErrNotPresenter", err)
	}
	c.Present("lab-a", "Ada")
	if err := c.Show("lab-b", v); !errors.Is(err, ErrNotPresenter) {
		t.Fatalf("Show from another namespace = %v, want ErrNotPresenter", err)
	}
	if err := c.Show("lab-a", v); err != nil {
		t.Fatalf("Show from the presenter: %v", err)
	}
	if ns, ok := c.Presenting(); !ok || ns != "lab-a" {
		t.Fatalf("Presenting() = %q, %v", ns, ok)
	}
	c.StopPresenting()
	if _, ok := c.Presenting(); ok {
		t.Fatal("still presenting after StopPresenting")
	}
	if err := c.Show("lab-a", v); !errors.Is(err, ErrNotPresenter) {
		t.Fatalf("Show after StopPresenting = %v, want ErrNotPresenter", err)
	}
}

func TestViewValidation(t *testing.T) {
	ok := View{Selected: "shop", Path: "/lab?scenario=finalizer", Speed: 0.25, Paused: true, Seq: 9}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid view: %v", err)
	}
	for name, tc := range map[string]struct {
		v    View
		want string
	}{
		"bad name":       {View{Selected: "Shop!", Path: "/lab", Speed: 1}, `selected "Shop!"`},
		"no path":        {View{Path: "", Speed: 1}, `path ""`},
		"other site":     {View{Path: "https://evil.example/", Speed: 1}, `path "https://evil.example/"`},
		"protocol-rel":   {View{Path: "//evil.example/lab", Speed: 1}, "not a local path"},
		"backslash":      {View{Path: `/\evil.example`, Speed: 1}, "not a local path"},
		"javascript":     {View{Path: "javascript:alert(1)", Speed: 1}, "not a local path"},
		"speed zero":     {View{Path: "/lab"}, "speed 0"},
		"speed too fast": {View{Path: "/lab", Speed: 4}, "speed 4"},
		"long path":      {View{Path: "/" + strings.Repeat("a", MaxPathLen), Speed: 1}, "at most 512"},
	} {
		err := tc.v.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error naming %q", name, err, tc.want)
		}
	}
}

func TestSendEveryone(t *testing.T) {
	c, rec, tick := newTest(t)
	for _, bad := range []string{"", "lab", "http://x/lab", "//x", "/lab\n", "/a b"} {
		err := c.SendEveryone(bad)
		if err == nil || !strings.Contains(err.Error(), strings.TrimSpace(strings.ReplaceAll(bad, "\n", ""))) {
			t.Errorf("SendEveryone(%q) = %v, want an error naming it", bad, err)
		}
	}
	if n := rec.count(); n != 0 {
		t.Fatalf("refused gotos published %d times", n)
	}
	if err := c.SendEveryone("/lab?scenario=finalizer"); err != nil {
		t.Fatal(err)
	}
	first := rec.last().Goto
	tick()
	if err := c.SendEveryone("/learn/reconciliation-loop"); err != nil {
		t.Fatal(err)
	}
	second := rec.last().Goto
	if first == nil || second == nil || second.ID <= first.ID || second.Href != "/learn/reconciliation-loop" {
		t.Fatalf("gotos %+v then %+v: want a new, larger id for each", first, second)
	}
	// A goto is not a presentation.
	if rec.last().Presenting {
		t.Fatal("SendEveryone started a presentation")
	}
}

func TestNarrationClearsWithEmptyText(t *testing.T) {
	c, rec, tick := newTest(t)
	c.Narrate(Narration{Demo: "tour", Step: 2, Of: 5, Text: "Scale to 3", Paused: true})
	if got := rec.last().Narration; got == nil || got.Text != "Scale to 3" || !got.Paused {
		t.Fatalf("narration = %+v", got)
	}
	tick()
	c.Narrate(Narration{Demo: "tour"})
	if got := rec.last().Narration; got != nil || rec.count() != 2 {
		t.Fatalf("after an empty Text: narration %+v, %d publications; want none, 2", got, rec.count())
	}
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"":                       DefaultPresenterName,
		"  \t ":                  DefaultPresenterName,
		" Ada  Lovelace ":        "Ada Lovelace",
		"Bob\x00\x1b[31m":        "Bob [31m",
		strings.Repeat("é", 100): strings.Repeat("é", MaxNameLen),
	} {
		if got := CleanName(in); got != want {
			t.Errorf("CleanName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCloseStopsTheGoroutine(t *testing.T) {
	c := New(&recorder{}, Options{})
	c.Close()
	done := make(chan struct{})
	go func() {
		c.Present("lab-a", "Ada") // must not block after Close
		_, _ = c.Presenting()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("calls after Close blocked")
	}
}
