package session

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestJoinCodeGuardsNewSessionsOnly(t *testing.T) {
	ns, clk := &fakeNamespaces{}, &clock{now: time.Unix(0, 0)}
	m := newManagerOpts(t, Options{Namespaces: ns, Now: clk.Now, JoinCode: "blue-otter"})

	for _, target := range []string{"/lab", "/lab?join=", "/lab?join=red-otter", "/lab?join=BLUE-OTTER"} {
		_, err := m.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
		var je *JoinError
		if !errors.As(err, &je) || !errors.Is(err, ErrJoin) {
			t.Errorf("Begin(%s) = %v, want a JoinError", target, err)
			continue
		}
		wantGiven := strings.Contains(strings.ToLower(target), "otter")
		if je.Given != wantGiven {
			t.Errorf("Begin(%s): Given = %v, want %v (%q)", target, je.Given, wantGiven, je.Error())
		}
	}
	if len(ns.created) != 0 {
		t.Fatalf("namespaces created without the join code: %v", ns.created)
	}

	w := httptest.NewRecorder()
	// A join link asks the name first (TestAJoinLinkAsksTheName in
	// web/join); with it, the lab is made.
	s, err := m.BeginAs(w, httptest.NewRequest("GET", "/lab?join=blue-otter", nil), "Ada")
	if err != nil {
		t.Fatalf("Begin with the join code: %v", err)
	}
	// The session's cookie is enough from then on: no code on later pages.
	again := httptest.NewRequest("GET", "/lab", nil)
	again.AddCookie(w.Result().Cookies()[0])
	if s2, err := m.Begin(httptest.NewRecorder(), again); err != nil || s2 != s {
		t.Errorf("Begin with the cookie, no code = %v, %v; want %v", s2, err, s)
	}
	if len(ns.created) != 1 {
		t.Errorf("created %v, want one namespace", ns.created)
	}
}
