// Package demo plays the instructor's scripted demos: prepared steps that
// act in the instructor's own lab namespace (create, scale, drift, delete),
// wait until the controller has done its part, and narrate each step to the
// room and on the namespace's timeline, pausing between them.
//
// It is its own package, not part of web/instructor, because it acts on the
// cluster (a client, the per-namespace pause) and owns a long-lived run,
// while the instructor page only renders and forwards buttons; the player
// is tested with scripted steps of its own, without HTTP.
package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/classroom"
)

// Narrator tells the room what the demo is showing (the classroom's
// presenter state, which every follower receives).
type Narrator interface {
	Narrate(classroom.Narration)
}

// Controller is the per-namespace pause of the shared controller, and
// whether it runs at all.
type Controller interface {
	Running() bool
	PauseNamespace(ns string)
	ResumeNamespace(ns string)
	NamespacePaused(ns string) bool
}

// Options configures a Player.
type Options struct {
	// Client talks to the API server directly, so each wait sees the latest
	// state.
	Client     client.Client
	Controller Controller
	// Sink receives each narration as a trace step of the namespace (the
	// stream Recorder), so the timeline shows it among the reconciles.
	Sink controller.Sink
	// Timeline is what the Sink holds of a namespace; nil: the waits read
	// the cluster alone.
	Timeline Timeline
	// Narrator tells the room; nil tells only the timeline.
	Narrator Narrator
	// Scripts are the demos offered (Load reads them).
	Scripts []Script
	// Dwell is how long a finished step stays before the next begins,
	// unless the step says otherwise; zero means the step's narration
	// sets it (SpeakingDwell).
	Dwell  time.Duration
	Logger logr.Logger
}

// MinDwell is the shortest pause between two steps: long enough to read
// the rows the step produced.
const MinDwell = 5 * time.Second

// speakingRate is a presenter's pace reading to a room, 150 words a
// minute, in words a second.
const speakingRate = 2.5

// SpeakingDwell is how long a step stays once done: until its narration,
// read aloud at a speaking pace from the moment the step began, is over
// (elapsed is how long the step has taken), and at least MinDwell. A
// fixed pause cut a 50-word narration off after 5 s.
func SpeakingDwell(say string, elapsed time.Duration) time.Duration {
	reading := time.Duration(float64(len(strings.Fields(say))) / speakingRate * float64(time.Second))
	return max(MinDwell, reading-elapsed)
}

// checkTimeout bounds the checks Play makes before it starts.
const checkTimeout = 10 * time.Second

// State is where a demo run is.
type State string

// The states of a run. Idle: no demo played yet.
const (
	Idle     State = "idle"
	Playing  State = "playing"
	Paused   State = "paused"
	Finished State = "finished"
	Failed   State = "failed"
	Stopped  State = "stopped"
)

// Active reports whether a run in state s is still under way.
func (s State) Active() bool { return s == Playing || s == Paused }

// PhaseNarration is the phase of the controller-type trace steps a demo
// emits; their object is {Kind: "Demo", Namespace: ns, Name: demo id}.
const PhaseNarration = "narration"

// Errors a control can be refused with. ErrUnknownDemo and ErrRefused wrap
// the message that names what was wrong.
var (
	ErrUnknownDemo = errors.New("unknown demo")
	ErrRefused     = errors.New("refused")
)

// Status is what the instructor page shows of the current (or last) run.
type Status struct {
	Demo      string `json:"demo"` // the demo's id; "" when Idle
	Title     string `json:"title"`
	Namespace string `json:"namespace"`
	State     State  `json:"state"`
	// Step is the number (from 1) of the step shown, 0 before the first;
	// Of is the number of steps.
	Step      int    `json:"step"`
	Of        int    `json:"of"`
	StepTitle string `json:"stepTitle"`
	Text      string `json:"text"`
	// Busy is set while the step's action or wait is under way; Waiting
	// says what it waits for.
	Busy    bool   `json:"busy"`
	Waiting string `json:"waiting,omitempty"`
	// Auto is set when the run advances by itself after each step's dwell;
	// otherwise it waits for Next. AwaitsNext is set while it waits so.
	Auto       bool `json:"auto"`
	AwaitsNext bool `json:"awaitsNext"`
	// Error is why the run failed.
	Error string `json:"error,omitempty"`
}

// Player plays one demo at a time. One goroutine, Run, owns the run; the
// controls are requests to it.
type Player struct {
	opts    Options
	ops     chan func(*owner)
	results chan result
	done    chan struct{}
}

// New returns a Player; call Run to serve it.
func New(opts Options) *Player {
	return &Player{opts: opts, ops: make(chan func(*owner)), results: make(chan result), done: make(chan struct{})}
}

// Scripts lists the demos offered.
func (p *Player) Scripts() []Script { return p.opts.Scripts }

// run is one play of a script.
type run struct {
	script Script
	env    *Env
	state  State
	// next is the index of the next step to begin; shown is the number of
	// the step last begun (from 1).
	next, shown int
	// began is when the step last begun began.
	began  time.Time
	busy   bool
	cancel context.CancelFunc
	err    string
	// auto: the run moves on by itself after each step's dwell; otherwise
	// it waits for Next once a step is done.
	auto bool
}

// result is a finished step, sent by the goroutine that ran it.
type result struct {
	run *run
	err error
}

// owner is the state only Run's goroutine touches.
type owner struct {
	p     *Player
	ctx   context.Context
	cur   *run
	dwell *time.Timer
}

// Run serves the controls until ctx ends; a step under way is cancelled
// then, and a namespace the demo paused is resumed.
func (p *Player) Run(ctx context.Context) {
	defer close(p.done)
	o := &owner{p: p, ctx: ctx, dwell: time.NewTimer(time.Hour)}
	o.dwell.Stop()
	for {
		select {
		case <-ctx.Done():
			if o.cur != nil && o.cur.state.Active() {
				o.end(Stopped, "")
			}
			return
		case op := <-p.ops:
			op(o)
		case res := <-p.results:
			o.finished(res)
		case <-o.dwell.C:
			if o.cur != nil && o.cur.state == Playing && !o.cur.busy {
				o.begin()
			}
		}
	}
}

// do runs op on Run's goroutine and returns its error.
func (p *Player) do(op func(*owner) error) error {
	reply := make(chan error, 1)
	select {
	case p.ops <- func(o *owner) { reply <- op(o) }:
	case <-p.done:
		return fmt.Errorf("%w: the demo player has stopped", ErrRefused)
	}
	return <-reply
}

// Play starts the demo id in namespace ns, or resumes it when it is paused
// there. A second Play while a demo plays is refused. The run waits for
// Next after each step, unless auto is set or the demo says "advance:
// auto": then each step's dwell moves it on.
func (p *Player) Play(ns, id string, auto bool) error {
	return p.do(func(o *owner) error {
		if c := o.cur; c != nil && c.state.Active() {
			if c.script.ID != id || c.env.Namespace != ns {
				return fmt.Errorf("%w: demo %q is under way in %s (step %d of %d): stop it before playing another", ErrRefused, c.script.ID, c.env.Namespace, c.shown, len(c.script.Steps))
			}
			if c.state == Playing {
				return fmt.Errorf("%w: demo %q is already playing (step %d of %d)", ErrRefused, id, c.shown, len(c.script.Steps))
			}
			c.state = Playing
			if c.busy {
				o.narrate(c.script.Steps[c.shown-1], false)
				return nil
			}
			o.begin()
			return nil
		}
		s, ok := o.find(id)
		if !ok {
			return fmt.Errorf("%w %q: want one of %s", ErrUnknownDemo, id, strings.Join(o.ids(), ", "))
		}
		env := &Env{Namespace: ns, Client: p.opts.Client, Controller: p.opts.Controller, Timeline: p.opts.Timeline}
		if err := o.check(s, env); err != nil {
			return err
		}
		o.cur = &run{script: s, env: env, state: Playing, auto: auto || s.Advance == AdvanceAuto}
		p.opts.Logger.Info("Started a demo", "demo", id, "namespace", ns, "auto", o.cur.auto)
		o.begin()
		return nil
	})
}

// Pause holds the demo: a step under way finishes, and no next one begins
// until Play or Step.
func (p *Player) Pause() error {
	return p.do(func(o *owner) error {
		c := o.cur
		if c == nil || c.state != Playing {
			return fmt.Errorf("%w: no demo is playing", ErrRefused)
		}
		c.state = Paused
		o.dwell.Stop()
		o.narrate(c.script.Steps[c.shown-1], false)
		return nil
	})
}

// Step begins the next step now and leaves the demo paused after it.
// It is refused while a step is still under way.
func (p *Player) Step() error {
	return p.do(func(o *owner) error {
		c := o.cur
		if c == nil || !c.state.Active() {
			return fmt.Errorf("%w: no demo is under way: press Play first", ErrRefused)
		}
		if c.busy {
			return fmt.Errorf("%w: step %d is still under way (%s): wait for it, or stop the demo", ErrRefused, c.shown, waiting(c))
		}
		c.state = Paused
		o.dwell.Stop()
		o.begin()
		return nil
	})
}

// Next begins the next step now: the presenter's "go on" (the panel's
// Next, space or → on the projector). A playing run stays playing, so an
// auto run's dwell is cut short; a paused one stays paused. After the last
// step it ends the demo. It is refused while a step is still under way.
func (p *Player) Next() error {
	return p.do(func(o *owner) error {
		c := o.cur
		if c == nil || !c.state.Active() {
			return fmt.Errorf("%w: no demo is under way: press Play first", ErrRefused)
		}
		if c.busy {
			return fmt.Errorf("%w: step %d is still under way (%s): press Next again once it is done", ErrRefused, c.shown, waiting(c))
		}
		o.dwell.Stop()
		o.begin()
		return nil
	})
}

// Stop ends the demo: a step under way is cancelled, and a namespace the
// demo paused is resumed. What the demo created stays.
func (p *Player) Stop() error {
	return p.do(func(o *owner) error {
		if o.cur == nil || !o.cur.state.Active() {
			return fmt.Errorf("%w: no demo is under way", ErrRefused)
		}
		o.end(Stopped, "")
		return nil
	})
}

// Status returns the current or last run.
func (p *Player) Status() Status {
	var s Status
	if err := p.do(func(o *owner) error { s = o.status(); return nil }); err != nil {
		return Status{State: Idle}
	}
	return s
}

func (o *owner) find(id string) (Script, bool) {
	for _, s := range o.p.opts.Scripts {
		if s.ID == id {
			return s, true
		}
	}
	return Script{}, false
}

func (o *owner) ids() []string {
	out := make([]string, len(o.p.opts.Scripts))
	for i, s := range o.p.opts.Scripts {
		out[i] = s.ID
	}
	return out
}

// check refuses a demo that could not run as narrated: the controller
// stopped, the namespace paused, or a Database the demo creates already
// there.
func (o *owner) check(s Script, env *Env) error {
	c := o.p.opts.Controller
	if c != nil && !c.Running() {
		return fmt.Errorf("%w: the controller is stopped for everyone: start it first, or the demo has nothing to show", ErrRefused)
	}
	if c != nil && c.NamespacePaused(env.Namespace) {
		return fmt.Errorf("%w: the controller is paused for %s: press Resume in your lab first", ErrRefused, env.Namespace)
	}
	if env.Client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(o.ctx, checkTimeout)
	defer cancel()
	for _, name := range s.Databases {
		db, err := getDatabase(ctx, env, name)
		if err != nil {
			return fmt.Errorf("check %s before the demo: %w", env.Namespace, err)
		}
		if db == nil {
			continue
		}
		if db.DeletionTimestamp != nil {
			return fmt.Errorf("%w: Database %s in %s is still being deleted: wait until it is gone (the demo creates it)", ErrRefused, name, env.Namespace)
		}
		return fmt.Errorf("%w: Database %s already exists in %s: delete it in your lab first (the demo creates it)", ErrRefused, name, env.Namespace)
	}
	return nil
}

// begin starts the next step, or finishes the run after the last.
func (o *owner) begin() {
	c := o.cur
	if c.next >= len(c.script.Steps) {
		o.end(Finished, "")
		return
	}
	st := c.script.Steps[c.next]
	c.next++
	c.shown = c.next
	c.began = time.Now()
	c.busy = true
	o.narrate(st, true)
	ctx, cancel := context.WithCancel(o.ctx)
	c.cancel = cancel
	go func() {
		err := st.run(ctx, c.env)
		if ctx.Err() != nil && c.env.paused.Swap(false) && o.p.opts.Controller != nil {
			// A Stop cut this step short after it paused the namespace:
			// the run has ended, and must not leave the pause behind.
			o.p.opts.Controller.ResumeNamespace(c.env.Namespace)
		}
		select {
		case o.p.results <- result{run: c, err: err}:
		case <-o.p.done:
		}
	}()
}

// finished takes a step's outcome: fail, or dwell before the next step
// while playing.
func (o *owner) finished(res result) {
	c := o.cur
	if res.run != c || !c.busy {
		return // a step of a run that was stopped meanwhile
	}
	c.busy = false
	c.cancel()
	if res.err != nil {
		o.end(Failed, fmt.Sprintf("step %d of %d (%s) failed: %v%s", c.shown, len(c.script.Steps), c.script.Steps[c.shown-1].Title, res.err, o.pausedNote(c)))
		return
	}
	if c.state != Playing || !c.auto {
		// Paused, or advanced by hand: the presenter moves on with Next.
		return
	}
	st := c.script.Steps[c.shown-1]
	d := cmp.Or(st.Dwell, o.p.opts.Dwell)
	if d <= 0 {
		d = SpeakingDwell(st.Say, time.Since(c.began))
	}
	o.dwell.Reset(d)
}

// end closes the run: cancels a step under way, resumes a namespace the
// demo paused, and says how it ended.
func (o *owner) end(state State, failure string) {
	c := o.cur
	o.dwell.Stop()
	if c.busy {
		c.cancel()
		c.busy = false
	}
	c.state, c.err = state, failure
	resumed := ""
	if c.env.paused.Swap(false) && o.p.opts.Controller != nil {
		o.p.opts.Controller.ResumeNamespace(c.env.Namespace)
		resumed = " The controller, paused by the demo, reconciles this namespace again."
	}
	var msg string
	switch state {
	case Finished:
		msg = fmt.Sprintf("The demo %q is over.", c.script.Title)
	case Stopped:
		msg = fmt.Sprintf("The instructor stopped the demo %q at step %d of %d; what it made so far stays.%s", c.script.Title, c.shown, len(c.script.Steps), resumed)
	case Failed:
		msg = fmt.Sprintf("The demo %q stopped: %s.%s", c.script.Title, failure, resumed)
	}
	o.emit(c, msg, failure)
	if o.p.opts.Narrator != nil {
		o.p.opts.Narrator.Narrate(classroom.Narration{})
	}
	o.p.opts.Logger.Info("Ended a demo", "demo", c.script.ID, "namespace", c.env.Namespace, "state", state, "error", failure)
}

// narrate tells the room about step st, the one shown, and when the step
// begins, the timeline too (pausing and resuming say nothing new there).
func (o *owner) narrate(st Step, begins bool) {
	c := o.cur
	text := st.Title + ". " + st.Say
	if o.p.opts.Narrator != nil {
		o.p.opts.Narrator.Narrate(classroom.Narration{
			Demo: c.script.Title, Step: c.shown, Of: len(c.script.Steps), Text: text, Paused: c.state == Paused,
		})
	}
	if !begins {
		return
	}
	o.emit(c, fmt.Sprintf("Step %d of %d: %s", c.shown, len(c.script.Steps), text), "")
}

// emit records a narration step on the namespace's timeline.
func (o *owner) emit(c *run, msg, failure string) {
	if o.p.opts.Sink == nil {
		return
	}
	o.p.opts.Sink.Emit(controller.Step{
		Time: time.Now(), Type: controller.StepController, Phase: PhaseNarration,
		Object: controller.ObjectRef{Kind: "Demo", Namespace: c.env.Namespace, Name: c.script.ID},
		// The Database the demo is about: the lab selects it, so the room
		// sees its card and rows, not another one's.
		Database: c.script.about(),
		Message:  msg, Error: failure,
	})
}

func (o *owner) status() Status {
	c := o.cur
	if c == nil {
		return Status{State: Idle}
	}
	s := Status{
		Demo: c.script.ID, Title: c.script.Title, Namespace: c.env.Namespace, State: c.state,
		Step: c.shown, Of: len(c.script.Steps), Busy: c.busy, Error: c.err,
		Auto: c.auto, AwaitsNext: c.state == Playing && !c.auto && !c.busy,
	}
	if c.shown > 0 {
		st := c.script.Steps[c.shown-1]
		s.StepTitle, s.Text = st.Title, st.Say
	}
	if c.busy {
		s.Waiting = waiting(c) + o.pausedNote(c)
	}
	return s
}

// pausedNote says, after what a step waits for or why it failed, that the
// namespace is paused by someone other than the demo (the presenter's
// Pause my namespace): nothing in it is reconciled until it resumes.
func (o *owner) pausedNote(c *run) string {
	ctl := o.p.opts.Controller
	if ctl == nil || c.env.paused.Load() || !ctl.NamespacePaused(c.env.Namespace) {
		return ""
	}
	return fmt.Sprintf(" (the controller is paused for %s: nothing there is reconciled until you press Resume in your lab)", c.env.Namespace)
}

// waiting says what the step under way is doing.
func waiting(c *run) string {
	st := c.script.Steps[c.shown-1]
	if st.Until != nil {
		return "waiting for " + st.Until.What
	}
	return "acting"
}
