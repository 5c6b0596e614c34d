package lab

import (
	"encoding/json"
	"strings"
	"testing"
)

// The timeline's teaching fields (the waker and its watch, the
// resourceVersion read, the status fields changed, a conflict) reach a
// replay's page exactly as exported, and a misspelt one is refused naming
// it; the exports made before them are covered by the rest of this file.
func TestReplayCarriesTheTimelineFields(t *testing.T) {
	msgs := []string{
		`{"seq":1,"time":"2026-01-01T00:00:00Z","type":"reconcile.start","object":{"kind":"Database","namespace":"lab-a","name":"a"},"reconcileID":"r1","database":"a","trigger":"event","firstEvent":"update StatefulSet a","wokenBy":{"kind":"StatefulSet","namespace":"lab-a","name":"a"},"event":"update","watch":"Owns"}`,
		`{"seq":2,"time":"2026-01-01T00:00:00Z","type":"fetch","object":{"kind":"Database","namespace":"lab-a","name":"a"},"reconcileID":"r1","database":"a","generation":1,"found":"found","resourceVersion":"241"}`,
		`{"seq":3,"time":"2026-01-01T00:00:00Z","type":"status","object":{"kind":"Database","namespace":"lab-a","name":"a"},"reconcileID":"r1","database":"a","fields":[{"field":"readyReplicas","from":"0","to":"1"},{"field":"conditions[Ready]","from":"False","to":"True"}],"observedGeneration":1}`,
		`{"seq":4,"time":"2026-01-01T00:00:00Z","type":"status","object":{"kind":"Database","namespace":"lab-a","name":"a"},"reconcileID":"r2","database":"a","resourceVersion":"241","conflict":true,"message":"409 Conflict: …","error":"the object has been modified"}`,
	}
	for _, raw := range msgs {
		out, err := ReplayMessage(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("ReplayMessage(%s): %v", raw, err)
		}
		var got, want map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			g, _ := json.Marshal(got[k])
			w, _ := json.Marshal(v)
			if string(g) != string(w) {
				t.Errorf("seq %v: %s = %s after the replay, want %s", want["seq"], k, g, w)
			}
		}
	}
	bad := strings.Replace(msgs[0], `"wokenBy"`, `"wokenby"`, 1)
	if _, err := ReplayMessage(json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), `wokenby: unknown field (the field is "wokenBy"`) {
		t.Errorf("a misspelt wokenBy: %v; want it refused, naming the field", err)
	}
	bad = strings.Replace(msgs[2], `"field":"readyReplicas"`, `"Field":"readyReplicas"`, 1)
	if _, err := ReplayMessage(json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), `fields[0].Field: unknown field`) {
		t.Errorf("a misspelt fields[0].field: %v; want it refused, naming the field", err)
	}
}
