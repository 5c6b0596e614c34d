package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller"
)

// TestExportCarriesHistory: a version 3 export carries the namespace's
// object history (across keyframes, a deletion and a re-creation, a
// Secret without its data), it reads back, and the replay's history
// answers every seq as the recorder did.
func TestExportCarriesHistory(t *testing.T) {
	rec := runRecorder(t, RecorderOptions{})
	ref := controller.ObjectRef{Kind: "StatefulSet", Namespace: "a", Name: "shop"}
	sec := controller.ObjectRef{Kind: "Secret", Namespace: "a", Name: "shop-credentials"}
	var seqs []uint64
	seqs = append(seqs, emitWait(t, rec, step("a", "shop", controller.StepEvent)))
	rec.Observe("create", sec, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: sec.Name},
		Data: map[string][]byte{"password": []byte("hunter2")}})
	for v := range keyframeEvery + 3 {
		rec.Observe("update", ref, statefulSet("a", "shop", v))
		seqs = append(seqs, emitWait(t, rec, step("a", "shop", controller.StepEvent)))
	}
	rec.Observe("delete", ref, nil)
	seqs = append(seqs, emitWait(t, rec, step("a", "shop", controller.StepEvent)))
	rec.Observe("create", ref, statefulSet("a", "shop", 40))
	seqs = append(seqs, emitWait(t, rec, step("a", "shop", controller.StepEvent)))
	// Another namespace's objects stay out of this one's export.
	rec.Observe("create", controller.ObjectRef{Kind: "StatefulSet", Namespace: "b", Name: "other"}, statefulSet("b", "other", 1))
	seqs = append(seqs, emitWait(t, rec, step("a", "shop", controller.StepEvent)))

	var buf bytes.Buffer
	if _, err := rec.Export("a").WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "hunter2") || strings.Contains(buf.String(), `"other"`) {
		t.Fatalf("the export holds a Secret's data or another namespace's object:\n%s", buf.String())
	}
	back, err := ReadExport(&buf, 0)
	if err != nil {
		t.Fatalf("reading a version %d export with history: %v", ExportVersion, err)
	}
	if back.Version != 3 || back.History == nil || len(back.History.Objects) != 2 {
		t.Fatalf("read back version %d, history %+v; want version 3 with 2 objects", back.Version, back.History)
	}
	patches := 0
	for _, o := range back.History.Objects {
		for _, v := range o.Versions {
			if len(v.Patch) > 0 {
				patches++
			}
		}
	}
	if patches < keyframeEvery {
		t.Errorf("the export has %d patches: its versions are not kept compact", patches)
	}
	replay, err := NewReplayHistory("a", *back.History)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range append(seqs, seqs[len(seqs)-1]+1) {
		want, err := rec.HistoryAt("a", seq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := replay.HistoryAt("a", seq)
		if err != nil {
			t.Fatal(err)
		}
		// Compared as values: a merge patch's output orders keys as it
		// likes.
		a, b := canonical(t, want.Objects), canonical(t, got.Objects)
		if a != b {
			t.Fatalf("seq %d: the replay's history\n%s\nthe recorder's\n%s", seq, b, a)
		}
	}
}

// TestExportReadsOldVersions: files of versions 1 and 2, without history,
// still read; a history in them is refused, as is a version after 3.
func TestExportReadsOldVersions(t *testing.T) {
	msgs := `"messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","namespace":"lab-a","name":"a"}}]`
	for _, v := range []string{"1", "2"} {
		e, err := ReadExport(strings.NewReader(`{"version":`+v+`,"namespace":"lab-a",`+msgs+`}`), 0)
		if err != nil || e.History != nil || len(e.Messages) != 1 {
			t.Errorf("version %s: %v, history %+v, %d messages", v, err, e.History, len(e.Messages))
		}
		_, err = ReadExport(strings.NewReader(`{"version":`+v+`,"namespace":"lab-a","history":{"objects":[]},`+msgs+`}`), 0)
		if want := "history: a version " + v + " export has no history"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version %s with a history: %v, want %q", v, err, want)
		}
	}
	if _, err := ReadExport(strings.NewReader(`{"version":4,"namespace":"lab-a",`+msgs+`}`), 0); err == nil || !strings.Contains(err.Error(), "unsupported version 4 (want 1 to 3)") {
		t.Errorf("version 4: %v", err)
	}
}

// TestExportRefusesBadHistory: each wrong history is refused with an error
// naming the field.
func TestExportRefusesBadHistory(t *testing.T) {
	db := `{"kind":"Database","metadata":{"name":"db"},"spec":{"replicas":1}}`
	obj := func(versions string) string { return `{"kind":"Database","name":"db","versions":[` + versions + `]}` }
	tests := []struct{ name, history, want string }{
		{"history not an object", `[]`, "Export.history of type trace.ExportHistory"},
		{"a key in another case", `{"Objects":[]}`, `history.Objects: unknown field (the field is "objects"`},
		{"a key twice", `{"objects":[],"objects":[]}`, "history.objects: appears twice"},
		{"an unknown key in a version", `{"objects":[` + obj(`{"after":1,"event":"create","object":`+db+`,"html":"x"}`) + `]}`, "history.objects[0].versions[0].html: unknown field"},
		{"a key of a version in another case", `{"objects":[` + obj(`{"After":1,"event":"create","object":`+db+`}`) + `]}`, `versions[0].After: unknown field (the field is "after"`},
		{"no kind", `{"objects":[{"name":"db","versions":[{"after":1,"event":"create","object":` + db + `}]}]}`, "history.objects[0].kind: missing"},
		{"no versions", `{"objects":[{"kind":"Database","name":"db","versions":[]}]}`, "history.objects[0].versions: none"},
		{"an unknown event", `{"objects":[` + obj(`{"after":1,"event":"<b>","object":`+db+`}`) + `]}`, `history.objects[0].versions[0].event: "<b>" is not create, update or delete`},
		{"versions out of order", `{"objects":[` + obj(`{"after":5,"event":"create","object":`+db+`},{"after":2,"event":"update","patch":{"spec":{"replicas":2}}}`) + `]}`, "history.objects[0].versions[1].after: 2 is before the previous version's 5"},
		{"a first version that is a patch", `{"objects":[` + obj(`{"after":1,"event":"update","patch":{"spec":{"replicas":2}}}`) + `]}`, "history.objects[0].versions[0].patch: no version before it to patch"},
		{"a patch after a deletion", `{"objects":[` + obj(`{"after":1,"event":"create","object":`+db+`},{"after":2,"event":"delete"},{"after":3,"event":"create","patch":{"spec":{}}}`) + `]}`, "versions[2].patch: no version before it"},
		{"too many patches in a row", `{"objects":[` + obj(`{"after":1,"event":"create","object":`+db+`}`+strings.Repeat(`,{"after":2,"event":"update","patch":{"spec":{}}}`, keyframeEvery)) + `]}`, "history.objects[0].versions[16].patch: 16 patches in a row (a whole object comes at least every 16 versions)"},
		{"a deletion with an object", `{"objects":[` + obj(`{"after":1,"event":"delete","object":`+db+`}`) + `]}`, "versions[0]: a deletion has no object or patch"},
		{"both object and patch", `{"objects":[` + obj(`{"after":1,"event":"create","object":`+db+`,"patch":{}}`) + `]}`, "versions[0]: both object and patch"},
		{"an object that is a string", `{"objects":[` + obj(`{"after":1,"event":"create","object":"<script>"}`) + `]}`, "versions[0].object: decoding json"},
		{"a duplicate key inside an object", `{"objects":[` + obj(`{"after":1,"event":"create","object":{"spec":1,"spec":2}}`) + `]}`, "versions[0].object.spec: appears twice"},
		{"a Secret with data", `{"objects":[{"kind":"Secret","name":"s","versions":[{"after":1,"event":"create","object":{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}}]}]}`, "versions[0].object: data: a Secret's history never holds its data"},
		{"an object twice", `{"objects":[` + obj(`{"after":1,"event":"create","object":`+db+`}`) + `,` + obj(`{"after":1,"event":"create","object":`+db+`}`) + `]}`, "history.objects[1]: Database db again (it is objects[0])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := `{"version":3,"namespace":"lab-a","history":` + tt.history + `,"messages":[]}`
			_, err := ReadExport(strings.NewReader(file), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadExport = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// canonical is v's JSON with every object's keys sorted.
func canonical(t *testing.T, v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(back)
	return string(out)
}
