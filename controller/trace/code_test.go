package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestExportCarriesCode: a version 2 export with the learner's code reads
// back with the same code; a version 1 file, written before the code page,
// still reads, without code.
func TestExportCarriesCode(t *testing.T) {
	code := &Code{Source: "package controller\n// edited\n", Ran: "package controller\n", Running: true}
	e := Export{Version: ExportVersion, ExportedAt: time.Unix(0, 0).UTC(), Namespace: "lab-a", Code: code,
		Messages: []json.RawMessage{json.RawMessage(`{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","namespace":"lab-a","name":"a"}}`)}}
	var buf bytes.Buffer
	if _, err := e.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadExport(&buf, 0)
	if err != nil {
		t.Fatalf("reading a version %d export with code: %v", ExportVersion, err)
	}
	if back.Version != ExportVersion || back.Code == nil || *back.Code != *code || len(back.Messages) != 1 {
		t.Errorf("read back version %d, code %+v, %d messages; want version %d, code %+v, 1 message", back.Version, back.Code, len(back.Messages), ExportVersion, code)
	}

	old := `{"version":1,"exportedAt":"2026-01-01T00:00:00Z","namespace":"lab-a","messages":[{"seq":1,"time":"2026-01-01T00:00:00Z","type":"event","object":{"kind":"Database","namespace":"lab-a","name":"a"}}]}`
	v1, err := ReadExport(strings.NewReader(old), 0)
	if err != nil {
		t.Fatalf("reading a version 1 export: %v", err)
	}
	if v1.Version != 1 || v1.Code != nil || len(v1.Messages) != 1 {
		t.Errorf("version 1 read as version %d, code %+v, %d messages", v1.Version, v1.Code, len(v1.Messages))
	}

	// An export without code writes no "code" key at all.
	buf.Reset()
	e.Code = nil
	if _, err := e.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"code"`) {
		t.Errorf("an export without code writes a code key:\n%s", buf.String())
	}
}

// TestExportRefusesBadCode: each wrong code is refused with an error that
// names the field.
func TestExportRefusesBadCode(t *testing.T) {
	big := strings.Repeat("x", MaxCodeBytes+1)
	tests := []struct{ name, code, version, want string }{
		{"a source too large", `{"source":"` + big + `"}`, "2", "code.source: 262145 bytes, more than the 256 KiB"},
		{"the code that ran too large", `{"source":"a","ran":"` + big + `"}`, "2", "code.ran: 262145 bytes"},
		{"a source that is a number", `{"source":5}`, "2", "code.source of type string"},
		{"code that is a string", `"package controller"`, "2", "Export.code of type trace.Code"},
		{"an unknown key in code", `{"source":"a","author":"me"}`, "2", "code.author: unknown field"},
		{"running without the code that ran", `{"source":"a","running":true}`, "2", "code.running: true, but code.ran holds no code"},
		{"code in a version 1 file", `{"source":"a"}`, "1", "code: a version 1 export has no code"},
		{"a version from the future", `{"source":"a"}`, "4", "unsupported version 4 (want 1 to 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := `{"version":` + tt.version + `,"namespace":"lab-a","code":` + tt.code + `,"messages":[]}`
			_, err := ReadExport(strings.NewReader(file), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadExport = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
