package code

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/controller/trace"
)

// TestCodeOfAndImport: the export's code is what the session kept and what
// last ran; a replay's form loads a source into the editor, which the page
// then prefers to the browser's copy once; a bad import is refused, named.
func TestCodeOfAndImport(t *testing.T) {
	ctl := &fakeController{}
	h := New(Options{Controller: ctl, Sessions: oneNamespace("lab-x"), NewSandbox: childSandbox})
	mux := http.NewServeMux()
	h.Register(mux)
	do := func(method, path, contentType, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w
	}
	if c := h.CodeOf("lab-x"); c != nil {
		t.Errorf("before any code: CodeOf = %+v, want nil", c)
	}
	skeleton := starters.Source("skeleton")
	if w := do("POST", "/code/run", "application/json", `{"source":`+quote(skeleton)+`}`); w.Code != http.StatusOK || !ctl.HandedOver("lab-x") {
		t.Fatalf("run = %d %s", w.Code, w.Body)
	}
	edited := skeleton + "// edited after the run\n"
	if w := do("POST", "/code/save", "application/json", `{"source":`+quote(edited)+`}`); w.Code != http.StatusNoContent {
		t.Fatalf("save = %d %s", w.Code, w.Body)
	}
	want := trace.Code{Source: edited, Ran: skeleton, Running: true}
	if c := h.CodeOf("lab-x"); c == nil || *c != want {
		t.Errorf("CodeOf = %+v, want %+v", c, want)
	}

	form := "application/x-www-form-urlencoded"
	w := do("POST", "/code/import", form, url.Values{"source": {"package controller // from a file"}}.Encode())
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/code" {
		t.Fatalf("import = %d %s, want a redirect to /code", w.Code, w.Header().Get("Location"))
	}
	page := do("GET", "/code", "", "").Body.String()
	if !strings.Contains(html.UnescapeString(page), "// from a file") || !strings.Contains(page, `data-imported="true"`) || !strings.Contains(page, `id="code-imported"`) {
		t.Error("after an import the page does not show the imported code as imported")
	}
	if again := do("GET", "/code", "", "").Body.String(); strings.Contains(again, `data-imported="true"`) {
		t.Error("a second visit still prefers the imported code to the browser's copy")
	}

	for _, tt := range []struct{ name, body, want string }{
		{"no source", url.Values{"other": {"x"}}.Encode(), `source: the form needs exactly one field "source"`},
		{"two sources", url.Values{"source": {"a", "b"}}.Encode(), `exactly one field "source"`},
		{"too large", url.Values{"source": {strings.Repeat("x", trace.MaxCodeBytes+1)}}.Encode(), "source: 262145 bytes, more than the 256 KiB"},
	} {
		if w := do("POST", "/code/import", form, tt.body); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("import with %s = %d %q, want 400 containing %q", tt.name, w.Code, w.Body, tt.want)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
