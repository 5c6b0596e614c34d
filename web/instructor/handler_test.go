package instructor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

type fakeSwitch struct{ running bool }

func (s *fakeSwitch) Start(context.Context) error { s.running = true; return nil }
func (s *fakeSwitch) Stop() error                 { s.running = false; return nil }
func (s *fakeSwitch) Running() bool               { return s.running }

const token = "s3cret-token-for-the-test"

func newMux(t *testing.T, tok string) (*http.ServeMux, *fakeSwitch) {
	t.Helper()
	sw := &fakeSwitch{running: true}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: tok, Controller: sw}).Register(mux)
	return mux, sw
}

func do(mux http.Handler, method, target string, form url.Values, cookie *http.Cookie) *httptest.ResponseRecorder {
	r := reqWith(method, target, form)
	if cookie != nil {
		r.AddCookie(cookie)
	}
	return serve(mux, r)
}

func reqWith(method, target string, form url.Values) *http.Request {
	if form == nil {
		return httptest.NewRequest(method, target, nil)
	}
	r := httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func serve(mux http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

func TestTokenOnceThenCookie(t *testing.T) {
	mux, sw := newMux(t, token)
	if w := do(mux, "GET", "/instructor", nil, nil); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `name="token"`) {
		t.Fatalf("no token: %d; want 401 with the token form", w.Code)
	}
	if w := do(mux, "GET", "/instructor?token=guess", nil, nil); w.Code != http.StatusForbidden {
		t.Errorf("wrong token: %d, want 403", w.Code)
	}
	w := do(mux, "GET", "/instructor?token="+token, nil, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/instructor" {
		t.Fatalf("right token: %d Location %q; want 303 to /instructor, dropping the token from the URL", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies = %v, want one", cookies)
	}
	c := cookies[0]
	if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/instructor" {
		t.Errorf("cookie %+v; want HttpOnly, SameSite=Strict, Path=/instructor", c)
	}
	if strings.Contains(c.Value, token) {
		t.Error("the cookie holds the token itself")
	}
	if w := do(mux, "GET", "/instructor", nil, c); w.Code != 200 || !strings.Contains(w.Body.String(), "/instructor/controller/stop") {
		t.Fatalf("with the cookie: %d; want the page with the Stop form", w.Code)
	}
	if w := do(mux, "GET", "/instructor", nil, &http.Cookie{Name: CookieName, Value: "forged"}); w.Code != http.StatusForbidden {
		t.Errorf("forged cookie: %d, want 403", w.Code)
	}

	// The switch refuses without the cookie, then works with it.
	if w := do(mux, "POST", "/instructor/controller/stop", nil, nil); w.Code != http.StatusUnauthorized || !sw.running {
		t.Errorf("stop without a token: %d running=%v; want 401 and still running", w.Code, sw.running)
	}
	if w := do(mux, "POST", "/instructor/controller/stop", nil, &http.Cookie{Name: CookieName, Value: "forged"}); w.Code != http.StatusForbidden || !sw.running {
		t.Errorf("stop with a forged cookie: %d running=%v; want 403 and still running", w.Code, sw.running)
	}
	// One click does not stop a class: without the confirmation nothing
	// stops, and the page says what is missing.
	if w := do(mux, "POST", "/instructor/controller/stop", nil, c); w.Code != http.StatusBadRequest || !sw.running || !strings.Contains(w.Body.String(), "confirm: tick the box") {
		t.Fatalf("stop without the confirmation: %d running=%v; want 400 naming confirm, and still running", w.Code, sw.running)
	}
	if w := do(mux, "POST", "/instructor/controller/stop", url.Values{"confirm": {ConfirmStop}}, c); w.Code != http.StatusSeeOther || sw.running {
		t.Fatalf("stop: %d running=%v; want 303 and stopped", w.Code, sw.running)
	}
	if w := do(mux, "GET", "/instructor?done=stopped", nil, c); !strings.Contains(w.Body.String(), "Stopped the controller for everyone") ||
		!strings.Contains(w.Body.String(), "/instructor/controller/start") {
		t.Errorf("page after stop lacks the outcome or the Start form")
	}
	if w := do(mux, "POST", "/instructor/controller/start", nil, c); w.Code != http.StatusSeeOther || !sw.running {
		t.Errorf("start: %d running=%v", w.Code, sw.running)
	}
	if w := do(mux, "POST", "/instructor/controller/reboot", nil, c); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), `"reboot" is not a controller action`) {
		t.Errorf("bogus action: %d %s", w.Code, w.Body)
	}
}

func TestLoginForm(t *testing.T) {
	mux, _ := newMux(t, token)
	if w := do(mux, "POST", "/instructor", url.Values{"token": {"nope"}}, nil); w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
		t.Errorf("wrong token by form: %d cookies %v; want 403 and no cookie", w.Code, w.Result().Cookies())
	}
	w := do(mux, "POST", "/instructor", url.Values{"token": {token}}, nil)
	if w.Code != http.StatusSeeOther || len(w.Result().Cookies()) != 1 {
		t.Errorf("right token by form: %d; want 303 and the cookie", w.Code)
	}
}

func TestNoTokenConfiguredRefusesEveryone(t *testing.T) {
	mux, sw := newMux(t, "")
	if w := do(mux, "GET", "/instructor?token=", nil, nil); w.Code != http.StatusForbidden {
		t.Errorf("page: %d, want 403", w.Code)
	}
	if w := do(mux, "POST", "/instructor", url.Values{"token": {""}}, nil); w.Code != http.StatusForbidden {
		t.Errorf("login with an empty token: %d, want 403", w.Code)
	}
	// The digest of the empty token must not open the switch either.
	forged := &http.Cookie{Name: CookieName, Value: func() string { d := digest(""); return string(hexOf(d[:])) }()}
	if w := do(mux, "POST", "/instructor/controller/stop", nil, forged); w.Code != http.StatusForbidden || !sw.running {
		t.Errorf("stop with the empty token's cookie: %d running=%v; want 403", w.Code, sw.running)
	}
}

func hexOf(b []byte) []byte {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return out
}
