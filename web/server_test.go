package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCrossOriginWritesAreRefused(t *testing.T) {
	var reached int
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		want    int
	}{
		{"same-origin fetch", "POST", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200},
		{"cross-site form post", "POST", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"cross-site by Origin only", "POST", map[string]string{"Origin": "http://evil.example"}, 403},
		{"same host by Origin", "POST", map[string]string{"Origin": "http://oplab.test"}, 200},
		{"cross-site GET is harmless", "GET", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200},
		{"non-browser client", "POST", nil, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached = 0
			r := httptest.NewRequest(tt.method, "http://oplab.test/lab/databases", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want || (tt.want == 200) != (reached == 1) {
				t.Errorf("got %d (handler reached %d times), want %d", w.Code, reached, tt.want)
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	tests := []struct {
		name     string
		ready    func(context.Context) error
		wantCode int
		wantBody string
	}{
		{"no checks", nil, 200, "ok"},
		{"checks pass", func(context.Context) error { return nil }, 200, "ok"},
		{"check fails", func(context.Context) error { return errors.New("controller stopped") }, 503, "not ready: controller stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{opts: Options{Ready: tt.ready}}
			w := httptest.NewRecorder()
			s.readyz(w, httptest.NewRequest("GET", "/readyz", nil))
			if w.Code != tt.wantCode || !strings.Contains(w.Body.String(), tt.wantBody) {
				t.Errorf("got %d %q, want %d %q", w.Code, w.Body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestStaticAssetsAreEmbedded(t *testing.T) {
	h := StaticFiles()
	for path, want := range map[string]int{"lab/main.js": 200, "lab/cards.js": 200, "learn/main.js": 200, "learn/deck.js": 200, "morph.js": 200, "roster.js": 200, "lab.css": 200, "base.css": 200,
		"static.go": 404, "nope.js": 404, "lab.js": 404, "learn.js": 404} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/"+path, nil))
		if w.Code != want {
			t.Errorf("GET /static/%s = %d, want %d", path, w.Code, want)
		}
		// A browser runs a module only if it comes as JavaScript.
		if ct := w.Header().Get("Content-Type"); want == 200 && strings.HasSuffix(path, ".js") && !strings.HasPrefix(ct, "text/javascript") {
			t.Errorf("GET /static/%s: Content-Type %q, want text/javascript", path, ct)
		}
	}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	parts, _ := fakeParts(t)
	without := func(drop func(*Options)) Options {
		o := parts
		drop(&o)
		return o
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no client", without(func(o *Options) { o.Client = nil }), "Client is required"},
		{"no sessions", without(func(o *Options) { o.Sessions = nil }), "Sessions is required"},
		{"no states", without(func(o *Options) { o.States = nil }), "States is required"},
		{"no kubeconfigs", without(func(o *Options) { o.Kubeconfigs = nil }), "Kubeconfigs is required"},
		{"no recorder", without(func(o *Options) { o.Recorder = nil }), "Recorder is required"},
		{"no hub", without(func(o *Options) { o.Hub = nil }), "Hub is required"},
		{"no controller", without(func(o *Options) { o.Controller = nil }), "Controller is required"},
		{"negative cap", without(func(o *Options) { o.MaxDatabasesPerNamespace = -1 }), "negative"},
	}
	for _, tt := range tests {
		if _, err := New(t.Context(), tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := New(t.Context(), parts); err != nil {
		t.Errorf("New with every part: %v", err)
	}
}

type stubSwitch struct{}

func (stubSwitch) Start(context.Context) error { return nil }
func (stubSwitch) Stop() error                 { return nil }
func (stubSwitch) Running() bool               { return true }
func (stubSwitch) PauseNamespace(string)       {}
func (stubSwitch) ResumeNamespace(string)      {}
func (stubSwitch) NamespacePaused(string) bool { return false }
func (stubSwitch) HandedOver(string) bool      { return false }

func TestCheckHostRefusesUnknownNames(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := checkHost([]string{"lab.example.test"}, ok)
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:8080", http.StatusNoContent},
		{"[::1]:8080", http.StatusNoContent},
		{"localhost:8080", http.StatusNoContent},
		{"LOCALHOST", http.StatusNoContent},
		{"lab.example.test:443", http.StatusNoContent},
		{"lab.example.test.", http.StatusNoContent},
		{"attacker.example.test:8080", http.StatusMisdirectedRequest},
		{"localhost.attacker.test", http.StatusMisdirectedRequest},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/lab", nil)
		r.Host = tt.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("Host %q: status %d, want %d", tt.host, w.Code, tt.want)
		}
		if tt.want != http.StatusNoContent && !strings.Contains(w.Body.String(), "attacker") {
			t.Errorf("Host %q: body %q does not name the refused host", tt.host, w.Body.String())
		}
	}
}
