package session

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

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

// remoteIP is the request's remote address without its port.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
