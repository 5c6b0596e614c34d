// Package session gives every browser its own lab namespace. A cookie holds a
// random token; the token maps to a namespace named lab-<random>, created in
// the cluster on the first write and deleted after the session goes idle.
//
// One goroutine (started by New) owns the session table; every other
// goroutine reaches it through a channel of operations, so the table needs no
// lock.
package session

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// CookieName is the session cookie's name.
const CookieName = "oplab_session"

// NamespacePrefix starts every lab namespace's name.
const NamespacePrefix = "lab-"

// LabLabel marks the namespaces this package creates, so that leftovers can
// be found by label.
const LabLabel = "oplab.dev/lab"

// ErrNoSession is returned when a request carries no known session cookie.
var ErrNoSession = errors.New("no lab session: open /lab first")

// Namespaces creates, finds and deletes lab namespaces in the cluster. It is
// the only part of Kubernetes this package needs.
type Namespaces interface {
	// Create creates the namespace, labelled LabLabel=true; it succeeds if the
	// namespace already exists.
	Create(ctx context.Context, name string) error
	// Delete deletes the namespace; it succeeds if it is already gone.
	Delete(ctx context.Context, name string) error
	// List returns the namespaces labelled LabLabel=true that are not
	// already being deleted.
	List(ctx context.Context) ([]Namespace, error)
}

// Namespace is a lab namespace found in the cluster.
type Namespace struct {
	Name    string
	Created time.Time
}

// Options configures a Manager.
type Options struct {
	// Namespaces creates and deletes the lab namespaces.
	Namespaces Namespaces
	// IdleTimeout is how long a session lives without a request; default 2h.
	IdleTimeout time.Duration
	// MaxSessions caps the table so a flood of cookie-less requests cannot
	// grow it without bound; default 10000.
	MaxSessions int
	// OnExpire is called (by Sweep, after deleting the namespace) with the
	// namespace of every session that expired; nil means nothing to do.
	OnExpire func(namespace string)
	// Secure marks the cookie Secure (set it when served over HTTPS).
	Secure bool
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger logr.Logger
}

// Flash is a one-shot message shown on the next page a session renders: the
// outcome of a form POST followed by a redirect.
type Flash struct {
	// Error is true when the message reports a failure.
	Error bool
	// Message is the text to show.
	Message string
	// Field names the input the message is about ("name", "replicas"), if any.
	Field string
	// Form holds the submitted values, so a failed form can be shown again as typed.
	Form map[string]string
}

// Session is what a handler learns about the caller.
type Session struct {
	// Namespace is the session's lab namespace.
	Namespace string
}

type entry struct {
	namespace string
	created   bool // the namespace exists in the cluster
	lastSeen  time.Time
	flash     *Flash
}

// Manager maps session cookies to lab namespaces.
type Manager struct {
	opts Options
	ops  chan func(map[string]*entry)
	done <-chan struct{}
}

// New returns a Manager whose owner goroutine runs until ctx is done.
func New(ctx context.Context, opts Options) (*Manager, error) {
	if opts.Namespaces == nil {
		return nil, errors.New("session options: Namespaces is required")
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 2 * time.Hour
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 10000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Manager{opts: opts, ops: make(chan func(map[string]*entry)), done: ctx.Done()}
	go m.own(ctx)
	return m, nil
}

// own is the goroutine that owns the table.
func (m *Manager) own(ctx context.Context) {
	table := map[string]*entry{}
	for {
		select {
		case <-ctx.Done():
			return
		case op := <-m.ops:
			op(table)
		}
	}
}

// do runs op on the owner goroutine and waits for it.
func (m *Manager) do(ctx context.Context, op func(map[string]*entry)) error {
	finished := make(chan struct{})
	wrapped := func(t map[string]*entry) { op(t); close(finished) }
	select {
	case m.ops <- wrapped:
	case <-ctx.Done():
		return fmt.Errorf("session table: %w", ctx.Err())
	case <-m.done:
		return errors.New("session table: stopped")
	}
	<-finished
	return nil
}

// Begin returns the caller's session, starting one (and setting its cookie
// on w) when the request has none. The namespace is only named here; it is
// created in the cluster by Namespace, on the first write, so that merely
// loading a page never creates cluster objects.
func (m *Manager) Begin(w http.ResponseWriter, r *http.Request) (Session, error) {
	if s, err := m.Lookup(r); err == nil {
		return s, nil
	}
	token, err := randomString(20)
	if err != nil {
		return Session{}, err
	}
	suffix, err := randomString(5)
	if err != nil {
		return Session{}, err
	}
	ns := NamespacePrefix + suffix
	var full bool
	err = m.do(r.Context(), func(t map[string]*entry) {
		if len(t) >= m.opts.MaxSessions {
			full = true
			return
		}
		t[token] = &entry{namespace: ns, lastSeen: m.opts.Now()}
	})
	if err != nil {
		return Session{}, err
	}
	if full {
		return Session{}, fmt.Errorf("too many lab sessions (%d): try again later", m.opts.MaxSessions)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: m.opts.Secure,
	})
	m.opts.Logger.Info("Started lab session", "namespace", ns)
	return Session{Namespace: ns}, nil
}

// Lookup returns the caller's session and marks it as seen, or ErrNoSession.
func (m *Manager) Lookup(r *http.Request) (Session, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return Session{}, ErrNoSession
	}
	var s Session
	var found bool
	err = m.do(r.Context(), func(t map[string]*entry) {
		e, ok := t[c.Value]
		if !ok {
			return
		}
		e.lastSeen = m.opts.Now()
		s, found = Session{Namespace: e.namespace}, true
	})
	if err != nil {
		return Session{}, err
	}
	if !found {
		return Session{}, ErrNoSession
	}
	return s, nil
}

// NamespaceOf returns the caller's namespace without creating anything; it
// is what the websocket handler uses to pick the caller's stream.
func (m *Manager) NamespaceOf(r *http.Request) (string, error) {
	s, err := m.Lookup(r)
	if err != nil {
		return "", err
	}
	return s.Namespace, nil
}

// Namespace returns the caller's namespace, creating it in the cluster the
// first time; handlers that write call it before writing.
func (m *Manager) Namespace(r *http.Request) (string, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return "", ErrNoSession
	}
	var ns string
	var created bool
	err = m.do(r.Context(), func(t map[string]*entry) {
		if e, ok := t[c.Value]; ok {
			e.lastSeen = m.opts.Now()
			ns, created = e.namespace, e.created
		}
	})
	if err != nil {
		return "", err
	}
	if ns == "" {
		return "", ErrNoSession
	}
	if created {
		return ns, nil
	}
	// Creating is idempotent, so two racing first writes both succeed.
	if err := m.opts.Namespaces.Create(r.Context(), ns); err != nil {
		return "", fmt.Errorf("create lab namespace %s: %w", ns, err)
	}
	m.opts.Logger.Info("Created lab namespace", "namespace", ns)
	err = m.do(r.Context(), func(t map[string]*entry) {
		if e, ok := t[c.Value]; ok {
			e.created = true
		}
	})
	return ns, err
}

// SetFlash stores f to be shown by the caller's next page.
func (m *Manager) SetFlash(r *http.Request, f Flash) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return
	}
	_ = m.do(r.Context(), func(t map[string]*entry) {
		if e, ok := t[c.Value]; ok {
			e.flash = &f
		}
	})
}

// TakeFlash returns and clears the caller's flash, if any.
func (m *Manager) TakeFlash(r *http.Request) *Flash {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	var f *Flash
	_ = m.do(r.Context(), func(t map[string]*entry) {
		if e, ok := t[c.Value]; ok {
			f, e.flash = e.flash, nil
		}
	})
	return f
}

// Sweep ends every session idle for longer than the idle timeout: it deletes
// its namespace and calls OnExpire. It returns how many sessions ended.
func (m *Manager) Sweep(ctx context.Context) (int, error) {
	var expired []*entry
	err := m.do(ctx, func(t map[string]*entry) {
		cutoff := m.opts.Now().Add(-m.opts.IdleTimeout)
		for token, e := range t {
			if e.lastSeen.Before(cutoff) {
				expired = append(expired, e)
				delete(t, token)
			}
		}
	})
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, e := range expired {
		errs = append(errs, m.end(ctx, e))
	}
	return len(expired), errors.Join(errs...)
}

// Reclaim deletes the lab namespaces no session of this Manager owns that
// were created longer than the idle timeout ago, and returns how many it
// deleted. Sessions live only in memory, so after a restart every lab
// namespace left in a long-lived cluster is an orphan; the age check spares
// the fresh namespaces of another oplab sharing the cluster. Such a
// neighbour's session older than the idle timeout is still deleted: a
// namespace's age is all the cluster tells us, and a learner active for that
// long merely gets a new namespace on their next write.
func (m *Manager) Reclaim(ctx context.Context) (int, error) {
	found, err := m.opts.Namespaces.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("list lab namespaces: %w", err)
	}
	owned := map[string]bool{}
	err = m.do(ctx, func(t map[string]*entry) {
		for _, e := range t {
			owned[e.namespace] = true
		}
	})
	if err != nil {
		return 0, err
	}
	cutoff := m.opts.Now().Add(-m.opts.IdleTimeout)
	var errs []error
	n := 0
	for _, ns := range found {
		if owned[ns.Name] || !ns.Created.Before(cutoff) {
			continue
		}
		if err := m.opts.Namespaces.Delete(ctx, ns.Name); err != nil {
			errs = append(errs, fmt.Errorf("delete orphaned lab namespace %s: %w", ns.Name, err))
			continue
		}
		n++
		m.opts.Logger.Info("Deleted orphaned lab namespace", "namespace", ns.Name, "created", ns.Created)
	}
	return n, errors.Join(errs...)
}

// end deletes an expired session's namespace. Deleting happens outside the
// owner goroutine so a slow API server never stalls page loads.
func (m *Manager) end(ctx context.Context, e *entry) error {
	if e.created {
		if err := m.opts.Namespaces.Delete(ctx, e.namespace); err != nil {
			return fmt.Errorf("delete idle lab namespace %s: %w", e.namespace, err)
		}
		m.opts.Logger.Info("Deleted idle lab namespace", "namespace", e.namespace)
	}
	if m.opts.OnExpire != nil {
		m.opts.OnExpire(e.namespace)
	}
	return nil
}

// IsLabNamespace reports whether ns is named like a lab namespace.
func IsLabNamespace(ns string) bool { return strings.HasPrefix(ns, NamespacePrefix) }

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// randomString returns n random bytes as lowercase base32, which is valid in
// both cookies and DNS labels.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return encoding.EncodeToString(b), nil
}
