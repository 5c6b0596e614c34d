package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
)

// The server is built without a cluster, and its routes answer: the
// methods each allows, 404 for what is not a route, the host check and the
// security headers on every answer, and readiness from the check it is given.
func TestRoutesWithoutACluster(t *testing.T) {
	opts, _ := fakeParts(t)
	opts.InstructorToken = "instructor-token-of-the-route-tests"
	notReady := true
	opts.Ready = func(context.Context) error {
		if notReady {
			return errNotReady
		}
		return nil
	}
	s, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path, host string
		want               int
		body               string
	}{
		{"GET", "/healthz", "", 200, "ok"},
		{"POST", "/healthz", "", http.StatusMethodNotAllowed, ""},
		{"GET", "/readyz", "", http.StatusServiceUnavailable, "not ready: the API server is the test's"},
		{"GET", "/starting", "", 200, `"phase":"ready"`},
		{"GET", "/no-such-page", "", 404, ""},
		{"GET", "/static/lab/main.js", "", 200, ""},
		{"GET", "/static/nope.js", "", 404, ""},
		{"GET", "/healthz", "attacker.example.test", http.StatusMisdirectedRequest, "attacker.example.test"},
		{"GET", "/", "", 200, "<html"},
		{"GET", "/lessons", "", 200, "<html"},
		{"GET", "/challenges", "", 200, "<html"},
		{"DELETE", "/lab", "", http.StatusMethodNotAllowed, ""},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, "http://127.0.0.1:8080"+tt.path, nil)
		if tt.host != "" {
			r.Host = tt.host
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		if w.Code != tt.want || !strings.Contains(w.Body.String(), tt.body) {
			t.Errorf("%s %s (Host %q) = %d %.200q, want %d with %q", tt.method, tt.path, tt.host, w.Code, w.Body.String(), tt.want, tt.body)
		}
		if got := w.Header().Get("Content-Security-Policy"); got != contentSecurityPolicy {
			t.Errorf("%s %s: Content-Security-Policy %q, want the server's", tt.method, tt.path, got)
		}
	}
	notReady = false
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:8080/readyz", nil))
	if w.Code != 200 {
		t.Errorf("GET /readyz once the check passes = %d %q, want 200", w.Code, w.Body.String())
	}
}

var errNotReady = errString("the API server is the test's")

type errString string

func (e errString) Error() string { return string(e) }

// A request without a session is refused where a session is needed, and
// the lab page starts one: its namespace made (here in memory), its name
// on the page, its cookie the key to the learner's own kubeconfig.
func TestRoutesSessionlessAndSession(t *testing.T) {
	opts, ns := fakeParts(t)
	s, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	for _, path := range []string{"/lab/kubeconfig", "/ws"} {
		if code, body := get(path); code < 400 || code >= 500 {
			t.Errorf("GET %s without a session = %d %.200q, want it refused", path, code, body)
		}
	}
	if got := ns.names(); len(got) != 0 {
		t.Fatalf("namespaces made before any lab page: %v", got)
	}

	code, body := get("/lab")
	made := ns.names()
	if code != 200 || len(made) != 1 || !strings.Contains(body, `data-namespace="`+made[0]+`"`) {
		t.Fatalf("GET /lab = %d, namespaces made %v; want 200 naming the one namespace made", code, made)
	}
	code, body = get("/lab/kubeconfig")
	if code != 200 || !strings.Contains(body, "namespace: "+made[0]) {
		t.Errorf("GET /lab/kubeconfig with the session = %d %.200q, want 200 with the kubeconfig of %s", code, body, made[0])
	}
	if code, _ := get("/lab"); code != 200 || len(ns.names()) != 1 {
		t.Errorf("GET /lab again = %d, namespaces %v: want the same session", code, ns.names())
	}
}
