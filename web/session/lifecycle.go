// A session's life beyond one request: swept when idle, restored from the
// cluster's lab namespaces when oplab starts again, orphans reclaimed, and
// its namespace ended.

package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ended is a session taken out of the table, to end.
type ended struct {
	entry *entry
	hash  string
}

// Sweep ends every session idle for longer than its timeout (IdleTimeout,
// or NewIdleTimeout for one whose cookie never came back): it deletes its
// namespace and calls OnExpire. It returns how many sessions ended.
func (m *Manager) Sweep(ctx context.Context) (int, error) {
	var expired []ended
	err := m.do(ctx, func(t *table) {
		now := m.opts.Now()
		for hash, e := range t.sessions {
			if e.expires(m.opts).Before(now) {
				expired = append(expired, ended{t.remove(hash), hash})
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return len(expired), errors.Join(m.endAll(ctx, expired, ReasonExpired), m.forgetKept(ctx))
}

// Restore rebuilds the table from the lab namespaces in the cluster that
// record a cookie hash: after a restart, a learner's cookie finds their
// namespace again. Restored sessions start a fresh idle period, and keep
// whether they were ever used, and what was saved on their namespaces:
// the learner's name, role, progress and what the server saw of their
// work, when they were last seen and their raised hand. It returns how
// many it restored.
func (m *Manager) Restore(ctx context.Context) (int, error) {
	found, err := m.opts.Namespaces.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("list lab namespaces: %w", err)
	}
	var restored []string
	err = m.do(ctx, func(t *table) {
		now := m.opts.Now()
		for _, ns := range found {
			if ns.CookieHash == "" || t.sessions[ns.CookieHash] != nil || !m.Owns(ns.Name) {
				continue
			}
			e := &entry{namespace: ns.Name, started: ns.Created, lastSeen: now, idleFrom: now, acted: ns.Acted}
			if err := restoreSaved(e, ns.Learner); err != nil {
				m.opts.Logger.Error(err, "Could not read what was saved of a learner on their namespace; their roster row starts empty", "namespace", ns.Name)
			}
			t.add(ns.CookieHash, e)
			restored = append(restored, ns.Name)
		}
	})
	if err != nil {
		return 0, err
	}
	n := len(restored)
	if m.opts.OnRestore != nil {
		for _, ns := range restored {
			m.opts.OnRestore(ns)
		}
	}
	if n > 0 {
		m.opts.Logger.Info("Restored lab sessions from the cluster", "count", n)
	}
	if err := m.restoreKept(ctx); err != nil {
		m.opts.Logger.Error(err, "Could not read the ended sessions kept in the cluster")
	}
	return n, nil
}

// Reclaim deletes the lab namespaces no session of this Manager owns that
// were created longer than the idle timeout ago, and returns how many it
// deleted. Run after Restore, what it finds are namespaces an older oplab
// made without a cookie hash, or ones whose session this Manager already
// ended; the age check spares the fresh namespaces of another oplab
// sharing the cluster. Namespaces whose sessions are in the table are never
// touched.
func (m *Manager) Reclaim(ctx context.Context) (int, error) {
	found, err := m.opts.Namespaces.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("list lab namespaces: %w", err)
	}
	owned := map[string]bool{}
	err = m.do(ctx, func(t *table) {
		for _, e := range t.sessions {
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
		if owned[ns.Name] || !ns.Created.Before(cutoff) || !m.Owns(ns.Name) {
			continue
		}
		m.revoke(ctx, ns.Name)
		if err := m.opts.Namespaces.Delete(ctx, ns.Name); err != nil {
			errs = append(errs, fmt.Errorf("delete orphaned lab namespace %s: %w", ns.Name, err))
			continue
		}
		n++
		m.opts.Logger.Info("Deleted orphaned lab namespace", "namespace", ns.Name, "created", ns.Created)
	}
	return n, errors.Join(errs...)
}

// end keeps what an ended session's learner did (Options.Keep: the
// export taken now, their name and record) and deletes its namespace.
// It happens outside the owner goroutine so a slow API server never
// stalls page loads. It logs one line for the session, whatever happened.
func (m *Manager) end(ctx context.Context, e *entry, hash, reason string) error {
	kept, keepErr := m.keep(ctx, e, hash, reason)
	m.revoke(ctx, e.namespace)
	// The controller stops acting there first, then lets its Databases
	// go: reconciles in a terminating namespace fail, retry and log.
	if m.opts.Ending != nil {
		m.opts.Ending(e.namespace)
	}
	if r, ok := m.opts.Namespaces.(Releaser); ok {
		if err := r.ReleaseDatabases(ctx, e.namespace); err != nil {
			keepErr = errors.Join(keepErr, err)
		}
	}
	if err := m.opts.Namespaces.Delete(ctx, e.namespace); err != nil {
		return errors.Join(keepErr, fmt.Errorf("delete ended lab namespace %s: %w", e.namespace, err))
	}
	if g := m.guard.Load(); g != nil {
		g.Unblock(ctx, e.namespace)
	}
	if keepErr != nil {
		m.opts.Logger.Error(keepErr, "Deleted an ended lab namespace; its learner's export could not be kept", "namespace", e.namespace, "reason", reason)
	} else {
		m.opts.Logger.Info("Deleted an ended lab namespace", "namespace", e.namespace, "reason", reason, "used", e.acted, "kept", kept)
	}
	if m.opts.OnExpire != nil {
		m.opts.OnExpire(e.namespace)
	}
	return nil
}

// Releaser lets an ended namespace's Databases go before it is deleted
// (labns.KubeNamespaces.ReleaseDatabases).
type Releaser interface {
	ReleaseDatabases(ctx context.Context, ns string) error
}

// endAll ends sessions side by side, a few at a time: 300 sessions ending
// at once (the end of a class) must not take one API round trip after
// another, nor 300 at once.
func (m *Manager) endAll(ctx context.Context, ended []ended, reason string) error {
	errs := make([]error, len(ended))
	sem := make(chan struct{}, endParallel)
	var wg sync.WaitGroup
	for i, x := range ended {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = m.end(ctx, x.entry, x.hash, reason)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// endParallel is how many sessions end at once.
const endParallel = 8
