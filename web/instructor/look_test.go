package instructor

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLookRoutesAreTheInstructorsAlone: a learner's browser (no instructor
// cookie, or a forged one) cannot look at another learner's lab or its
// stream, and the instructor can look only at a learner's namespace.
func TestLookRoutesAreTheInstructorsAlone(t *testing.T) {
	c := &class{n: 3, start: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	var looked []string
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{Learners: c, States: c},
		Look: Look{
			Page: func(w http.ResponseWriter, r *http.Request, ns, who, stream string) {
				looked = append(looked, ns+"|"+who+"|"+stream)
			},
			Stream: func(ns string) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { looked = append(looked, "stream "+ns) })
			},
		}}).Register(mux)
	cookie := do(mux, "GET", "/instructor?token="+token, nil, nil).Result().Cookies()[0]
	target := "/instructor/look/" + learnerNS(1)
	for _, path := range []string{target, target + "/ws"} {
		if w := do(mux, "GET", path, nil, nil); w.Code != http.StatusUnauthorized {
			t.Errorf("GET %s with a learner's cookies only = %d, want 401", path, w.Code)
		}
		if w := do(mux, "GET", path, nil, &http.Cookie{Name: CookieName, Value: "forged"}); w.Code != http.StatusForbidden {
			t.Errorf("GET %s with a forged instructor cookie = %d, want 403", path, w.Code)
		}
		if w := do(mux, "POST", path, nil, cookie); w.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s = %d, want 405: the look is read-only", path, w.Code)
		}
	}
	if len(looked) != 0 {
		t.Fatalf("refused requests reached the lab: %v", looked)
	}
	if w := do(mux, "GET", "/instructor/look/kube-system", nil, cookie); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "no learner session") {
		t.Errorf("a namespace no learner has = %d %q, want 404 saying so", w.Code, w.Body.String())
	}
	do(mux, "GET", target, nil, cookie)
	do(mux, "GET", target+"/ws", nil, cookie)
	want := []string{learnerNS(1) + "|" + nameOf(1) + "|" + target + "/ws", "stream " + learnerNS(1)}
	if strings.Join(looked, ",") != strings.Join(want, ",") {
		t.Errorf("looked %v, want %v", looked, want)
	}
	// The roster links each learner's row to their lab.
	if body := do(mux, "GET", "/instructor/roster", nil, cookie).Body.String(); !strings.Contains(body, `href="`+target+`"`) {
		t.Error("the roster has no Look link to the learner's lab")
	}
}
