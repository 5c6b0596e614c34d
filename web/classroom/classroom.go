// Package classroom holds the small state a class shares: who presents, from
// which namespace, what their lab shows (the selected Database, the page, the
// timeline's pause, step and speed), the scripted demo's narration, and the
// instructor's "send everyone to" link and the class timer. One goroutine owns it and publishes it
// to every viewer of the trace stream as one global state message, at most
// ten times a second; a viewer who connects late gets the latest from the
// stream's snapshot, as reveal.js's multiplex gives a late follower the
// current slide.
//
// Followers watch the presenter's namespace on /ws?follow=presenter (see
// Streams): the same stream, read-only, with the presenter's namespace.
package classroom

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller"
)

// Publisher is where the state goes: the stream Recorder.
type Publisher interface {
	PublishState(obj controller.ObjectRef, state json.RawMessage)
}

// Ref is the object the state is published as. It has no namespace, so the
// stream sends it to every viewer.
var Ref = controller.ObjectRef{Kind: "Classroom", Name: "presenter"}

// DefaultInterval is the shortest time between two publications: at most ten
// a second, however fast the presenter clicks.
const DefaultInterval = 100 * time.Millisecond

// DefaultPresenterName is who learners follow when the instructor gives no
// name.
const DefaultPresenterName = "the instructor"

// Options configure a Classroom. The zero value is usable.
type Options struct {
	// Interval is the shortest time between two publications (default
	// DefaultInterval). Changes in between are coalesced: the next
	// publication carries the latest state.
	Interval time.Duration
	// After returns a channel that delivers once after d; default
	// time.After. Tests replace it to count publications without waiting.
	After func(d time.Duration) <-chan time.Time
	// Now stamps the goto ids; default time.Now.
	Now func() time.Time
}

// Narration is the scripted demo's caption, shown to everyone: which demo,
// which step of how many, what to watch, and whether the demo is paused.
type Narration struct {
	Demo   string `json:"demo"`
	Step   int    `json:"step"`
	Of     int    `json:"of"`
	Text   string `json:"text"`
	Paused bool   `json:"paused"`
}

// View is what the presenter's lab shows, as their browser reports it.
type View struct {
	// Selected is the Database the presenter's timeline and card focus on;
	// empty: all.
	Selected string `json:"selected"`
	// Path is the page the presenter is on: /lab, /lab?scenario=NAME or a
	// lesson; followers go there.
	Path string `json:"path"`
	// Paused is whether the presenter's timeline is paused; then Seq is the
	// last message it shows, and followers show nothing after it.
	Paused bool    `json:"paused"`
	Seq    uint64  `json:"seq"`
	Speed  float64 `json:"speed"`
}

// Goto sends every page to Href once: each page navigates when it sees an
// ID it has not followed yet.
type Goto struct {
	Href string `json:"href"`
	ID   int64  `json:"id"`
}

// State is the published JSON.
type State struct {
	Presenting bool `json:"presenting"`
	// Name is who presents, as the banner says it: "Following NAME".
	Name string `json:"name,omitempty"`
	// Namespace is the presenter's; their own page knows itself by it.
	Namespace string `json:"namespace,omitempty"`
	// Since tells one presentation from the next, so a learner who broke
	// away from the last one follows the next.
	Since     int64      `json:"since,omitempty"`
	View      *View      `json:"view,omitempty"`
	Narration *Narration `json:"narration,omitempty"`
	Goto      *Goto      `json:"goto,omitempty"`
	// Timer is the class timer every page counts down; nil: none.
	Timer *Timer `json:"timer,omitempty"`
	// Message is the instructor's broadcast; nil: none.
	Message *Message `json:"message,omitempty"`
	// Halt says who stopped the controller for everyone and why; nil
	// while it runs.
	Halt *Halt `json:"halt,omitempty"`
	// End says the class ended; nil while it runs.
	End *End `json:"end,omitempty"`
}

// ErrNotPresenter refuses a view update from anyone but the presenter.
var ErrNotPresenter = errors.New("only the presenter's lab may update what followers see")

// ErrNotPresenting is the answer to a follower when nobody presents.
var ErrNotPresenting = errors.New("nobody is presenting")

// Classroom is the shared state and the goroutine that owns it.
type Classroom struct {
	pub  Publisher
	opts Options
	ops  chan op
	done chan struct{}
}

// New returns a Classroom and starts the goroutine that owns its state,
// which runs until Close.
func New(pub Publisher, opts Options) *Classroom {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Classroom{pub: pub, opts: opts, ops: make(chan op), done: make(chan struct{})}
	go c.run()
	return c
}

// Close stops the goroutine; later calls change nothing. Call it once.
func (c *Classroom) Close() { close(c.done) }

// run owns the state. It publishes a change at once when nothing was
// published for an Interval, and otherwise when the Interval ends, with
// whatever the state is by then: a presenter stepping fast costs the stream
// ten messages a second at most.
func (c *Classroom) run() {
	var (
		st       State
		dirty    bool
		cooldown <-chan time.Time
	)
	for {
		select {
		case <-c.done:
			return
		case op := <-c.ops:
			if op.change(&st) {
				dirty = true
			}
			c.flush(&st, &dirty, &cooldown)
			close(op.done) // after the publication: callers see it done
			continue
		case <-cooldown:
			cooldown = nil
		}
		c.flush(&st, &dirty, &cooldown)
	}
}

// flush publishes a pending change unless an Interval is still running.
func (c *Classroom) flush(st *State, dirty *bool, cooldown *<-chan time.Time) {
	if *dirty && *cooldown == nil {
		c.publish(*st)
		*dirty = false
		*cooldown = c.opts.After(c.opts.Interval)
	}
}

// op is a change of the state, run by the owning goroutine, which closes
// done once it is handled.
type op struct {
	change func(*State) bool
	done   chan struct{}
}

func (c *Classroom) publish(st State) {
	raw, err := json.Marshal(st)
	if err != nil {
		return // plain strings and numbers: cannot fail
	}
	c.pub.PublishState(Ref, raw)
}

// do runs op in the owning goroutine and waits for it; op reports whether
// it changed what is published. After Close it does nothing.
func (c *Classroom) do(change func(*State) bool) {
	o := op{change: change, done: make(chan struct{})}
	select {
	case c.ops <- o:
		<-o.done
	case <-c.done:
	}
}

// Present makes namespace the presenter's: every learner's lab follows it
// as presenterName (DefaultPresenterName when empty, cut to MaxNameLen).
func (c *Classroom) Present(namespace, presenterName string) {
	name := CleanName(presenterName)
	since := c.opts.Now().UnixMilli()
	c.do(func(s *State) bool {
		s.Presenting, s.Name, s.Namespace, s.View = true, name, namespace, &View{Path: "/lab", Speed: 1}
		s.Since = max(since, s.Since+1)
		return true
	})
}

// StopPresenting lets every learner go back to their own lab. The
// narration and the last goto stay: they are the demo's and everyone's.
func (c *Classroom) StopPresenting() {
	c.do(func(s *State) bool {
		if !s.Presenting {
			return false
		}
		s.Presenting, s.Name, s.Namespace, s.View = false, "", "", nil
		return true
	})
}

// Presenting returns the presenter's namespace, if anyone presents.
func (c *Classroom) Presenting() (namespace string, ok bool) {
	c.do(func(s *State) bool {
		namespace, ok = s.Namespace, s.Presenting
		return false
	})
	return namespace, ok
}

// Presenter returns who presents, as the banner names them, if anyone does.
func (c *Classroom) Presenter() (name string, ok bool) {
	c.do(func(s *State) bool {
		name, ok = s.Name, s.Presenting
		return false
	})
	return name, ok
}

// Narrate shows n to everyone; an empty Text clears the narration.
func (c *Classroom) Narrate(n Narration) {
	c.do(func(s *State) bool {
		if n.Text == "" {
			changed := s.Narration != nil
			s.Narration = nil
			return changed
		}
		s.Narration = &n
		return true
	})
}

// Show takes the view reported by the lab of namespace: it is refused with
// ErrNotPresenter unless namespace presents, and with an error naming the
// field when the view is malformed.
func (c *Classroom) Show(namespace string, v View) error {
	if err := v.Validate(); err != nil {
		return err
	}
	var err error
	c.do(func(s *State) bool {
		if !s.Presenting || s.Namespace != namespace || namespace == "" {
			err = ErrNotPresenter
			return false
		}
		if s.View != nil && *s.View == v {
			return false
		}
		s.View = &v
		return true
	})
	return err
}

// SendEveryone sends every open page to href, once, following or not: a
// local path such as /lab?scenario=NAME or /learn/SLUG.
func (c *Classroom) SendEveryone(href string) error {
	if err := LocalPath(href); err != nil {
		return fmt.Errorf("send everyone to %q: %w", href, err)
	}
	id := c.opts.Now().UnixMilli()
	c.do(func(s *State) bool {
		// Ids grow across restarts too (they are times), so a page that
		// followed an id of the last run does not skip this one.
		if s.Goto != nil {
			id = max(id, s.Goto.ID+1)
		}
		s.Goto = &Goto{Href: href, ID: id}
		return true
	})
	return nil
}

// ClearGoto forgets the last SendEveryone: pages that load from now on are
// sent nowhere.
func (c *Classroom) ClearGoto() {
	c.do(func(s *State) bool {
		changed := s.Goto != nil
		s.Goto = nil
		return changed
	})
}

// State returns the current state, as the next publication will carry it.
func (c *Classroom) State() State {
	var out State
	c.do(func(s *State) bool {
		out = *s
		return false
	})
	return out
}

// MaxNameLen bounds the presenter's name on every learner's banner.
const MaxNameLen = 60

// CleanName is the presenter's name as the banner shows it: trimmed, without
// control characters, at most MaxNameLen characters, DefaultPresenterName
// when empty.
func CleanName(name string) string {
	name = strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f || r == ' ' }), " ")
	if r := []rune(name); len(r) > MaxNameLen {
		name = string(r[:MaxNameLen])
	}
	if name == "" {
		return DefaultPresenterName
	}
	return name
}
