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
		e.progress, e.dirty = p, true
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
	m.update(r, func(e *entry) { e.name, e.dirty = name, true })
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
	Acted bool
	// Progress is what the learner's browser reported: self-reported.
	Progress progress.Progress
	// Record is what the server saw of the learner's work: verified.
	Record progress.Record
	// Instructor is the instructor's own lab session, never a learner.
	Instructor bool
	// Help is the learner's raised hand; nil when it is down.
	Help *Help
	// Expires is when the session ends unless the learner comes back.
	Expires time.Time
}

// Record changes the server's record of the work of the session whose
// namespace is ns, with f on the owner goroutine; f reports whether it
// changed anything (to be saved). It reports whether ns has a session.
// The checks that see a learner's work (challenges, quiz, flashcards,
// scenarios) call it.
func (m *Manager) Record(ctx context.Context, ns string, f func(*progress.Record) bool) bool {
	found := false
	_ = m.do(ctx, func(t *table) {
		e, ok := t.sessions[t.byNamespace[ns]]
		if !ok {
			return
		}
		found = true
		if f(&e.record) {
			e.dirty = true
		}
	})
	return found
}

// RecordFor is Record for the caller's session, if they have one (the
// quiz and flashcards need none: a reader without a lab records nothing).
func (m *Manager) RecordFor(r *http.Request, f func(*progress.Record) bool) {
	m.update(r, func(e *entry) {
		if f(&e.record) {
			e.dirty = true
		}
	})
}

// RecordOf returns a copy of the server's record of ns's session.
func (m *Manager) RecordOf(ctx context.Context, ns string) (progress.Record, bool) {
	var out progress.Record
	found := false
	_ = m.do(ctx, func(t *table) {
		if e, ok := t.sessions[t.byNamespace[ns]]; ok {
			out, found = e.record.Clone(), true
		}
	})
	return out, found
}

// Attend counts a minute of time on task for every session that has a
// page open now (open reports it by namespace) or made a request in the
// last minute. Called once a minute (cmd/oplab/app's sweep), it adds a
// learner reading a lesson, whose page makes no request, to one whose
// clicks do.
func (m *Manager) Attend(ctx context.Context, open func(namespace string) bool) error {
	var names []string
	if err := m.do(ctx, func(t *table) {
		for _, e := range t.sessions {
			names = append(names, e.namespace)
		}
	}); err != nil {
		return err
	}
	present := map[string]bool{}
	for _, ns := range names {
		present[ns] = open != nil && open(ns)
	}
	return m.do(ctx, func(t *table) {
		now := m.opts.Now()
		for _, e := range t.sessions {
			if (present[e.namespace] || now.Sub(e.lastSeen) < time.Minute) && e.record.Active(now) {
				e.dirty = true
			}
		}
	})
}

// List returns every session, oldest first, as the owner goroutine holds
// it at this moment.
func (m *Manager) List(ctx context.Context) ([]SessionInfo, error) {
	var out []SessionInfo
	err := m.do(ctx, func(t *table) {
		out = make([]SessionInfo, 0, len(t.sessions))
		for _, e := range t.sessions {
			out = append(out, SessionInfo{Namespace: e.namespace, Name: e.name, Started: e.started, LastSeen: e.lastSeen, Acted: e.acted,
				Progress: e.progress.Clone(), Record: e.record.Clone(), Instructor: e.role == RoleInstructor, Help: e.help.clone(),
				Expires: e.expires(m.opts)})
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
