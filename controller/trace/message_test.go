package trace

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadExportRejectsBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		wantErr []string // substrings the error must contain
	}{
		{"not json", `{"version":`, []string{"decoding json"}},
		{"unknown version", `{"version":4,"namespace":"a","messages":[]}`, []string{"version 4"}},
		{"missing version", `{"namespace":"a","messages":[]}`, []string{"version 0"}},
		{"seq missing", `{"version":1,"namespace":"a","messages":[{"time":"2026-11-30T09:00:00Z","type":"event","object":{"kind":"Database","name":"db"}}]}`,
			[]string{"messages[0]", "seq"}},
		{"seq not increasing", `{"version":1,"namespace":"a","messages":[` +
			`{"seq":5,"time":"2026-11-30T09:00:00Z","type":"event","object":{"kind":"Database","name":"db"}},` +
			`{"seq":7,"time":"2026-11-30T09:00:00Z","type":"event","object":{"kind":"Database","name":"db"}},` +
			`{"seq":7,"time":"2026-11-30T09:00:00Z","type":"event","object":{"kind":"Database","name":"db"}}]}`,
			[]string{"messages[2]", "seq", "7"}},
		{"type missing", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"2026-11-30T09:00:00Z","object":{"kind":"Database","name":"db"}}]}`,
			[]string{"messages[0]", "type"}},
		{"time missing", `{"version":1,"namespace":"a","messages":[{"seq":1,"type":"event","object":{"kind":"Database","name":"db"}}]}`,
			[]string{"messages[0]", "time"}},
		{"object missing", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"2026-11-30T09:00:00Z","type":"event"}]}`,
			[]string{"messages[0]", "object"}},
		{"object of another namespace", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"2026-11-30T09:00:00Z","type":"event","object":{"kind":"Database","namespace":"b","name":"db"}}]}`,
			[]string{"messages[0]", "object.namespace", `"b"`}},
		{"message not an object", `{"version":1,"namespace":"a","messages":[5]}`, []string{"messages[0]", "decoding json"}},
		{"data after the object", `{"version":1,"namespace":"a","messages":[]} {"x":1}`, []string{"after the timeline's JSON object"}},
		{"garbage after the object", `{"version":1,"namespace":"a","messages":[]}]`, []string{"after the timeline's JSON object"}},
		{"time not a time", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"yesterday","type":"event","object":{"kind":"Database","name":"db"}}]}`,
			[]string{"decoding json", "time"}},
		// Finding (d) of issue 19: encoding/json matches keys in any case and
		// keeps the last of two, JavaScript neither; such a file would be
		// checked as one thing and drawn as another.
		{"kind beside Kind", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"2026-11-30T09:00:00Z","type":"state","object":{"kind":"Database","name":"db","Kind":"Nope"},"state":{}}]}`,
			[]string{"messages[0]", "object.Kind", `"kind"`}},
		{"type beside Type", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"2026-11-30T09:00:00Z","type":"state","Type":"event","object":{"kind":"Database","name":"db"}}]}`,
			[]string{"messages[0]", "Type", `"type"`}},
		{"type twice", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"2026-11-30T09:00:00Z","type":"event","type":"state","object":{"kind":"Database","name":"db"}}]}`,
			[]string{"messages[0]", "type: appears twice"}},
		{"unknown message key", `{"version":1,"namespace":"a","messages":[{"seq":1,"time":"2026-11-30T09:00:00Z","type":"event","object":{"kind":"Database","name":"db"},"html":"<img>"}]}`,
			[]string{"messages[0]", "html: unknown field"}},
		{"Namespace beside namespace", `{"version":1,"namespace":"a","Namespace":"b","messages":[]}`,
			[]string{"Namespace", `"namespace"`}},
		{"unknown export key", `{"version":1,"namespace":"a","messages":[],"extra":1}`,
			[]string{"extra: unknown field"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadExport(strings.NewReader(tc.file), 1<<20)
			if err == nil {
				t.Fatal("ReadExport accepted a bad file")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestReadExportRefusesFilesOverTheLimit(t *testing.T) {
	file := `{"version":1,"namespace":"a","messages":[]}`
	for _, tc := range []struct {
		name  string
		file  string
		limit int64
	}{
		{"the object itself", file, int64(len(file)) - 1},
		{"spaces after it", file + strings.Repeat(" ", 20), int64(len(file)) + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadExport(strings.NewReader(tc.file), tc.limit)
			if err == nil || !strings.Contains(err.Error(), "limit") {
				t.Errorf("ReadExport of %d bytes with limit %d: error %v, want one naming the limit", len(tc.file), tc.limit, err)
			}
		})
	}
	if _, err := ReadExport(strings.NewReader(file+"\n"), int64(len(file))+1); err != nil {
		t.Errorf("ReadExport of a file exactly at the limit: %v", err)
	}
}

func TestReadExportAcceptsGoodFile(t *testing.T) {
	file := `{"version":1,"exportedAt":"2026-11-30T10:00:00Z","namespace":"a","messages":[
		{"seq":1,"time":"2026-11-30T09:00:00Z","type":"state","object":{"kind":"Database","namespace":"a","name":"db"},"state":{"replicas":1}},
		{"seq":4,"time":"2026-11-30T09:00:01Z","type":"controller","object":{"kind":"Controller","name":"database"},"message":"started"},
		{"seq":9,"time":"2026-11-30T09:00:02Z","type":"action","object":{"kind":"Database","namespace":"a","name":"db"},"action":"create","outcome":"Created","target":{"kind":"StatefulSet","namespace":"a","name":"db"}}
	]}`
	e, err := ReadExport(strings.NewReader(file), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{1, 4, 9}, seqs(decoded(t, e.Messages))); diff != "" {
		t.Errorf("seqs (-want +got):\n%s", diff)
	}
	// Read as they are in the file, not encoded again.
	if got, want := string(e.Messages[1]), `{"seq":4,"time":"2026-11-30T09:00:01Z","type":"controller","object":{"kind":"Controller","name":"database"},"message":"started"}`; got != want {
		t.Errorf("message 1 = %s, want the file's bytes %s", got, want)
	}
	ms := decoded(t, e.Messages)
	if got := string(ms[0].State); got != `{"replicas":1}` {
		t.Errorf("state = %s", got)
	}
	if ms[2].Target == nil || ms[2].Target.Kind != "StatefulSet" {
		t.Errorf("action target = %+v", ms[2].Target)
	}
}
