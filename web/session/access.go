package session

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Access is what a learner's kubectl credentials need to know about their
// session: the one namespace they may work in, and when the session ends
// unless the learner comes back, which is when the credentials should stop
// working too.
type Access struct {
	Namespace string
	// Expires is the end of the session's idle period, as of this request.
	Expires time.Time
}

// Access returns the caller's session and the end of its idle period, or
// ErrNoSession. Like Lookup, it counts as a request of the session: the
// idle period starts again now.
func (m *Manager) Access(r *http.Request) (Access, error) {
	s, err := m.Lookup(r)
	if err != nil {
		return Access{}, err
	}
	hash := ""
	if c, err := r.Cookie(CookieName); err == nil {
		hash = HashCookie(c.Value)
	}
	a := Access{Namespace: s.Namespace}
	found := false
	err = m.do(r.Context(), func(t *table) {
		e, ok := t.sessions[hash]
		if !ok {
			return
		}
		a.Expires, found = e.expires(m.opts), true
	})
	if err != nil {
		return Access{}, err
	}
	if !found {
		// Ended between the two steps.
		return Access{}, ErrNoSession
	}
	return a, nil
}

// Standing is what a learner's page shows of their session without
// counting as a request of it: when it ends unless they come back, and
// whether they have given a name.
type Standing struct {
	Namespace string
	Name      string
	// Expires is the end of the idle period; Idle is its length.
	Expires time.Time
	Idle    time.Duration
	// Instructor is the instructor's own lab session.
	Instructor bool
	// Help is the learner's raised hand; nil when it is down.
	Help *Help
}

// Peek returns the caller's session as it stands, without marking it seen:
// a page asking when its session ends must not keep it alive.
func (m *Manager) Peek(r *http.Request) (Standing, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return Standing{}, ErrNoSession
	}
	hash := HashCookie(c.Value)
	var st Standing
	found := false
	err = m.do(r.Context(), func(t *table) {
		e, ok := t.sessions[hash]
		if !ok {
			return
		}
		found = true
		idle := m.opts.IdleTimeout
		if !e.acted {
			idle = m.opts.NewIdleTimeout
		}
		st = Standing{Namespace: e.namespace, Name: e.name, Expires: e.expires(m.opts), Idle: idle,
			Instructor: e.role == RoleInstructor, Help: e.help.clone()}
	})
	if err != nil {
		return Standing{}, err
	}
	if !found {
		return Standing{}, ErrNoSession
	}
	return st, nil
}

// Owns reports whether ns is named like one of this Manager's namespaces.
func (m *Manager) Owns(ns string) bool { return strings.HasPrefix(ns, m.opts.NamespacePrefix) }

// revoke calls Options.Revoke, if any, for a namespace about to be deleted.
func (m *Manager) revoke(ctx context.Context, ns string) {
	if m.opts.Revoke == nil {
		return
	}
	if err := m.opts.Revoke(ctx, ns); err != nil {
		m.opts.Logger.Error(err, "Failed to revoke a learner's kubectl access before deleting their namespace", "namespace", ns)
	}
}
