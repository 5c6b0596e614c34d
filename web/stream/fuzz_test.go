package stream

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSince feeds raw query strings to the ?since parser: it never
// panics, accepts exactly the decimal numbers a uint64 holds, and a refusal
// quotes what was sent.
//
//	go test -run '^$' -fuzz '^FuzzParseSince$' -fuzztime 10s ./web/stream/
func FuzzParseSince(f *testing.F) {
	// Real queries: what lab/stream.js sends on a reconnect, and what a broken or
	// hostile client sends.
	for _, seed := range []string{
		"since=42", "since=0", "", "since=", "since=-1", "since=18446744073709551615",
		"since=18446744073709551616", "since=1e3", "since=0x10", "since=%2B7", "since=007",
		"since=1&since=2", "ns=lab-a&since=12", "since=%00", "since=%E2%80%8B1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		since, resume, err := parseSince(q)
		if !q.Has("since") {
			if resume || err != nil {
				t.Fatalf("%q: no since, but resume=%v err=%v", raw, resume, err)
			}
			return
		}
		v := q.Get("since")
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(v)) {
				t.Fatalf("%q: refusal %v does not quote %q", raw, err, v)
			}
			return
		}
		if !resume || strings.TrimLeft(v, "0123456789") != "" || v == "" {
			t.Fatalf("%q: accepted %q as %d (resume %v)", raw, v, since, resume)
		}
		digits := strings.TrimLeft(v, "0")
		if digits == "" {
			digits = "0"
		}
		if strconv.FormatUint(since, 10) != digits {
			t.Fatalf("%q: read %q as %d", raw, v, since)
		}
	})
}

// FuzzReadExport feeds files to ReadExport: it never panics, and what it
// accepts survives a round trip through the format it writes.
//
//	go test -run '^$' -fuzz '^FuzzReadExport$' -fuzztime 10s ./web/stream/
func FuzzReadExport(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"exportedAt":"2026-11-30T09:41:07.123456Z","namespace":"lab-x7k2p9qd","messages":[{"seq":42,"time":"2026-11-30T09:41:07.123456Z","type":"action","object":{"kind":"Database","namespace":"lab-x7k2p9qd","name":"shop"},"reconcileID":"5c0e","database":"shop","action":"create","target":{"kind":"StatefulSet","namespace":"lab-x7k2p9qd","name":"shop"},"outcome":"Created","durationNs":2100000}]}`,
		`{"version":1,"namespace":"lab-a","messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"state","object":{"kind":"Database","namespace":"lab-a","name":"a"},"state":{"name":"a","conditions":[]}}]}`,
		`{"version":1,"namespace":"lab-a","messages":[{"seq":2,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","name":"a"}},{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","name":"a"}}]}`,
		`{"version":3,"namespace":"lab-a","history":{"floor":1,"objects":[{"kind":"Database","name":"a","versions":[{"after":1,"event":"create","object":{"spec":{"replicas":1}}},{"after":2,"event":"update","patch":{"spec":{"replicas":2}}},{"after":3,"event":"delete"}]}]},"messages":[]}`,
		`{"version": 9, "messages": []}`,
		`{"version":1,"messages":null}`,
		`hello`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		e, err := ReadExport(bytes.NewReader(file), 0)
		if err != nil {
			return
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("an accepted export does not encode: %v", err)
		}
		again, err := ReadExport(bytes.NewReader(out), 0)
		if err != nil {
			t.Fatalf("an accepted export, written back, is refused: %v\n%s", err, out)
		}
		if again.Namespace != e.Namespace || len(again.Messages) != len(e.Messages) {
			t.Fatalf("round trip changed the export: %q %d → %q %d", e.Namespace, len(e.Messages), again.Namespace, len(again.Messages))
		}
	})
}
