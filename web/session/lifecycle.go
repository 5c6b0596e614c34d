// A session's life beyond one request: swept when idle, restored from the
// cluster's lab namespaces when oplab starts again, orphans reclaimed, and
// its namespace ended.

package session

import (
	"context"
	"errors"
	"fmt"
)

// Sweep ends every session idle for longer than its timeout (IdleTimeout,
// or NewIdleTimeout for one whose cookie never came back): it deletes its
// namespace and calls OnExpire. It returns how many sessions ended.
func (m *Manager) Sweep(ctx context.Context) (int, error) {
	var expired []*entry
	err := m.do(ctx, func(t *table) {
		now := m.opts.Now()
		for hash, e := range t.sessions {
			timeout := m.opts.IdleTimeout
			if !e.acted {
				timeout = m.opts.NewIdleTimeout
			}
			if e.lastSeen.Before(now.Add(-timeout)) {
				expired = append(expired, t.remove(hash))
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

// Restore rebuilds the table from the lab namespaces in the cluster that
// record a cookie hash: after a restart, a learner's cookie finds their
// namespace again. Restored sessions start a fresh idle period, and keep
// whether they were ever used. It returns how many it restored.
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
			t.add(ns.CookieHash, &entry{namespace: ns.Name, started: ns.Created, lastSeen: now, acted: ns.Acted})
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

// end deletes an ended session's namespace. Deleting happens outside the
// owner goroutine so a slow API server never stalls page loads.
func (m *Manager) end(ctx context.Context, e *entry) error {
	m.revoke(ctx, e.namespace)
	if err := m.opts.Namespaces.Delete(ctx, e.namespace); err != nil {
		return fmt.Errorf("delete idle lab namespace %s: %w", e.namespace, err)
	}
	if g := m.guard.Load(); g != nil {
		g.Unblock(ctx, e.namespace)
	}
	m.opts.Logger.Info("Deleted idle lab namespace", "namespace", e.namespace, "used", e.acted)
	if m.opts.OnExpire != nil {
		m.opts.OnExpire(e.namespace)
	}
	return nil
}
