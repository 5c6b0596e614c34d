package lab

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestFormRoutesSayWhatBodyTheyRead(t *testing.T) {
	h := newHarness(t)
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.WriteField("name", "orders")
	_ = mw.Close()
	tests := []struct {
		name, contentType, body string
		json                    bool
		want                    int
	}{
		{"JSON body", "application/json", `{"name":"orders","replicas":"1"}`, true, http.StatusUnsupportedMediaType},
		{"JSON body, no-JS client", "application/json", `{"name":"orders"}`, false, http.StatusUnsupportedMediaType},
		{"multipart body", mw.FormDataContentType(), mp.String(), true, http.StatusUnsupportedMediaType},
		{"garbled content type", "multipart/form-data; boundary=", "x", true, http.StatusUnsupportedMediaType},
		{"form with charset", "application/x-www-form-urlencoded; charset=utf-8", url.Values{"name": {"orders"}, "replicas": {"1"}}.Encode(), true, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/lab/databases", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.contentType)
			if tt.json {
				r.Header.Set("Accept", "application/json")
			}
			r.AddCookie(h.cookie)
			w := httptest.NewRecorder()
			h.mux.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("got %d %s; want %d", w.Code, w.Body, tt.want)
			}
			if tt.want == http.StatusUnsupportedMediaType && !strings.Contains(w.Body.String(), "application/x-www-form-urlencoded") {
				t.Errorf("refusal %q does not say what the route reads", w.Body)
			}
		})
	}
	if n := len(h.store.calls); n != 1 {
		t.Errorf("store calls %v; want only the urlencoded form's create", h.store.calls)
	}
	// A refused body leaves no flash behind for the session.
	if body := h.get("/lab").Body.String(); strings.Contains(body, "flash-error") {
		t.Error("a refused body left a flash message")
	}
}
