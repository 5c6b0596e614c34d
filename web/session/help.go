// A learner's raised hand: the help queue the instructor's roster shows.

package session

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Help is a learner's raised hand, from raising to the instructor's
// answer; clearing it (by either) takes it down.
type Help struct {
	// Note is what the learner wrote with it; may be empty.
	Note   string    `json:"note,omitempty"`
	Raised time.Time `json:"raised"`
	// Answered is when the instructor said they were on their way; zero
	// until then.
	Answered time.Time `json:"answered,omitzero"`
}

func (h *Help) clone() *Help {
	if h == nil {
		return nil
	}
	cp := *h
	return &cp
}

// ErrNoHand is the answer to an instructor's Answer or Clear of a hand
// that is no longer raised.
var ErrNoHand = errors.New("that learner's hand is not raised (any more)")

// RaiseHand raises the caller's hand with note (already checked), or
// changes its note; a hand raised again keeps its place in the queue.
func (m *Manager) RaiseHand(r *http.Request, note string) (Help, error) {
	var out Help
	if !m.update(r, func(e *entry) {
		if e.help == nil {
			e.help = &Help{Raised: m.opts.Now().UTC()}
		}
		e.help.Note, e.dirty = note, true
		out = *e.help
	}) {
		return Help{}, ErrNoSession
	}
	return out, nil
}

// LowerHand takes the caller's hand down.
func (m *Manager) LowerHand(r *http.Request) error {
	if !m.update(r, func(e *entry) {
		if e.help != nil {
			e.help, e.dirty = nil, true
		}
	}) {
		return ErrNoSession
	}
	return nil
}

// AnswerHand marks the hand of ns's learner answered (the instructor is on
// their way); ClearHand takes it down. Both return ErrNoHand when it is
// not raised, ErrNoSession without such a session.
func (m *Manager) AnswerHand(ctx context.Context, ns string) error {
	return m.hand(ctx, ns, func(e *entry) {
		if e.help.Answered.IsZero() {
			e.help.Answered = m.opts.Now().UTC()
		}
	})
}

// ClearHand takes the hand of ns's learner down.
func (m *Manager) ClearHand(ctx context.Context, ns string) error {
	return m.hand(ctx, ns, func(e *entry) { e.help = nil })
}

func (m *Manager) hand(ctx context.Context, ns string, f func(*entry)) error {
	var err error
	if derr := m.do(ctx, func(t *table) {
		e, ok := t.sessions[t.byNamespace[ns]]
		switch {
		case !ok:
			err = ErrNoSession
		case e.help == nil:
			err = ErrNoHand
		default:
			f(e)
			e.dirty = true
		}
	}); derr != nil {
		return derr
	}
	return err
}
