package stream

import (
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
