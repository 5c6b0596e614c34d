package lab

import (
	"encoding/json"
	"html"
	"io"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller/trace"
)

// fixedCode is a code page that holds the same code for every namespace.
type fixedCode struct{ code *trace.Code }

func (f fixedCode) CodeOf(string) *trace.Code { return f.code }
func (fixedCode) ImportPath() string          { return "/code/import" }

// TestTrace: this code page has run no tests.
func (fixedCode) TestTrace(string, int) ([]byte, uint64, string, bool) { return nil, 0, "", false }

// TestExportCarriesTheLearnersCode: the export is version 2 and carries the
// code page's code; replayed, the page shows the code that ran and the
// edited code, escaped, each with a form that loads it into the editor.
func TestExportCarriesTheLearnersCode(t *testing.T) {
	code := &trace.Code{Source: "package controller\n// edited </pre><script>alert(1)</script>\n", Ran: "package controller\n// ran & done\n", Running: true}
	h := newHarnessOpts(t, Options{Code: fixedCode{code}})
	w := h.get("/lab/export")
	exported, _ := io.ReadAll(w.Body)
	var e struct {
		Version int
		Code    *trace.Code
	}
	if err := json.Unmarshal(exported, &e); err != nil || e.Version != trace.ExportVersion || e.Code == nil || *e.Code != *code {
		t.Fatalf("export = version %d, code %+v (%v), want version %d with %+v", e.Version, e.Code, err, trace.ExportVersion, code)
	}
	page := upload(t, h, "mine.json", exported)
	body := page.Body.String()
	if page.Code != 200 {
		t.Fatalf("replay = %d: %s", page.Code, replayError(body))
	}
	if strings.Contains(body, "<script>alert") {
		t.Fatal("the file's code was written into the page as HTML")
	}
	for _, want := range []string{
		`id="replay-code-ran"`, html.EscapeString("// ran & done"), "It still had the namespace",
		`id="replay-code-source"`, "Edited after it ran", html.EscapeString("</pre><script>alert(1)</script>"),
		`action="/code/import"`, "Open the code that ran in the editor", "Open this code in the editor",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the replay page lacks %q", want)
		}
	}
}

// TestReplayWithoutCode: a version 1 export, and a version 2 one without
// code, replay with no code section; a lab without a code page shows a
// file's code but offers no form to load it.
func TestReplayWithoutCode(t *testing.T) {
	h := newHarness(t)
	for _, file := range []string{exportJSON(2, ""), strings.Replace(exportJSON(2, ""), `"version":1`, `"version":2`, 1)} {
		w := upload(t, h, "old.json", []byte(file))
		if w.Code != 200 || strings.Contains(w.Body.String(), `id="replay-code"`) {
			t.Errorf("replay of %.20s… = %d, code section shown: %v", file, w.Code, strings.Contains(w.Body.String(), `id="replay-code"`))
		}
	}
	withCode := strings.Replace(exportJSON(2, ""), `"version":1,`, `"version":2,"code":{"source":"package controller\n"},`, 1)
	w := upload(t, h, "code.json", []byte(withCode))
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, `id="replay-code-source"`) || !strings.Contains(body, "It was never run") {
		t.Errorf("replay of a file with code = %d, code shown: %v", w.Code, strings.Contains(body, `id="replay-code-source"`))
	}
	if strings.Contains(body, `action="/code/import"`) {
		t.Error("a lab without a code page offers to load the code into an editor")
	}
}

// TestReplayRefusesBadCode: a code field of the wrong type or too large is
// refused, named, before anything is played.
func TestReplayRefusesBadCode(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("x", trace.MaxCodeBytes+1)
	huge := strings.Repeat("x", maxMessageBytes+1)
	tests := []struct{ name, version, code, want string }{
		{"a source too large", "2", `{"source":"` + big + `"}`, "code.source: 262145 bytes, more than the 256 KiB"},
		{"a value past the message limit", "2", `{"source":"` + huge + `"}`, "code: a single value is larger than 1024 KiB"},
		{"a source that is a number", "2", `{"source":5}`, "code: decoding json: json: cannot unmarshal number into Go struct field Code.source of type string"},
		{"code that is a list", "2", `["package controller"]`, "code: decoding json: json: cannot unmarshal array"},
		{"a key in another case", "2", `{"Source":"a"}`, `code: Source: unknown field (the field is "source"`},
		{"code twice", "2", `{"source":"a"},"code":{"source":"b"}`, "code: appears twice"},
		{"code in a version 1 file", "1", `{"source":"a"}`, "code: a version 1 export has no code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := `{"version":` + tt.version + `,"namespace":"lab-a","code":` + tt.code + `,"messages":[]}`
			w := upload(t, h, "bad.json", []byte(file))
			if got := replayError(w.Body.String()); w.Code != 422 || !strings.Contains(got, tt.want) {
				t.Errorf("got %d %q, want 422 containing %q", w.Code, got, tt.want)
			}
		})
	}
}
