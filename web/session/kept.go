// An ended session is not forgotten: what its learner did is kept for a
// while (Options.Keep, in the cluster), so the learner's next page says
// their lab ended and offers the export taken then, the roster lists them
// as ended, and the class export still has their row.

package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/web/progress"
)

// Why a session ended.
const (
	ReasonExpired = "expired" // idle past --session-idle
	ReasonEvicted = "evicted" // made room for a newcomer in a full table
	ReasonEnded   = "ended"   // the instructor ended the class
)

// DefaultKeepFor is how long an ended session's learner, export and
// results are kept: the rest of a workshop day and the evening after.
const DefaultKeepFor = 24 * time.Hour

// maxKept bounds the ended sessions kept at once, whatever KeepFor says;
// past it the oldest go first.
const maxKept = 2000

// Ended is a session that ended, as it was then: the learner's name,
// progress and the server's record of their work.
type Ended struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name,omitempty"`
	Hash      string    `json:"hash"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"`
	Started   time.Time `json:"started"`
	LastSeen  time.Time `json:"lastSeen"`
	Acted     bool      `json:"acted"`
	// Progress is what the learner's browser last reported.
	Progress progress.Progress `json:"progress,omitzero"`
	Reported time.Time         `json:"reported,omitzero"`
	// Record is what the server saw of their work.
	Record progress.Record `json:"record,omitzero"`
	// Export says whether the lab's export taken at the end is kept.
	Export bool `json:"export"`
	// Continued is the namespace of the session the learner started
	// afterwards, which took their name and record over; the roster and
	// the export then list that one alone.
	Continued string `json:"continued,omitempty"`
}

// Until is when what was kept of e goes.
func (e Ended) Until(keepFor time.Duration) time.Time { return e.At.Add(keepFor) }

// Keeper keeps ended sessions in the cluster (labns.KubeNamespaces, in
// the class namespace).
type Keeper interface {
	// Keep saves data (an Ended as JSON) for namespace and the export
	// taken at its end (nil: none, or keep the one kept before).
	Keep(ctx context.Context, namespace string, data, export []byte) error
	// Kept lists every ended session kept (an Ended as JSON each),
	// without exports.
	Kept(ctx context.Context) ([][]byte, error)
	// Export returns the export kept with namespace's ended session.
	Export(ctx context.Context, namespace string) ([]byte, error)
	// Forget drops what is kept of namespace's ended session.
	Forget(ctx context.Context, namespace string) error
}

// ErrEnded is what every *EndedError is (errors.Is).
var ErrEnded = errors.New("lab session ended")

// EndedError refuses a learner a new session when their last one ended
// and is kept: their page says so and offers its export (web/join).
type EndedError struct {
	Ended Ended
}

func (e *EndedError) Error() string {
	return fmt.Sprintf("your lab %s %s", e.Ended.Namespace, reasonWords(e.Ended.Reason))
}

// Is makes errors.Is(err, ErrEnded) true.
func (e *EndedError) Is(target error) bool { return target == ErrEnded }

func reasonWords(reason string) string {
	switch reason {
	case ReasonEnded:
		return "was ended by the instructor with the class"
	case ReasonEvicted:
		return "was ended to make room for a newcomer after it had been idle"
	}
	return "expired after being idle"
}

// keep keeps what e's learner did, if anything is to be kept: a session
// whose browser never came back (a script) and the instructor's own leave
// nothing. It reports whether it kept something.
func (m *Manager) keep(ctx context.Context, e *entry, hash, reason string) (bool, error) {
	if m.opts.Keep == nil || !e.acted || e.role == RoleInstructor {
		return false, nil
	}
	k := Ended{Namespace: e.namespace, Name: e.name, Hash: hash, Reason: reason, At: m.opts.Now().UTC(), Started: e.started,
		LastSeen: e.lastSeen, Acted: e.acted, Progress: e.progress.Clone(), Reported: e.progress.Reported, Record: e.record.Clone()}
	var export []byte
	if m.opts.ExportOf != nil {
		export = m.opts.ExportOf(e.namespace)
		k.Export = len(export) > 0
	}
	err := m.keepEnded(ctx, k, export)
	if err != nil && k.Export {
		// Too large, most likely: the results without the export are
		// still the learner's and the instructor's.
		k.Export = false
		if err2 := m.keepEnded(ctx, k, nil); err2 != nil {
			return false, errors.Join(err, err2)
		}
		m.opts.Logger.Info("Kept an ended session's results without its export", "namespace", e.namespace, "why", err.Error())
		err = nil
	}
	if err != nil {
		return false, err
	}
	_ = m.do(context.WithoutCancel(ctx), func(t *table) { t.ended[hash] = &k; t.boundKept() })
	return true, nil
}

func (m *Manager) keepEnded(ctx context.Context, k Ended, export []byte) error {
	data, err := json.Marshal(k)
	if err != nil {
		return err
	}
	return m.opts.Keep.Keep(ctx, k.Namespace, data, export)
}

// boundKept drops the oldest ended sessions past maxKept from memory (the
// cluster's copies go at the next Sweep past KeepFor).
func (t *table) boundKept() {
	for len(t.ended) > maxKept {
		var oldest string
		for h, e := range t.ended {
			if oldest == "" || e.At.Before(t.ended[oldest].At) {
				oldest = h
			}
		}
		delete(t.ended, oldest)
	}
}

// restoreKept reads the ended sessions kept in the cluster into the table.
func (m *Manager) restoreKept(ctx context.Context) error {
	if m.opts.Keep == nil {
		return nil
	}
	raw, err := m.opts.Keep.Kept(ctx)
	if err != nil {
		return err
	}
	kept := make([]Ended, 0, len(raw))
	var errs []error
	for _, d := range raw {
		var e Ended
		if err := json.Unmarshal(d, &e); err != nil || e.Hash == "" {
			errs = append(errs, fmt.Errorf("an ended session kept is not one: %.60q", d))
			continue
		}
		kept = append(kept, e)
	}
	return errors.Join(append(errs, m.do(ctx, func(t *table) {
		for i := range kept {
			t.ended[kept[i].Hash] = &kept[i]
		}
		t.boundKept()
	}))...)
}

// forgetKept drops what was kept longer than KeepFor; Sweep calls it.
func (m *Manager) forgetKept(ctx context.Context) error {
	if m.opts.Keep == nil {
		return nil
	}
	var old []string
	_ = m.do(ctx, func(t *table) {
		cutoff := m.opts.Now().Add(-m.opts.KeepFor)
		for h, e := range t.ended {
			if e.At.Before(cutoff) {
				old = append(old, e.Namespace)
				delete(t.ended, h)
			}
		}
	})
	var errs []error
	for _, ns := range old {
		if err := m.opts.Keep.Forget(ctx, ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// endedOf returns the kept ended session of r's cookie, if any.
func (m *Manager) endedOf(r *http.Request) *Ended {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	hash := HashCookie(c.Value)
	var out *Ended
	_ = m.do(r.Context(), func(t *table) {
		if e, ok := t.ended[hash]; ok && e.Continued == "" {
			cp := *e
			out = &cp
		}
	})
	return out
}

// EndedOf returns the caller's ended session, as Begin would refuse it.
func (m *Manager) EndedOf(r *http.Request) (Ended, bool) {
	e := m.endedOf(r)
	if e == nil {
		return Ended{}, false
	}
	return *e, true
}

// EndedExport returns the export kept with the caller's ended session:
// only the cookie of that session reaches it.
func (m *Manager) EndedExport(r *http.Request) (Ended, []byte, error) {
	e := m.endedOf(r)
	if e == nil || m.opts.Keep == nil {
		return Ended{}, nil, ErrNoSession
	}
	if !e.Export {
		return *e, nil, nil
	}
	data, err := m.opts.Keep.Export(r.Context(), e.Namespace)
	return *e, data, err
}

// BeginAgain starts a new session for a learner whose last one ended,
// taking over their name and the server's record of their work (their
// namespace and Databases are gone): the roster and the export then list
// the new session in the old one's place. Without an ended session it is
// BeginAs.
func (m *Manager) BeginAgain(w http.ResponseWriter, r *http.Request, name string) (Session, error) {
	old := m.endedOf(r)
	if old == nil {
		return m.begin(w, r, name, asLearner)
	}
	if name == "" {
		name = old.Name
	}
	// A new cookie replaces the old one; the join code was given when the
	// old session began.
	r2 := r.Clone(r.Context())
	r2.Header.Del("Cookie")
	s, err := m.begin(w, r2, name, asLearnerAgain)
	if err != nil {
		return s, err
	}
	hash := ""
	for _, c := range cookiesSet(w) {
		if c.Name == CookieName {
			hash = HashCookie(c.Value)
		}
	}
	_ = m.do(r.Context(), func(t *table) {
		if e, ok := t.sessions[hash]; ok {
			e.record, e.dirty = old.Record.Clone(), true
		}
		if k, ok := t.ended[old.Hash]; ok {
			k.Continued = s.Namespace
		}
	})
	if m.opts.Keep != nil {
		cont := *old
		cont.Continued = s.Namespace
		if err := m.keepEnded(context.WithoutCancel(r.Context()), cont, nil); err != nil {
			m.opts.Logger.Error(err, "Could not mark an ended session as continued", "namespace", old.Namespace, "continued", s.Namespace)
		}
	}
	return s, nil
}

// cookiesSet reads the cookies a response is about to set.
func cookiesSet(w http.ResponseWriter) []*http.Cookie {
	var out []*http.Cookie
	for _, line := range w.Header().Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(line); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// ListEnded returns the ended sessions kept and not continued, oldest
// first.
func (m *Manager) ListEnded(ctx context.Context) ([]Ended, error) {
	var out []Ended
	err := m.do(ctx, func(t *table) {
		for _, e := range t.ended {
			if e.Continued == "" {
				cp := *e
				cp.Record = e.Record.Clone()
				cp.Progress = e.Progress.Clone()
				out = append(out, cp)
			}
		}
	})
	slices.SortFunc(out, func(a, b Ended) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace, b.Namespace)
	})
	return out, err
}

// EndClass ends every learner's session (not the instructor's own),
// keeping each learner's export as expiry does, and returns how many it
// ended. It returns once every namespace is deleted.
func (m *Manager) EndClass(ctx context.Context) (int, error) {
	var all []ended
	err := m.do(ctx, func(t *table) {
		for hash, e := range t.sessions {
			if e.role != RoleInstructor {
				all = append(all, ended{t.remove(hash), hash})
			}
		}
	})
	if err != nil {
		return 0, err
	}
	m.opts.Logger.Info("Ending the class", "sessions", len(all))
	return len(all), m.endAll(ctx, all, ReasonEnded)
}
