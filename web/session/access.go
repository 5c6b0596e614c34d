package session

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
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

// ClientAddress returns how to tell a request's client address: the
// peer's, unless the peer is one of the trusted proxies (an Ingress, a
// load balancer), in which case the right-most address in X-Forwarded-For
// that is not a trusted proxy. Only a trusted proxy's header is believed,
// and only the hops it and the other trusted proxies appended: whatever a
// client writes there itself is to the left of the address its proxy saw.
// With no trusted proxies it is the peer's address.
func ClientAddress(trusted []netip.Prefix) func(*http.Request) string {
	isTrusted := func(a netip.Addr) bool {
		a = a.Unmap()
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		peer := remoteIP(r)
		addr, err := netip.ParseAddr(peer)
		if err != nil || !isTrusted(addr) {
			return peer
		}
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		client := addr
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a hop no proxy of ours wrote: stop at the last known one
			}
			client = hop.Unmap()
			if !isTrusted(client) {
				break
			}
		}
		return client.String()
	}
}

// ParseTrustedProxies reads a comma-separated list of CIDRs or single IP
// addresses, as the --trusted-proxies flag takes it.
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8) nor an IP address", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
