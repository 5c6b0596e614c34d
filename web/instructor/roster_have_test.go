package instructor

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// rowTag is a roster row's opening tag in the fragment.
var rowTag = regexp.MustCompile(`<tr[^>]*\bid="learner-([^"]+)"[^>]*>`)

var sigAttr = regexp.MustCompile(`\bdata-sig="([^"]*)"`)

// fragmentRows reads the fragment's rows: each namespace's digest, and the
// namespaces sent as stubs.
func fragmentRows(t *testing.T, html string) (sigs map[string]string, stubs []string) {
	t.Helper()
	sigs = map[string]string{}
	for _, m := range rowTag.FindAllStringSubmatch(html, -1) {
		s := sigAttr.FindStringSubmatch(m[0])
		if s == nil {
			t.Fatalf("row %s has no data-sig: %s", m[1], m[0])
		}
		sigs[m[1]] = s[1]
		if strings.Contains(m[0], "data-kept") {
			stubs = append(stubs, m[1])
		}
	}
	return sigs, stubs
}

func TestRosterFragmentStubsTheRowsThePageHas(t *testing.T) {
	const n = 10
	c := &class{n: n, start: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{
		Learners: c, States: c, Presence: c, QuizQuestions: 41, ChallengeCount: 14, Now: c.now,
		Self: func(*http.Request) (string, error) { return "lab-instr", nil },
	}}).Register(mux)
	get := func(have ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/instructor/roster", nil)
		r.AddCookie(instructorCookie())
		for _, h := range have {
			r.Header.Add(HaveHeader, h)
		}
		return serve(mux, r)
	}

	// Without the header (a first load, a page without script): every row
	// whole.
	w := get()
	if w.Code != http.StatusOK {
		t.Fatalf("GET without %s = %d: %s", HaveHeader, w.Code, w.Body)
	}
	first, stubs := fragmentRows(t, w.Body.String())
	if len(first) != n || len(stubs) != 0 {
		t.Fatalf("without %s: %d rows, %d stubs %v; want %d whole", HaveHeader, len(first), len(stubs), stubs, n)
	}
	if !strings.Contains(w.Header().Get("Vary"), HaveHeader) {
		t.Errorf("Vary: %q does not name %s", w.Header().Get("Vary"), HaveHeader)
	}

	// With every digest the page has: the rows that did not change since
	// are stubs, the ones that did (the class moves learners 3 and 8's
	// quiz best between its first and second List) come whole, with their
	// new digest. Stub or whole, every row keeps its place.
	var have []string
	for _, s := range first {
		have = append(have, s)
	}
	// The digests in two header lines, as a proxy may fold them.
	w = get(strings.Join(have[:4], " "), strings.Join(have[4:], "  "))
	second, stubs := fragmentRows(t, w.Body.String())
	var changed []string
	for i := range n {
		if ns := learnerNS(i); second[ns] != first[ns] {
			changed = append(changed, ns)
		}
	}
	wantChanged := []string{learnerNS(3), learnerNS(8)}
	if !slices.Equal(changed, wantChanged) {
		t.Fatalf("rows whose digest changed: %v, want %v (the class's quiz best moves)", changed, wantChanged)
	}
	slices.Sort(stubs)
	var wantStubs []string
	for i := range n {
		if ns := learnerNS(i); !slices.Contains(wantChanged, ns) {
			wantStubs = append(wantStubs, ns)
		}
	}
	slices.Sort(wantStubs)
	if !slices.Equal(stubs, wantStubs) {
		t.Errorf("stubs %v, want the unchanged rows %v", stubs, wantStubs)
	}
	body := w.Body.String()
	for _, ns := range wantChanged {
		if !strings.Contains(body, `id="reset-`+ns+`"`) {
			t.Errorf("changed row %s came without its cells", ns)
		}
	}
	for _, ns := range wantStubs {
		if strings.Contains(body, `id="reset-`+ns+`"`) {
			t.Errorf("stub %s carries its cells", ns)
		}
	}
	// The caption and counts are always whole.
	if !strings.Contains(body, `id="roster-counts"`) {
		t.Error("the counts are missing beside the stubs")
	}

	// A digest the server did not make is no row's: that row comes whole.
	w = get("0 zz")
	if _, stubs := fragmentRows(t, w.Body.String()); len(stubs) != 0 {
		t.Errorf("digests of no row gave stubs %v", stubs)
	}
}

func TestParseHaveRefusesWhatIsNoDigest(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   int
		err    string
	}{
		{nil, 0, ""},
		{[]string{""}, 0, ""},
		{[]string{" 3k9 a0zz  "}, 2, ""},
		{[]string{"3k9", "3k9 b"}, 2, ""},
		{[]string{"3k9 <script>"}, 0, `"<script>" is not a row digest`},
		{[]string{"ABC"}, 0, `"ABC" is not a row digest`},
		{[]string{"0123456789abcd"}, 0, `"0123456789abcd" is not a row digest`},
		{[]string{manyDigests(maxHave + 1)}, 0, fmt.Sprintf("more than %d row digests", maxHave)},
	} {
		got, err := parseHave(c.values)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("parseHave(%.40q): %v", c.values, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), HaveHeader)):
			t.Errorf("parseHave(%.40q) error %v, want one naming %s and saying %q", c.values, err, HaveHeader, c.err)
		case c.err == "" && len(got) != c.want:
			t.Errorf("parseHave(%.40q) = %d digests, want %d", c.values, len(got), c.want)
		}
	}
	// Through the route: a bad header is a 400 that says what was wrong.
	c := &class{n: 2, start: time.Now()}
	mux := http.NewServeMux()
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{Learners: c, States: c}}).Register(mux)
	r := httptest.NewRequest("GET", "/instructor/roster", nil)
	r.AddCookie(instructorCookie())
	r.Header.Set(HaveHeader, "ok <b>")
	if w := serve(mux, r); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), HaveHeader) {
		t.Errorf("a bad %s = %d %q, want 400 naming the header", HaveHeader, w.Code, w.Body)
	}
}

func manyDigests(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%x ", i)
	}
	return b.String()
}
