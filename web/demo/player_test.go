package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/classroom"
)

// These tests drive the player's state machine with scripts of their own,
// whose steps the test releases one by one: they count steps, never time.
// The real demos are played on the real cluster by web/e2e/demo_test.go.

type room struct {
	mu   sync.Mutex
	said []classroom.Narration
}

func (r *room) Narrate(n classroom.Narration) { r.mu.Lock(); r.said = append(r.said, n); r.mu.Unlock() }
func (r *room) all() []classroom.Narration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]classroom.Narration(nil), r.said...)
}

type sink struct {
	mu    sync.Mutex
	steps []controller.Step
}

func (s *sink) Emit(st controller.Step) { s.mu.Lock(); s.steps = append(s.steps, st); s.mu.Unlock() }
func (s *sink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.steps {
		out = append(out, st.Message)
	}
	return out
}

type fakeController struct {
	mu      sync.Mutex
	stopped bool
	paused  map[string]bool
}

func (c *fakeController) Running() bool { return !c.stopped }
func (c *fakeController) PauseNamespace(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused == nil {
		c.paused = map[string]bool{}
	}
	c.paused[ns] = true
}
func (c *fakeController) ResumeNamespace(ns string) { c.mu.Lock(); delete(c.paused, ns); c.mu.Unlock() }
func (c *fakeController) NamespacePaused(ns string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused[ns]
}

// gated is a script of n steps; each step sends its number on began, then
// waits for the test to send on release (when gate is set).
type gated struct {
	began   chan int
	release chan struct{}
}

func gatedScript(id string, n int, gate bool) (Script, *gated) {
	g := &gated{began: make(chan int, n), release: make(chan struct{})}
	s := Script{ID: id, Title: "Demo " + id}
	for i := 1; i <= n; i++ {
		s.Steps = append(s.Steps, Step{
			Title: fmt.Sprintf("Step %d", i), Say: fmt.Sprintf("saying %d", i),
			Do: &Action{What: fmt.Sprintf("act %d", i), Act: func(ctx context.Context, _ *Env) error {
				g.began <- i
				if !gate {
					return nil
				}
				select {
				case <-g.release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}},
		})
	}
	return s, g
}

func start(t *testing.T, dwell time.Duration, scripts ...Script) (*Player, *room, *sink, *fakeController) {
	t.Helper()
	rm, sk, fc := &room{}, &sink{}, &fakeController{}
	r := New(Options{Scripts: scripts, Narrator: rm, Sink: sk, Controller: fc, Dwell: dwell})
	ctx, cancel := context.WithCancel(context.Background())
	go r.Run(ctx)
	t.Cleanup(func() { cancel(); <-r.done })
	return r, rm, sk, fc
}

// waitStatus polls until ok holds for the status; the bound only keeps a
// broken player from hanging the test.
func waitStatus(t *testing.T, r *Player, what string, ok func(Status) bool) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var s Status
	if polltest.Wait(ctx, func() bool { s = r.Status(); return ok(s) }) != nil {
		t.Fatalf("waiting for %s: status %+v", what, s)
	}
	return s
}

func began(t *testing.T, g *gated, want int) {
	t.Helper()
	select {
	case got := <-g.began:
		if got != want {
			t.Fatalf("step %d began, want step %d", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("step %d never began", want)
	}
}

func nothingBegan(t *testing.T, g *gated) {
	t.Helper()
	select {
	case got := <-g.began:
		t.Fatalf("step %d began while the demo was paused", got)
	default:
	}
}

func TestPlaysToTheEndWithoutInput(t *testing.T) {
	s, g := gatedScript("walk", 3, false)
	r, rm, sk, _ := start(t, time.Millisecond, s)
	if err := r.Play("lab-a", "walk", true); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		began(t, g, i)
	}
	st := waitStatus(t, r, "the end", func(s Status) bool { return s.State == Finished })
	if st.Step != 3 || st.Of != 3 {
		t.Errorf("finished at %d/%d, want 3/3", st.Step, st.Of)
	}
	said := rm.all()
	var steps []int
	for _, n := range said {
		if n.Text != "" {
			steps = append(steps, n.Step)
			if n.Demo != "Demo walk" || n.Of != 3 || n.Paused || !strings.HasPrefix(n.Text, fmt.Sprintf("Step %d. saying", n.Step)) {
				t.Errorf("narration %+v", n)
			}
		}
	}
	if fmt.Sprint(steps) != "[1 2 3]" || said[len(said)-1].Text != "" {
		t.Errorf("the room heard steps %v then %+v; want 1, 2, 3, then the narration cleared", steps, said[len(said)-1])
	}
	msgs := sk.messages()
	want := []string{"Step 1 of 3: Step 1. saying 1", "Step 2 of 3: Step 2. saying 2", "Step 3 of 3: Step 3. saying 3", `The demo "Demo walk" is over.`}
	if fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Errorf("timeline said\n%q\nwant\n%q", msgs, want)
	}
	sk.mu.Lock()
	for _, st := range sk.steps {
		if st.Type != controller.StepController || st.Phase != PhaseNarration || st.Object != (controller.ObjectRef{Kind: "Demo", Namespace: "lab-a", Name: "walk"}) {
			t.Errorf("timeline step %+v: want a controller narration step on Demo lab-a/walk", st)
		}
	}
	sk.mu.Unlock()
}

func TestPauseAndStepCountSteps(t *testing.T) {
	s, g := gatedScript("walk", 4, false)
	// The dwell is longer than any test: only Play and Step move on.
	r, rm, sk, _ := start(t, time.Hour, s)
	if err := r.Play("lab-a", "walk", true); err != nil {
		t.Fatal(err)
	}
	began(t, g, 1)
	waitStatus(t, r, "step 1 done", func(s Status) bool { return s.Step == 1 && !s.Busy })
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := r.Pause(); !errors.Is(err, ErrRefused) {
		t.Errorf("second Pause: %v, want refused", err)
	}
	if n := rm.all(); !n[len(n)-1].Paused || n[len(n)-1].Step != 1 {
		t.Errorf("the room was not told the demo is paused at step 1: %+v", n[len(n)-1])
	}
	// Step does the next step now and stays paused.
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
	began(t, g, 2)
	st := waitStatus(t, r, "step 2 done", func(s Status) bool { return s.Step == 2 && !s.Busy })
	if st.State != Paused {
		t.Errorf("after Step: %s, want paused", st.State)
	}
	nothingBegan(t, g)
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
	began(t, g, 3)
	waitStatus(t, r, "step 3 done", func(s Status) bool { return s.Step == 3 && !s.Busy })
	nothingBegan(t, g)
	// Play resumes at once with the next step, then dwells (an hour).
	if err := r.Play("lab-a", "walk", true); err != nil {
		t.Fatal(err)
	}
	began(t, g, 4)
	st = waitStatus(t, r, "step 4 done", func(s Status) bool { return s.Step == 4 && !s.Busy })
	if st.State != Playing {
		t.Errorf("after Play: %s, want playing", st.State)
	}
	// Stepping past the last step ends the demo.
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.State != Finished {
		t.Errorf("after stepping past the end: %s, want finished", st.State)
	}
	if n := len(sk.messages()); n != 5 {
		t.Errorf("timeline got %d narration steps, want 4 steps and the end: %q", n, sk.messages())
	}
}

func TestSecondPlayAndStepWhileBusyAreRefused(t *testing.T) {
	s, g := gatedScript("walk", 2, true)
	other, _ := gatedScript("other", 1, false)
	r, _, _, _ := start(t, time.Hour, s, other)
	if err := r.Play("lab-a", "walk", true); err != nil {
		t.Fatal(err)
	}
	began(t, g, 1)
	for _, c := range []struct{ ns, id, want string }{
		{"lab-a", "walk", `demo "walk" is already playing (step 1 of 2)`},
		{"lab-a", "other", `demo "walk" is under way in lab-a (step 1 of 2): stop it before playing another`},
		{"lab-b", "walk", `demo "walk" is under way in lab-a`},
	} {
		if err := r.Play(c.ns, c.id, true); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Play(%s, %s) while playing: %v; want refused saying %q", c.ns, c.id, err, c.want)
		}
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := r.Step(); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "step 1 is still under way") {
		t.Errorf("Step while step 1 runs: %v; want refused", err)
	}
	g.release <- struct{}{}
	st := waitStatus(t, r, "step 1 done", func(s Status) bool { return !s.Busy })
	if st.State != Paused || st.Step != 1 {
		t.Errorf("paused during step 1, then it finished: %+v; want paused at 1", st)
	}
	nothingBegan(t, g)
	if err := r.Play("lab-a", "nope", true); !errors.Is(err, ErrRefused) {
		t.Errorf("another demo while paused: %v, want refused", err)
	}
}

func TestUnknownDemoAndStoppedController(t *testing.T) {
	s, _ := gatedScript("walk", 1, false)
	r, _, _, fc := start(t, time.Hour, s)
	if err := r.Play("lab-a", "nope", true); !errors.Is(err, ErrUnknownDemo) || !strings.Contains(err.Error(), `"nope": want one of walk`) {
		t.Errorf("unknown demo: %v", err)
	}
	fc.PauseNamespace("lab-a")
	if err := r.Play("lab-a", "walk", true); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "paused for lab-a") {
		t.Errorf("paused namespace: %v", err)
	}
	fc.stopped = true
	if err := r.Play("lab-b", "walk", true); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "controller is stopped") {
		t.Errorf("stopped controller: %v", err)
	}
	for name, f := range map[string]func() error{"Pause": r.Pause, "Step": r.Step, "Stop": r.Stop} {
		if err := f(); !errors.Is(err, ErrRefused) {
			t.Errorf("%s with no demo: %v, want refused", name, err)
		}
	}
	if st := r.Status(); st.State != Idle {
		t.Errorf("status %+v, want idle", st)
	}
}

func TestAFailedWaitSaysWhatDidNotHappen(t *testing.T) {
	s := Script{ID: "stuck", Title: "Stuck", Steps: []Step{{
		Title: "Wait forever", Timeout: 20 * time.Millisecond,
		Until: &Wait{What: "the moon to turn blue", Done: func(context.Context, *Env) (bool, string, error) { return false, "the moon is grey", nil }},
	}, {Title: "Never"}}}
	r, rm, sk, _ := start(t, time.Millisecond, s)
	if err := r.Play("lab-a", "stuck", true); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, r, "the failure", func(s Status) bool { return s.State == Failed })
	for _, want := range []string{"step 1 of 2 (Wait forever) failed", "waited 20ms for the moon to turn blue", "last saw: the moon is grey"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("error %q lacks %q", st.Error, want)
		}
	}
	sk.mu.Lock()
	last := sk.steps[len(sk.steps)-1]
	sk.mu.Unlock()
	if last.Error != st.Error || !strings.Contains(last.Message, `The demo "Stuck" stopped`) {
		t.Errorf("timeline's last step %+v; want the failure", last)
	}
	if n := rm.all(); n[len(n)-1].Text != "" {
		t.Errorf("the room still reads %q after the failure", n[len(n)-1].Text)
	}
}

// The presenter paused their namespace mid-demo: the wait says so while
// it waits and when it fails, and the failure does not blame the error of
// a look its own deadline cut short (a client's rate limiter refusing to
// wait past it).
func TestAWaitInAPausedNamespaceSaysSo(t *testing.T) {
	s := Script{ID: "held", Title: "Held", Steps: []Step{{
		Title: "Wait for gone", Timeout: 300 * time.Millisecond,
		Until: &Wait{What: "Database shop to be gone", Done: func(ctx context.Context, _ *Env) (bool, string, error) {
			select {
			case <-ctx.Done():
				return false, "", fmt.Errorf("client rate limiter Wait returned an error: %w", ctx.Err())
			case <-time.After(time.Millisecond):
				return false, "shop is Terminating", nil
			}
		}},
	}}}
	r, _, _, fc := start(t, time.Millisecond, s)
	if err := r.Play("lab-a", "held", false); err != nil {
		t.Fatal(err)
	}
	fc.PauseNamespace("lab-a")
	waitStatus(t, r, "the wait naming the pause", func(s Status) bool {
		return s.Busy && strings.Contains(s.Waiting, "waiting for Database shop to be gone (the controller is paused for lab-a: nothing there is reconciled until you press Resume in your lab)")
	})
	st := waitStatus(t, r, "the failure", func(s Status) bool { return s.State == Failed })
	if !strings.Contains(st.Error, "last saw: shop is Terminating) (the controller is paused for lab-a") || strings.Contains(st.Error, "rate limiter") {
		t.Errorf("error %q; want what was last seen and the pause, not the deadline's own error", st.Error)
	}
	fc.ResumeNamespace("lab-a")
	fc.PauseNamespace("lab-b")
	if err := r.Play("lab-b", "held", false); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "press Resume in your lab") {
		t.Errorf("Play in a paused namespace: %v; want it refused, naming the lab's Resume", err)
	}
}

func TestStopCutsAStepShortAndResumesTheNamespace(t *testing.T) {
	block := make(chan struct{})
	s := Script{ID: "dies", Title: "Dies", Steps: []Step{
		{Title: "Pause", Do: pauseNamespace},
		{Title: "Hang", Until: &Wait{What: "never", Done: func(ctx context.Context, _ *Env) (bool, string, error) {
			close(block)
			<-ctx.Done()
			return false, "", nil
		}}},
	}}
	r, _, sk, fc := start(t, time.Millisecond, s)
	if err := r.Play("lab-a", "dies", true); err != nil {
		t.Fatal(err)
	}
	<-block
	if !fc.NamespacePaused("lab-a") {
		t.Fatal("step 1 did not pause the namespace")
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.State != Stopped || st.Step != 2 || st.Busy {
		t.Errorf("after Stop: %+v; want stopped at step 2, not busy", st)
	}
	if fc.NamespacePaused("lab-a") {
		t.Error("Stop left the namespace paused")
	}
	msgs := sk.messages()
	if last := msgs[len(msgs)-1]; !strings.Contains(last, "stopped the demo") || !strings.Contains(last, "reconciles this namespace again") {
		t.Errorf("timeline's last words %q", last)
	}
	// A new demo may start at once.
	if err := r.Play("lab-a", "dies", true); err != nil {
		t.Errorf("Play after Stop: %v", err)
	}
}

// A step's pause lasts until its narration, read at 150 words a minute from
// the step's start, is over: a room is not moved on mid-sentence, and a
// short line still leaves MinDwell to read the rows.
func TestSpeakingDwellFollowsTheNarration(t *testing.T) {
	fifty := strings.Repeat("word ", 50)
	for _, c := range []struct {
		say     string
		elapsed time.Duration
		want    time.Duration
	}{
		{fifty, 0, 20 * time.Second},
		{fifty, 12 * time.Second, 8 * time.Second},
		{fifty, time.Minute, MinDwell},
		{"Short.", 0, MinDwell},
	} {
		if got := SpeakingDwell(c.say, c.elapsed); got != c.want {
			t.Errorf("SpeakingDwell(%d words, %s) = %s, want %s", len(strings.Fields(c.say)), c.elapsed, got, c.want)
		}
	}
}

// A demo about one Database names it on each narration step, so the lab
// selects it; a demo about several names none.
func TestNarrationNamesTheDemosDatabase(t *testing.T) {
	one, g := gatedScript("one", 2, false)
	one.Databases = []string{"shop"}
	r, _, sk, _ := start(t, time.Millisecond, one)
	if err := r.Play("lab-a", "one", true); err != nil {
		t.Fatal(err)
	}
	began(t, g, 1)
	began(t, g, 2)
	waitStatus(t, r, "the end", func(s Status) bool { return s.State == Finished })
	sk.mu.Lock()
	defer sk.mu.Unlock()
	for _, st := range sk.steps {
		if st.Database != "shop" {
			t.Errorf("narration %q names Database %q, want shop", st.Message, st.Database)
		}
	}
	if (Script{Databases: []string{"a", "b"}}).about() != "" {
		t.Error("a demo about two Databases selects one of them")
	}
}

// Played by hand (the default), a demo does a step, then waits for Next,
// however short the dwell: the presenter moves the room on, not a clock.
func TestManualAdvanceWaitsForNext(t *testing.T) {
	s, g := gatedScript("walk", 3, true)
	r, _, sk, _ := start(t, time.Millisecond, s)
	if err := r.Play("lab-a", "walk", false); err != nil {
		t.Fatal(err)
	}
	began(t, g, 1)
	if err := r.Next(); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "step 1 is still under way") {
		t.Errorf("Next while step 1 runs: %v; want refused saying it is under way", err)
	}
	g.release <- struct{}{}
	st := waitStatus(t, r, "step 1 done", func(s Status) bool { return s.Step == 1 && !s.Busy })
	if !st.AwaitsNext || st.Auto || st.State != Playing {
		t.Errorf("after step 1: %+v; want playing, awaiting Next", st)
	}
	nothingBegan(t, g)
	// Status is answered by the player's goroutine, after any dwell timer
	// of 1 ms it would have set: still step 1.
	if st := r.Status(); st.Step != 1 || !st.AwaitsNext {
		t.Errorf("a moment later: %+v; want still at step 1, awaiting Next", st)
	}
	for want := 2; want <= 3; want++ {
		if err := r.Next(); err != nil {
			t.Fatal(err)
		}
		began(t, g, want)
		g.release <- struct{}{}
		waitStatus(t, r, fmt.Sprintf("step %d done", want), func(s Status) bool { return s.Step == want && s.AwaitsNext })
	}
	// Next after the last step ends the demo.
	if err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.State != Finished || st.AwaitsNext {
		t.Errorf("after Next past the end: %+v; want finished", st)
	}
	if n := len(sk.messages()); n != 4 {
		t.Errorf("timeline got %q; want 3 steps and the end", sk.messages())
	}
	if err := r.Next(); !errors.Is(err, ErrRefused) {
		t.Errorf("Next with no demo: %v, want refused", err)
	}
}

// A demo whose file says "advance: auto" moves on by itself even when Play
// does not ask for it; Next then cuts a dwell short.
func TestAutoAdvanceFromTheDemoAndNextSkipsTheDwell(t *testing.T) {
	timed, g := gatedScript("timed", 2, false)
	timed.Advance = AdvanceAuto
	r, _, _, _ := start(t, time.Millisecond, timed)
	if err := r.Play("lab-a", "timed", false); err != nil {
		t.Fatal(err)
	}
	began(t, g, 1)
	began(t, g, 2)
	if st := waitStatus(t, r, "the end", func(s Status) bool { return s.State == Finished }); !st.Auto {
		t.Errorf("status %+v; want it marked auto", st)
	}

	slow, g := gatedScript("slow", 2, false)
	r, _, _, _ = start(t, time.Hour, slow)
	if err := r.Play("lab-a", "slow", true); err != nil {
		t.Fatal(err)
	}
	began(t, g, 1)
	waitStatus(t, r, "step 1 done", func(s Status) bool { return !s.Busy && !s.AwaitsNext })
	if err := r.Next(); err != nil {
		t.Fatal(err)
	}
	began(t, g, 2)
	if st := r.Status(); st.State != Playing {
		t.Errorf("after Next in an auto run: %s, want still playing", st.State)
	}
}
