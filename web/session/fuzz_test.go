package session

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzSessionCookie sends arbitrary Cookie headers to a Manager holding one
// real session: nothing panics, no header finds the session unless it
// carries its exact cookie, and a refused lookup creates nothing.
//
//	go test -run '^$' -fuzz '^FuzzSessionCookie$' -fuzztime 10s ./web/session/
func FuzzSessionCookie(f *testing.F) {
	ns := &fakeNamespaces{}
	m, err := New(f.Context(), Options{Namespaces: ns, Now: (&clock{now: time.Unix(0, 0)}).Now})
	if err != nil {
		f.Fatal(err)
	}
	w := httptest.NewRecorder()
	s, err := m.Begin(w, httptest.NewRequest("GET", "/lab", nil))
	if err != nil {
		f.Fatal(err)
	}
	token := w.Result().Cookies()[0].Value
	// Real headers: the browser's, with other cookies beside it, and what a
	// forger or a broken client sends.
	for _, seed := range []string{
		CookieName + "=" + token,
		"theme=dark; " + CookieName + "=" + token + "; _ga=GA1.1",
		CookieName + "=" + strings.ToUpper(token),
		CookieName + "=" + token[:len(token)-1],
		CookieName + "=" + token + "x",
		CookieName + "=\"" + token + "\"",
		CookieName + "=" + HashCookie(token),
		CookieName + "=",
		CookieName + "=guess",
		"oplab_session=a; oplab_session=b",
		"",
		";;;=",
		strings.Repeat(CookieName+"=x; ", 200),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/lab", nil)
		r.Header.Set("Cookie", header)
		created := len(ns.created)
		got, err := m.Lookup(r)
		holds := false
		for _, c := range r.CookiesNamed(CookieName) {
			holds = holds || c.Value == token
		}
		first, _ := r.Cookie(CookieName)
		real := holds && first != nil && first.Value == token
		switch {
		case err == nil && (!real || got != s):
			t.Fatalf("header %q found session %v; only the exact cookie may", header, got)
		case err != nil && real:
			t.Fatalf("header %q carries the cookie first, but: %v", header, err)
		case err != nil && !errors.Is(err, ErrNoSession):
			t.Fatalf("header %q: %v, want ErrNoSession", header, err)
		}
		if len(ns.created) != created {
			t.Fatalf("a lookup created a namespace")
		}
		// A refused cookie on a write is still no session, in words.
		if _, err := m.NamespaceOf(r); err != nil && !strings.Contains(err.Error(), "open /lab first") {
			t.Fatalf("write with header %q: %v", header, err)
		}
	})
}
