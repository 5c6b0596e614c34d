package session

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/web/progress"
)

// This file is what the table holds of each learner besides their
// namespace: their display name and progress (web/progress checks a
// report, Report keeps it), written on their requests, and read, all
// sessions at once, by the instructor's roster (List).

// update runs f on the caller's entry on the owner goroutine; it reports
// whether the caller has a session.
func (m *Manager) update(r *http.Request, f func(*entry)) bool {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return false
	}
	hash := HashCookie(c.Value)
	found := false
	_ = m.do(r.Context(), func(t *table) {
		if e, ok := t.sessions[hash]; ok {
			f(e)
			found = true
		}
	})
	return found
}

// Check is Lookup for web/progress: ErrNoSession when the caller has no
// session, which a report never starts; like any request of theirs it
// marks the session seen.
func (m *Manager) Check(r *http.Request) error {
	_, err := m.Lookup(r)
	return err
}

// Report keeps a learner's progress report on their session, stamped with
// the table's clock, and name as their display name unless it is nil; it
// returns the name the session then holds, or ErrNoSession.
func (m *Manager) Report(r *http.Request, p progress.Progress, name *string) (string, error) {
	p.Reported = m.opts.Now()
	var held string
	if !m.update(r, func(e *entry) {
		e.progress = p
		if name != nil {
			e.name = *name
		}
		held = e.name
	}) {
		return "", ErrNoSession
	}
	return held, nil
}

func (m *Manager) setName(r *http.Request, name string) {
	m.update(r, func(e *entry) { e.name = name })
}

// SessionInfo is one learner session as the instructor's roster shows it.
type SessionInfo struct {
	Namespace string
	// Name is the learner's display name; empty when they gave none.
	Name     string
	Started  time.Time
	LastSeen time.Time
	// Acted is whether the learner's browser ever came back after the
	// first page: false for a session a script started.
	Acted    bool
	Progress progress.Progress
}

// List returns every session, oldest first, as the owner goroutine holds
// it at this moment.
func (m *Manager) List(ctx context.Context) ([]SessionInfo, error) {
	var out []SessionInfo
	err := m.do(ctx, func(t *table) {
		out = make([]SessionInfo, 0, len(t.sessions))
		for _, e := range t.sessions {
			p := e.progress
			p.Scenarios = slices.Clone(p.Scenarios)
			if p.Challenges != nil {
				cs := make(map[string]progress.ChallengeProgress, len(p.Challenges))
				for k, v := range p.Challenges {
					cs[k] = v
				}
				p.Challenges = cs
			}
			out = append(out, SessionInfo{Namespace: e.namespace, Name: e.name, Started: e.started, LastSeen: e.lastSeen, Acted: e.acted, Progress: p})
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace, b.Namespace)
	})
	return out, nil
}
