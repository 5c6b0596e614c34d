package session

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddress returns how to tell a request's client, the key of the
// per-client limits and throttles: the peer's address, unless the peer is
// one of the trusted proxies (an Ingress, a load balancer), in which case
// X-Forwarded-For is read from the right, hop by hop, skipping trusted
// proxies: the first hop that is not one is the client, as the proxy to
// its right saw it. Whatever lies left of it is the client's own words
// and never read. The header's lines are one list, in order (RFC 9110
// 5.3: a proxy that adds a line of its own adds it last).
//
// A key is never one the client chose freely, nor a trusted proxy's own
// address that everyone behind it would share:
//   - an IPv6 client is keyed by its /64, the block one subscriber gets,
//     so rotating addresses within it is one client; an IPv4 address in
//     IPv6 (::ffff:a.b.c.d) is that IPv4 address, and a zone (%eth0) is
//     dropped;
//   - a chain that names no client (an empty or malformed hop where a
//     trusted proxy would have written an address, or trusted proxies
//     only) is keyed Unreadable: one key for all such requests, which no
//     working proxy sends, so a client who sends them shares a bucket only
//     with others who do;
//   - a trusted peer that sends no header at all is the client itself (a
//     probe).
//
// A client that connects from an address within the trusted proxies
// writes the whole header itself: list the proxies, not a network where
// other clients run.
func ClientAddress(trusted []netip.Prefix) func(*http.Request) string {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		host := remoteIP(r)
		peer, err := netip.ParseAddr(host)
		if err != nil {
			return host
		}
		peer = plain(peer)
		lines := r.Header.Values("X-Forwarded-For")
		if !isTrusted(peer) || len(lines) == 0 {
			return clientKey(peer)
		}
		hops := strings.Split(strings.Join(lines, ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, ok := parseHop(hops[i])
			if !ok {
				return Unreadable
			}
			if !isTrusted(hop) {
				return clientKey(hop)
			}
		}
		return Unreadable
	}
}

// Unreadable is the client key of every request from a trusted proxy
// whose X-Forwarded-For names no client (ClientAddress).
const Unreadable = "unreadable-x-forwarded-for"

// parseHop reads one hop of X-Forwarded-For: an IP address, or one with a
// port as some proxies write it (192.0.2.1:4711, [2001:db8::1]:4711).
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return plain(a), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return plain(ap.Addr()), true
	}
	return netip.Addr{}, false
}

// plain is a without what names the same host differently: the IPv6
// mapping of an IPv4 address, and a zone.
func plain(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// clientKey is the key of a client address: an IPv4 address itself, an
// IPv6 address its /64.
func clientKey(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
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
		if a.Zone() != "" {
			return nil, fmt.Errorf("%q: give the address without its zone (%%%s)", f, a.Zone())
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// remoteIP is the request's remote address without its port.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
