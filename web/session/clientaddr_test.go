package session

import (
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Issue 19 (g): behind an Ingress every learner had the proxy's address.
// The client address comes from X-Forwarded-For only when the peer is a
// trusted proxy, and is the right-most hop no trusted proxy wrote.
func TestClientAddressTrustsOnlyTheProxies(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 192.168.1.5,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	clientOf := ClientAddress(trusted)
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy", "203.0.113.9:5000", nil, "203.0.113.9"},
		{"an untrusted peer's header is ignored", "203.0.113.9:5000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"the Ingress's hop", "10.1.2.3:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a forged hop left of the real one", "10.1.2.3:5000", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"two trusted proxies", "10.1.2.3:5000", []string{"198.51.100.1, 192.168.1.5"}, "198.51.100.1"},
		{"headers given twice are one list", "10.1.2.3:5000", []string{"1.2.3.4", "198.51.100.1"}, "198.51.100.1"},
		{"a trusted peer without the header", "10.1.2.3:5000", nil, "10.1.2.3"},
		{"IPv6 proxy", "[fd00::1]:5000", []string{"2001:db8::7"}, "2001:db8::/64"},
		{"IPv4 in IPv6", "[::ffff:10.1.2.3]:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"IPv4 in IPv6 in the header", "10.1.2.3:5000", []string{"::ffff:198.51.100.1, ::ffff:10.9.9.9"}, "198.51.100.1"},
		{"hops with ports", "10.1.2.3:5000", []string{"198.51.100.1:4711, [fd00::2]:80"}, "198.51.100.1"},
		{"a proxy's own line after the client's", "10.1.2.3:5000", []string{"1.2.3.4, 5.6.7.8", "198.51.100.1", "192.168.1.5"}, "198.51.100.1"},
		// Issue 50 (4): a chain that cannot be read is one key, neither a
		// trusted proxy's address (10.9.9.9 was) nor what the client wrote.
		{"a garbage hop between proxies", "10.1.2.3:5000", []string{"198.51.100.1, nonsense, 10.9.9.9"}, Unreadable},
		{"garbage right of a trusted hop", "10.1.2.3:5000", []string{"X, 10.9.9.9"}, Unreadable},
		{"an empty hop", "10.1.2.3:5000", []string{"198.51.100.1, , 10.9.9.9"}, Unreadable},
		{"a trailing comma", "10.1.2.3:5000", []string{"198.51.100.1,"}, Unreadable},
		{"an empty header", "10.1.2.3:5000", []string{""}, Unreadable},
		{"trusted proxies only", "10.1.2.3:5000", []string{"10.9.9.9, 192.168.1.5"}, Unreadable},
		{"a name, not an address", "10.1.2.3:5000", []string{"unknown"}, Unreadable},
		// Rotating within a /64, or a zone, is one client.
		{"an IPv4 client is its address", "203.0.113.9:5000", nil, "203.0.113.9"},
		{"an IPv6 peer is its /64", "[2001:db8:1:2:aaaa::1]:5000", nil, "2001:db8:1:2::/64"},
		{"an IPv6 hop is its /64", "10.1.2.3:5000", []string{"2001:db8:1:2:ffff::9"}, "2001:db8:1:2::/64"},
		{"a zone is dropped", "10.1.2.3:5000", []string{"fe80::1%eth7"}, "fe80::/64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/lab", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientOf(r); got != tc.want {
				t.Errorf("client = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,ingress"); err == nil || !strings.Contains(err.Error(), `"ingress"`) {
		t.Errorf("ParseTrustedProxies of a name = %v, want an error naming it", err)
	}
	if _, err := ParseTrustedProxies("fe80::1%eth0"); err == nil || !strings.Contains(err.Error(), "zone") {
		t.Errorf("ParseTrustedProxies of a zoned address = %v, want an error naming the zone", err)
	}
}

// Per-client limits count the address behind the proxy: a class behind
// one Ingress is not capped at --max-sessions-per-client.
func TestPerClientLimitBehindTrustedProxy(t *testing.T) {
	trusted, _ := ParseTrustedProxies("10.0.0.0/8")
	m := newManagerOpts(t, Options{Namespaces: &fakeNamespaces{}, MaxSessions: 100, MaxPerClient: 2, ClientOf: ClientAddress(trusted)})
	for i := range 30 {
		r := httptest.NewRequest("GET", "/lab", nil)
		r.RemoteAddr = "10.0.0.1:443"
		r.Header.Set("X-Forwarded-For", "198.51.100."+strconv.Itoa(i))
		if _, err := m.Begin(httptest.NewRecorder(), r); err != nil {
			t.Fatalf("learner %d behind the proxy: %v", i, err)
		}
	}
	r := httptest.NewRequest("GET", "/lab", nil)
	r.RemoteAddr = "10.0.0.1:443"
	r.Header.Set("X-Forwarded-For", "198.51.100.0")
	if _, err := m.Begin(httptest.NewRecorder(), r); err != nil {
		t.Fatalf("second session of one learner: %v", err)
	}
	if _, err := m.Begin(httptest.NewRecorder(), r); !errors.Is(err, ErrFull) {
		t.Errorf("third session of one learner behind the proxy = %v, want ErrFull", err)
	}
}
