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
		timeout := m.opts.IdleTimeout
		if !e.acted {
			timeout = m.opts.NewIdleTimeout
		}
		a.Expires, found = e.lastSeen.Add(timeout), true
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
