// Package session gives every browser its own lab namespace. A cookie holds a
// random token; the token maps to a namespace named lab-<random>, created in
// the cluster when the session starts (so kubectl works from the first
// second) and deleted after the session goes idle. The Manager keeps the
// table of sessions; it reaches the cluster only through Namespaces, which
// controller/labns implements (namespace, quota, RBAC). A Guard makes a learner's
// namespace again when it is deleted behind oplab's back (gone.go).
//
// Everything an anonymous request creates is bounded: sessions per client
// address and in total, and a session whose cookie never came back (a
// script, not a browser) ends after minutes with its namespace. When the
// table is full, the oldest such session makes room, or else the session
// idle longest, once idle for minutes, or else, once the newcomer's address
// has asked for minutes, the session idle longest of another address, so a
// flood, even of sessions that keep pinging, locks a learner out for
// minutes at most.
//
// The namespace records the SHA-256 of its session's cookie in an
// annotation, so a restarted oplab rebuilds the table from the cluster
// (Restore) and a learner who reloads finds their lab again. The table holds
// only those hashes, never a cookie.
//
// One goroutine (started by New) owns the session table; every other
// goroutine reaches it through a channel of operations, so the table needs no
// lock.
package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/progress"
)

// CookieName is the session cookie's name.
const CookieName = "oplab_session"

// The join code's throttle: a class behind one address mistyping it
// still gets in, a script guessing it gets one try every few seconds.
const (
	JoinGuesses    = 10
	JoinGuessEvery = 6 * time.Second
)

// ErrNoSession is returned when a request carries no known session cookie.
var ErrNoSession = errors.New("no lab session: open /lab first")

// ErrFull is returned by Begin when no new session can start: the table is
// full of sessions in use, or the caller's address has its share. The
// message says which and what to do.
var ErrFull = errors.New("too many lab sessions")

// Namespaces creates, finds and deletes lab namespaces in the cluster. It is
// the only part of Kubernetes the Manager needs (labns.KubeNamespaces is the real
// one).
type Namespaces interface {
	// Create creates the namespace, labelled labns.LabLabel=true and annotated
	// with cookieHash, with what a learner's namespace holds besides (its
	// Database quota); it succeeds if the namespace already exists.
	Create(ctx context.Context, name, cookieHash string) error
	// MarkActed records on the namespace that its session came back.
	MarkActed(ctx context.Context, name string) error
	// Delete deletes the namespace; it succeeds if it is already gone.
	Delete(ctx context.Context, name string) error
	// List returns the namespaces labelled labns.LabLabel=true that are not
	// already being deleted.
	List(ctx context.Context) ([]labns.Namespace, error)
}

var _ Namespaces = labns.KubeNamespaces{}

// Options configures a Manager.
type Options struct {
	// Namespaces creates and deletes the lab namespaces.
	Namespaces Namespaces
	// NamespacePrefix starts the names of this Manager's namespaces
	// (labns.ValidatePrefix); default labns.NamespacePrefix. Give Namespaces the same
	// one, so it touches only these.
	NamespacePrefix string
	// Revoke, when set, is called with a namespace just before the Manager
	// deletes it, so the learner's kubectl credentials stop working at once
	// rather than when the namespace's contents are finally gone. A failure
	// is logged; the namespace is deleted anyway.
	Revoke func(ctx context.Context, namespace string) error
	// IdleTimeout is how long a session that has come back at least once
	// lives without a request; default 2h.
	IdleTimeout time.Duration
	// NewIdleTimeout is how long a session whose cookie never came back
	// lives: a browser returns its cookie within seconds (the page's stream
	// and ping), a flood of cookie-less requests never does; default 10m.
	NewIdleTimeout time.Duration
	// MaxSessions caps the table, and so the lab namespaces; default 200.
	MaxSessions int
	// MaxPerClient caps the sessions of one client address, so one client
	// cannot take the whole table; 0 means no separate cap.
	MaxPerClient int
	// ClientOf names a request's client; nil means its address
	// (ClientAddress without trusted proxies).
	ClientOf func(r *http.Request) string
	// OnExpire is called with the namespace of every session that ended
	// (idle or evicted), after its namespace was deleted; nil means nothing
	// to do.
	OnExpire func(namespace string)
	// OnRestore is called with the namespace of every session Restore
	// took back from the cluster, so the learner's timeline can say that
	// oplab restarted (what it recorded before is gone with the process).
	OnRestore func(namespace string)
	// JoinCode, when set, is what a visitor must give (?join= on /lab, or
	// the join form) before a session starts: a self-hosted class keeps
	// strangers from taking namespaces. Sessions that exist keep working.
	JoinCode string
	// JoinThrottle limits wrong join codes per client address; nil means
	// JoinGuesses tries, then one every JoinGuessEvery.
	JoinThrottle *Throttle
	// EvictIdleAfter is how long a session that was used must have been
	// idle before, with the table full, it may end to make room for a
	// newcomer, and how long a newcomer's address waits, asking, before
	// the session idle longest of another address ends for it however
	// recently used; default 5 minutes.
	EvictIdleAfter time.Duration
	// Secure marks the cookie Secure (set it when served over HTTPS).
	Secure bool
	// SaveEvery is how often the sessions that changed are saved on their
	// namespaces (when Namespaces is a Saver); default DefaultSaveEvery.
	SaveEvery time.Duration
	// Keep, when set, keeps what a session's learner did once the session
	// ends (expired, evicted, or the class ended): their name, progress
	// and record, and ExportOf's export taken then, for KeepFor; nil:
	// nothing is kept.
	Keep Keeper
	// KeepFor is how long an ended session is kept; default DefaultKeepFor.
	KeepFor time.Duration
	// Ending, when set, is told of a namespace about to be deleted with
	// its session (controller.Runner.EndNamespace), so the controller
	// stops acting there first.
	Ending func(namespace string)
	// ExportOf returns the lab export of a namespace (its timeline and
	// code), taken as its session ends; nil: none is kept.
	ExportOf func(namespace string) []byte
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger logr.Logger
}

// Session is what a handler learns about the caller.
type Session struct {
	// Namespace is the session's lab namespace.
	Namespace string
}

type entry struct {
	namespace string
	client    string
	started   time.Time
	lastSeen  time.Time
	// acted is whether the cookie ever came back.
	acted bool
	flash *Flash
	// name is the learner's display name, shown to the instructor only.
	name string
	// progress is what the learner's browser last reported.
	progress progress.Progress
	// record is what the server itself saw of the learner's work.
	record progress.Record
	// role is RoleInstructor for the instructor's own lab session (begun
	// from the instructor page: Present, a demo, their lab links), which
	// the roster lists apart from the learners and the export leaves out.
	role string
	// help is the learner's raised hand; nil when it is down.
	help *Help
	// idleFrom is when a restore gave the session a fresh idle period:
	// lastSeen stays what the learner last did, for the roster, while
	// expiry counts from the later of the two.
	idleFrom time.Time
	// dirty says the entry changed since it was last saved on its
	// namespace; savedSeen is the lastSeen that save carried.
	dirty      bool
	savedSeen  time.Time
	saveFailed bool
}

// RoleInstructor marks the instructor's own lab session.
const RoleInstructor = "instructor"

// idleSince is when the session's idle period began.
func (e *entry) idleSince() time.Time {
	if e.idleFrom.After(e.lastSeen) {
		return e.idleFrom
	}
	return e.lastSeen
}

// expires is when the session ends unless its learner comes back.
func (e *entry) expires(o Options) time.Time {
	if !e.acted {
		return e.idleSince().Add(o.NewIdleTimeout)
	}
	return e.idleSince().Add(o.IdleTimeout)
}

// table is the session state the owner goroutine keeps, keyed by cookie
// hash.
type table struct {
	sessions map[string]*entry
	// byNamespace finds a session's cookie hash by its namespace.
	byNamespace map[string]string
	// ended are the sessions that ended and are kept for a while
	// (Options.Keep): by cookie hash, so the learner's next page finds
	// theirs.
	ended     map[string]*Ended
	perClient map[string]int
	// waiting holds, per client address a full table refused, when it was
	// first refused and last asked: once it has waited the bound
	// (EvictIdleAfter), it gets a place even if every session is in use.
	waiting map[string]*waiter
}

type waiter struct{ since, last time.Time }

// maxWaiting bounds the addresses the table remembers as waiting; past it,
// those that stopped asking are forgotten, and while it is still full no
// new address starts to wait.
const maxWaiting = 10000

// add enters a session. A restored session has no client (the cluster
// does not record addresses), so it counts only towards the total.
func (t *table) add(hash string, e *entry) {
	t.sessions[hash] = e
	t.byNamespace[e.namespace] = hash
	if e.client != "" {
		t.perClient[e.client]++
	}
}

func (t *table) remove(hash string) *entry {
	e, ok := t.sessions[hash]
	if !ok {
		return nil
	}
	delete(t.sessions, hash)
	delete(t.byNamespace, e.namespace)
	if e.client == "" {
		return e
	}
	if t.perClient[e.client]--; t.perClient[e.client] <= 0 {
		delete(t.perClient, e.client)
	}
	return e
}

// evictable returns the hash of the session to end to make room for a
// newcomer from client: the oldest one that never came back, else the one
// idle longest if it has been idle at least bound (before, given the time
// it took, a learner in the middle of a lesson), else, once client has
// been waiting for a place for bound (wait), the one idle longest of
// another client, however recently used: sessions that ping every few
// seconds hold a newcomer off for bound at most, never themselves, and
// never longer than the newcomer keeps asking. Without a session to end it
// returns how long client has still to wait, if a wait will do.
func (t *table) evictable(now time.Time, bound time.Duration, client string) (string, time.Duration, bool) {
	var hash string
	var oldest time.Time
	for h, e := range t.sessions {
		if !e.acted && (hash == "" || e.started.Before(oldest)) {
			hash, oldest = h, e.started
		}
	}
	if hash != "" {
		return hash, 0, true
	}
	for h, e := range t.sessions {
		if hash == "" || e.lastSeen.Before(oldest) {
			hash, oldest = h, e.lastSeen
		}
	}
	if hash != "" && now.Sub(oldest) >= bound {
		return hash, 0, true
	}
	if wait := t.wait(now, bound, client); wait > 0 {
		return "", wait, false
	}
	hash = ""
	for h, e := range t.sessions {
		if e.client != client && (hash == "" || e.lastSeen.Before(oldest)) {
			hash, oldest = h, e.lastSeen
		}
	}
	return hash, 0, hash != ""
}

// wait records that client asked for a place in a full table at now, and
// returns how much longer it must wait for one: bound from its first
// refusal, counted again if it stopped asking for bound.
func (t *table) wait(now time.Time, bound time.Duration, client string) time.Duration {
	w := t.waiting[client]
	if w == nil || now.Sub(w.last) > bound {
		if w == nil && len(t.waiting) >= maxWaiting {
			for c, o := range t.waiting {
				if now.Sub(o.last) > bound {
					delete(t.waiting, c)
				}
			}
			if len(t.waiting) >= maxWaiting {
				return bound
			}
		}
		w = &waiter{since: now}
		t.waiting[client] = w
	}
	w.last = now
	return w.since.Add(bound).Sub(now)
}

// Manager maps session cookies to lab namespaces.
type Manager struct {
	opts Options
	ops  chan func(*table)
	done <-chan struct{}
	// guard, when set (SetGuard), unblocks the namespaces end deletes.
	guard atomic.Pointer[Guard]
}

// New returns a Manager whose owner goroutine runs until ctx is done.
func New(ctx context.Context, opts Options) (*Manager, error) {
	if opts.Namespaces == nil {
		return nil, errors.New("session options: Namespaces is required")
	}
	if opts.NamespacePrefix == "" {
		opts.NamespacePrefix = labns.NamespacePrefix
	}
	if err := labns.ValidatePrefix(opts.NamespacePrefix); err != nil {
		return nil, fmt.Errorf("session options: %w", err)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 2 * time.Hour
	}
	if opts.NewIdleTimeout <= 0 {
		opts.NewIdleTimeout = 10 * time.Minute
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 200
	}
	if opts.ClientOf == nil {
		opts.ClientOf = ClientAddress(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.JoinThrottle == nil {
		opts.JoinThrottle = NewThrottle(JoinGuesses, JoinGuessEvery, opts.Now)
	}
	if opts.EvictIdleAfter <= 0 {
		opts.EvictIdleAfter = 5 * time.Minute
	}
	if opts.SaveEvery <= 0 {
		opts.SaveEvery = DefaultSaveEvery
	}
	if opts.KeepFor <= 0 {
		opts.KeepFor = DefaultKeepFor
	}
	m := &Manager{opts: opts, ops: make(chan func(*table)), done: ctx.Done()}
	go m.own(ctx)
	go m.saveLoop(ctx)
	return m, nil
}

// own is the goroutine that owns the table.
func (m *Manager) own(ctx context.Context) {
	t := &table{sessions: map[string]*entry{}, byNamespace: map[string]string{}, ended: map[string]*Ended{},
		perClient: map[string]int{}, waiting: map[string]*waiter{}}
	for {
		select {
		case <-ctx.Done():
			return
		case op := <-m.ops:
			op(t)
		}
	}
}

// do runs op on the owner goroutine and waits for it.
func (m *Manager) do(ctx context.Context, op func(*table)) error {
	finished := make(chan struct{})
	wrapped := func(t *table) { op(t); close(finished) }
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

// HashCookie returns the hex SHA-256 of a cookie value: the key of the
// session table and the value of labns.CookieHashAnnotation.
func HashCookie(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// Begin returns the caller's session, starting one (creating its namespace
// and setting its cookie on w) when the request has none. When the table is
// full it ends the oldest session whose cookie never came back to make
// room, else the session idle longest if idle for EvictIdleAfter, else,
// once the caller's address has waited EvictIdleAfter, the session idle
// longest of another address; until then, or when the caller's address
// has its share, it returns an error wrapping ErrFull.
func (m *Manager) Begin(w http.ResponseWriter, r *http.Request) (Session, error) {
	return m.begin(w, r, "", asLearner)
}

// How a session begins: a learner's (asked for the join code, told of
// their ended session), the instructor's (asked for neither), or a
// learner's again after their session ended (the join code was given
// then).
type beginHow int

const (
	asLearner beginHow = iota
	asInstructor
	asLearnerAgain
)

// BeginAs is Begin for a learner who gave a display name (on the join
// form, web/join); a session that exists takes the name. When the Manager
// asks for a join code and the request lacks the right one it returns a
// *JoinError before anything is created.
func (m *Manager) BeginAs(w http.ResponseWriter, r *http.Request, name string) (Session, error) {
	return m.begin(w, r, name, asLearner)
}

// BeginInstructor is Begin for the instructor, whose token the caller has
// checked: the class's join code is for learners, and the instructor who
// hands it out is not asked for it (their Present and demos need a lab).
func (m *Manager) BeginInstructor(w http.ResponseWriter, r *http.Request) (Session, error) {
	return m.begin(w, r, "", asInstructor)
}

// begin is Begin for a learner who may have given a display name, or
// for the instructor.
func (m *Manager) begin(w http.ResponseWriter, r *http.Request, name string, how beginHow) (Session, error) {
	if s, err := m.Lookup(r); err == nil {
		if name != "" {
			m.setName(r, name)
		}
		if how == asInstructor {
			m.update(r, func(e *entry) {
				if e.role != RoleInstructor {
					e.role, e.dirty = RoleInstructor, true
				}
			})
		}
		return s, nil
	}
	// A learner whose session ended and was kept is told so, with their
	// export, before anything new is made; the instructor starts afresh.
	if how == asLearner {
		if ended := m.endedOf(r); ended != nil {
			return Session{}, &EndedError{Ended: *ended}
		}
		if err := m.checkJoin(r); err != nil {
			return Session{}, err
		}
		// A join link carries the code and no name: the learner is asked
		// for it first, so no row of the roster reads "Unnamed".
		if code := strings.TrimSpace(r.URL.Query().Get(JoinField)); m.opts.JoinCode != "" && name == "" && r.Method == http.MethodGet && code != "" {
			return Session{}, &JoinError{AskName: true, Code: code}
		}
	}
	token, err := randomString(20)
	if err != nil {
		return Session{}, err
	}
	suffix, err := randomString(5)
	if err != nil {
		return Session{}, err
	}
	hash, client := HashCookie(token), m.opts.ClientOf(r)
	e := &entry{namespace: m.opts.NamespacePrefix + suffix, client: client, started: m.opts.Now(), name: name, dirty: true}
	e.lastSeen = e.started
	if how == asInstructor {
		e.role = RoleInstructor
	}
	var evicted *entry
	var evictedHash string
	var refused error
	err = m.do(r.Context(), func(t *table) {
		if m.opts.MaxPerClient > 0 && t.perClient[client] >= m.opts.MaxPerClient {
			refused = fmt.Errorf("%w from your address (%d, the most one address may hold): close lab tabs you no longer use, or wait a few minutes (the limit is --max-sessions-per-client)", ErrFull, m.opts.MaxPerClient)
			return
		}
		if len(t.sessions) >= m.opts.MaxSessions {
			old, wait, ok := t.evictable(e.started, m.opts.EvictIdleAfter, client)
			if !ok && wait > 0 {
				refused = fmt.Errorf("%w (%d, all in use in the last %s): reload this page in %s and the session idle longest makes room for you (or restart oplab with a larger --max-sessions)",
					ErrFull, m.opts.MaxSessions, m.opts.EvictIdleAfter, wait.Round(time.Second))
				return
			}
			if !ok {
				refused = fmt.Errorf("%w (%d, all of them your address's): close lab tabs you no longer use, or restart oplab with a larger --max-sessions", ErrFull, m.opts.MaxSessions)
				return
			}
			evicted, evictedHash = t.remove(old), old
		}
		delete(t.waiting, client)
		t.add(hash, e)
	})
	if err != nil {
		return Session{}, err
	}
	if refused != nil {
		return Session{}, refused
	}
	if evicted != nil {
		m.opts.Logger.Info("Evicted a lab session to make room", "namespace", evicted.namespace, "started", evicted.started,
			"used", evicted.acted, "lastSeen", evicted.lastSeen)
		// The newcomer may give up waiting; the delete must still happen.
		if err := m.end(context.WithoutCancel(r.Context()), evicted, evictedHash, ReasonEvicted); err != nil {
			m.opts.Logger.Error(err, "Failed to delete an evicted session's namespace", "namespace", evicted.namespace)
		}
	}
	if err := m.opts.Namespaces.Create(r.Context(), e.namespace, hash); err != nil {
		_ = m.do(context.WithoutCancel(r.Context()), func(t *table) { t.remove(hash) })
		// The create may have half-happened; deleting is idempotent.
		_ = m.opts.Namespaces.Delete(context.WithoutCancel(r.Context()), e.namespace)
		return Session{}, fmt.Errorf("create lab namespace %s: %w", e.namespace, err)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: m.opts.Secure,
	})
	m.opts.Logger.Info("Started lab session", "namespace", e.namespace)
	return Session{Namespace: e.namespace}, nil
}

// Lookup returns the caller's session and marks it as seen, or ErrNoSession.
// The first time a cookie comes back, the session counts as in use from
// then on, in the table and on its namespace.
func (m *Manager) Lookup(r *http.Request) (Session, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return Session{}, ErrNoSession
	}
	hash := HashCookie(c.Value)
	var s Session
	var found, first bool
	err = m.do(r.Context(), func(t *table) {
		e, ok := t.sessions[hash]
		if !ok {
			return
		}
		e.lastSeen = m.opts.Now()
		first, e.acted = !e.acted, true
		if e.record.Active(e.lastSeen) || first || e.lastSeen.Sub(e.savedSeen) >= time.Minute {
			e.dirty = true
		}
		s, found = Session{Namespace: e.namespace}, true
	})
	if err != nil {
		return Session{}, err
	}
	if !found {
		return Session{}, ErrNoSession
	}
	if first {
		// Only a restart reads the mark; failing to write it costs the
		// learner nothing now, so it is logged, not returned.
		if err := m.opts.Namespaces.MarkActed(r.Context(), s.Namespace); err != nil {
			m.opts.Logger.Error(err, "Failed to mark a lab namespace in use", "namespace", s.Namespace)
		}
	}
	return s, nil
}

// NamespaceOf returns the caller's namespace: the websocket handler uses it
// to pick the caller's stream, the handlers that write to pick where. The
// namespace was created when the session began, so a refused write creates
// nothing.
func (m *Manager) NamespaceOf(r *http.Request) (string, error) {
	s, err := m.Lookup(r)
	if err != nil {
		return "", err
	}
	return s.Namespace, nil
}

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
