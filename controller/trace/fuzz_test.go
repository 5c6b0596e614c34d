package trace

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzReadExport feeds files to ReadExport: it never panics, and what it
// accepts survives a round trip through the format it writes.
//
//	go test -run '^$' -fuzz '^FuzzReadExport$' -fuzztime 10s ./controller/trace/
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
