package lab

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// historyExport is a version 3 export of lab-a: a Database created after
// message 1 with one replica and scaled to two after message 2.
func historyExport(history string) string {
	return strings.Replace(exportJSON(3, ""), `"version":1,`, `"version":3,"history":`+history+`,`, 1)
}

const scaledHistory = `{"objects":[{"kind":"Database","name":"a","versions":[
 {"after":1,"event":"create","object":{"kind":"Database","metadata":{"name":"a","namespace":"lab-a"},"spec":{"replicas":1}}},
 {"after":2,"event":"update","patch":{"spec":{"replicas":2}}}]}]}`

var travelID = regexp.MustCompile(`data-travel="([0-9a-f]+)"`)

// TestReplayTravelsInTheFilesHistory: a version 3 file's history is kept
// for its replay, under an id the page holds; /lab/replay/history answers
// from it as /lab/history does (replicas 1 after step 2, 2 after step 3,
// and the change between them); the player's data leaves the history out.
func TestReplayTravelsInTheFilesHistory(t *testing.T) {
	h := newHarness(t)
	page := upload(t, h, "scaled.json", []byte(historyExport(scaledHistory)))
	body := page.Body.String()
	if page.Code != 200 {
		t.Fatalf("replay = %d: %s", page.Code, replayError(body))
	}
	m := travelID.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the replay page holds no data-travel id")
	}
	if strings.Contains(replayData(t, body), `"history"`) {
		t.Error("the player's data carries the history, which the server serves")
	}
	replicas := func(at string) any {
		w := h.get("/lab/replay/history?" + url.Values{"replay": {m[1]}, "at": {at}}.Encode())
		var tr Travel
		if err := json.Unmarshal(w.Body.Bytes(), &tr); err != nil || w.Code != 200 {
			t.Fatalf("at=%s: %d %s", at, w.Code, w.Body)
		}
		if len(tr.Objects) == 0 {
			return nil
		}
		var obj struct{ Spec struct{ Replicas any } }
		_ = json.Unmarshal(tr.Objects[0].Object, &obj)
		return obj.Spec.Replicas
	}
	if got := []any{replicas("1"), replicas("2"), replicas("3")}; got[0] != nil || got[1] != 1.0 || got[2] != 2.0 {
		t.Errorf("replicas after steps 1, 2, 3 = %v, want none, 1, 2", got)
	}
	w := h.get("/lab/replay/history/diff?" + url.Values{"replay": {m[1]}, "from": {"2"}, "to": {"3"}}.Encode())
	if !strings.Contains(w.Body.String(), `{"field":"spec.replicas","from":"1","to":"2"}`) {
		t.Errorf("diff 2→3 = %d %s, want spec.replicas 1 → 2", w.Code, w.Body)
	}
	// Reversed, the steps are refused: every deletion would read as a creation.
	if w := h.get("/lab/replay/history/diff?" + url.Values{"replay": {m[1]}, "from": {"3"}, "to": {"2"}}.Encode()); w.Code != 400 ||
		!strings.Contains(w.Body.String(), "from: step 3 is after to, step 2") {
		t.Errorf("diff 3→2 = %d %s, want a 400 naming from", w.Code, w.Body)
	}
	// An id not kept, or none, is refused, saying why.
	if w := h.get("/lab/replay/history?replay=00&at=1"); w.Code != 404 || !strings.Contains(w.Body.String(), "open the file again") {
		t.Errorf("unknown id = %d %s", w.Code, w.Body)
	}
	if w := h.get("/lab/replay/history?at=1"); w.Code != 400 || !strings.Contains(w.Body.String(), "replay is missing") {
		t.Errorf("no id = %d %s", w.Code, w.Body)
	}
	// A file without history has no time travel.
	if w := upload(t, h, "old.json", []byte(exportJSON(3, ""))); w.Code != 200 || travelID.MatchString(w.Body.String()) {
		t.Errorf("a version 1 replay = %d, with a travel id: %v", w.Code, travelID.MatchString(w.Body.String()))
	}
}

// TestReplayRefusesBadHistory: a bad history is a 422 naming the field.
func TestReplayRefusesBadHistory(t *testing.T) {
	h := newHarness(t)
	huge := `{"objects":[{"kind":"Database","name":"a","versions":[{"after":1,"event":"create","object":{"x":"` + strings.Repeat("x", maxMessageBytes) + `"}}]}]}`
	tests := []struct{ name, file, want string }{
		{"a history in a version 2 file", strings.Replace(historyExport(scaledHistory), `"version":3`, `"version":2`, 1), "history: a version 2 export has no history"},
		{"a key in another case", historyExport(`{"Objects":[]}`), `history.Objects: unknown field (the field is "objects"`},
		{"a version key in another case", historyExport(strings.Replace(scaledHistory, `"after":2`, `"AFTER":2`, 1)), `history.objects[0].versions[1].AFTER: unknown field`},
		{"an unknown event", historyExport(strings.Replace(scaledHistory, `"update"`, `"<img src=x onerror=alert(1)>"`, 1)), `history.objects[0].versions[1].event: "<img src=x onerror=alert(1)>" is not create, update or delete`},
		{"a first version that is a patch", historyExport(`{"objects":[{"kind":"Database","name":"a","versions":[{"after":1,"event":"update","patch":{}}]}]}`), "history.objects[0].versions[0].patch: no version before it"},
		{"a Secret's data", historyExport(`{"objects":[{"kind":"Secret","name":"s","versions":[{"after":1,"event":"create","object":{"stringData":{"p":"x"}}}]}]}`), "history.objects[0].versions[0].object: stringData: a Secret's history never holds its data"},
		{"an object too large", historyExport(huge), "history.objects[0]: a single value is larger than"},
		{"the history twice", strings.Replace(historyExport(scaledHistory), `"history":`, `"history":{"objects":[]},"history":`, 1), "history: appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := upload(t, h, "bad.json", []byte(tt.file))
			if got := replayError(w.Body.String()); w.Code != 422 || !strings.Contains(got, tt.want) {
				t.Errorf("replay = %d %q, want 422 naming %q", w.Code, got, tt.want)
			}
		})
	}
}
