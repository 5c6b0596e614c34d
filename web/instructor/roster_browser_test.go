package instructor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/static"
)

// roster.js reports each poll and each redraw as User Timing entries (no
// attribute on the page is written for tests): rosterPolled is the time
// of the last poll's mark, rosterRedraw the last redraw's measure (its
// duration, detail.phases and detail.rows).
var (
	rosterPolled = browsertest.LastMark("oplab:roster-refresh")
	rosterRedraw = `performance.getEntriesByName("oplab:roster-redraw").at(-1)`
)

// browser is the Chromium this package's browser tests share, started by
// the first of them; the unit tests start none. Each browser test has a
// roster server and a tab of its own, so they run side by side.
// The roster of 300 does everything in one tab: twice the default bound,
// which a loaded CI machine (load 25) once reached.
var browser = &browsertest.Browser{Width: 1280, Height: 800, TabTimeout: 4 * time.Minute}

func TestMain(m *testing.M) { os.Exit(browser.Run(m)) }

// class is a made-up class of n learners, for the roster's page: the API
// server is not what these tests are about (the roster's reset and its
// cluster are tested in web/e2e/roster_test.go). Every List moves the clock
// and changes a fifth of the learners' quiz best, so each redraw has work
// to do, more than a class's 2 s poll usually brings.
type class struct {
	mu    sync.Mutex
	n     int
	calls int
	start time.Time
}

// Learner i's traits, from which both the fake and the test's
// expectations are computed.
func unnamed(i int) bool     { return i%7 == 3 }
func degradedDB(i int) bool  { return i%25 == 4 }
func away(i int) bool        { return i%10 == 9 }
func follows(i int) bool     { return i%3 == 0 }
func learnerNS(i int) string { return fmt.Sprintf("lab-%05x", 0x1a2b+i*37) }

var firstNames = []string{"Ana", "Bo", "Chen", "Dara", "Emeka", "Fatima", "Gus", "Hiro", "Ines", "Jonas", "Kemal", "Lena"}

func (c *class) List(context.Context) ([]session.SessionInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	now := c.start.Add(time.Duration(c.calls) * time.Second)
	out := make([]session.SessionInfo, 0, c.n+1)
	for i := range c.n {
		s := session.SessionInfo{Namespace: learnerNS(i), Acted: i%11 != 5, LastSeen: now.Add(-time.Duration(i%9) * time.Second)}
		if !unnamed(i) {
			s.Name = fmt.Sprintf("%s %d", firstNames[i%len(firstNames)], i)
		}
		if away(i) {
			s.LastSeen = now.Add(-AwayAfter - time.Duration(i)*time.Second)
		}
		s.Progress.Scenarios = []string{"first-reconcile", "finalizer", "drift"}[:i%4]
		// One learner in five gets a new quiz best at each List: 60 of
		// 300 rows change between two redraws.
		s.Progress.QuizBest = (i*7 + (c.calls+i%5)/5) % 41
		s.Progress.CardsReviewed = i % 30
		s.Progress.Reported = c.start
		s.Progress.Challenges = map[string]progress.ChallengeProgress{"first": {Done: i % 5, Of: 4}}
		// What the server verified: the same work, which the roster counts.
		for _, sc := range s.Progress.Scenarios {
			s.Record.ScenarioStarted(sc, 1)
			s.Record.ScenarioDone(sc, 2)
		}
		s.Record.Quiz.Best = s.Progress.QuizBest
		s.Record.Cards.Reviews = s.Progress.CardsReviewed
		s.Record.ChallengeStarted("first", 1)
		s.Record.TasksDone("first", 1, []string{"a", "b", "c", "d"}[:i%5])
		out = append(out, s)
	}
	// The instructor's own session, which the roster lists apart.
	out = append(out, session.SessionInfo{Namespace: "lab-instr", Name: "Instructor", LastSeen: now, Acted: true})
	return out, nil
}

func (c *class) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(time.Duration(c.calls) * time.Second)
}

// index is learner i of a namespace this class made.
func (c *class) index(ns string) int {
	for i := range c.n {
		if learnerNS(i) == ns {
			return i
		}
	}
	return -1
}

func (c *class) Databases(_ context.Context, ns string) ([]dbview.Database, error) {
	i := c.index(ns)
	if i < 0 {
		return nil, nil
	}
	d := dbview.Database{Namespace: ns, Name: "shop", Conditions: []dbview.Condition{{Type: "Ready", Status: "True"}}}
	if degradedDB(i) {
		d.Conditions = []dbview.Condition{{Type: "Ready", Status: "False"}, {Type: "Degraded", Status: "True"}}
	}
	return []dbview.Database{d}, nil
}

func (c *class) Of(ns string) (open, following int) {
	i := c.index(ns)
	switch {
	case i < 0 || away(i):
		return 0, 0
	case follows(i):
		return 1, 1
	}
	return 1, 0
}

// rosterServer serves the instructor page with a class of n and the
// static files, and returns its URL with the instructor already let in
// on the tab's cookie by the token in the URL.
func rosterServer(t *testing.T, n int) (string, *class) {
	t.Helper()
	url, c, _ := rosterServerBehind(t, n, nil)
	return url, c
}

// rosterServerBehind is rosterServer behind front (a proxy, say), when set.
func rosterServerBehind(t *testing.T, n int, front func(http.Handler) http.Handler) (string, *class, *Handler) {
	t.Helper()
	c := &class{n: n, start: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS)))
	// Look as the real server offers it: every row then carries the Look
	// link beside its Reset button, the widest the actions cell gets.
	look := Look{Page: func(w http.ResponseWriter, _ *http.Request, ns, _, _ string) { fmt.Fprint(w, ns) },
		Stream: func(string) http.Handler { return http.NotFoundHandler() }}
	ih := New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Look: look, Roster: Roster{
		Learners: c, States: c, Presence: c, QuizQuestions: 41, ChallengeCount: 14, Now: c.now,
		Self: func(*http.Request) (string, error) { return "lab-instr", nil },
	}})
	ih.Register(mux)
	var h http.Handler = mux
	if front != nil {
		h = front(mux)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/instructor?token=" + token, c, ih
}

// rowsJS is the visible rows' given data attribute, in page order.
func rowsJS(attr string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#roster-table tbody tr")].filter(r => !r.hidden).map(r => r.dataset[%q])`, attr)
}

func TestBrowserRosterOf300SortsFiltersAndStaysCompact(t *testing.T) {
	t.Parallel()
	const n = 300
	page, _ := rosterServer(t, n)
	ctx := browser.Tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#roster-tools")))
	browsertest.Eventually(t, ctx, `String(document.querySelectorAll("#roster-table tbody tr").length)`, fmt.Sprint(n))

	// The counts, each with its denominator, and the instructor apart.
	var stuck, awayN, following int
	for i := range n {
		if degradedDB(i) {
			stuck++
		}
		if away(i) {
			awayN++
		}
		if follows(i) && !away(i) {
			following++
		}
	}
	want := fmt.Sprintf("300 learner sessions, live · %d of 300 stuck · %d of 300 away · %d of 300 following", stuck, awayN, following)
	if got := browsertest.Eval[string](t, ctx, browsertest.Text("#roster-counts")); got != want {
		t.Errorf("counts: %q, want %q", got, want)
	}
	if got := browsertest.Eval[string](t, ctx, browsertest.Text("#roster-self")); !strings.Contains(got, "lab-instr") || !strings.Contains(got, "not counted") {
		t.Errorf("the instructor's own session is not listed apart: %q", got)
	}
	if browsertest.Eval[bool](t, ctx, `!!document.getElementById("learner-lab-instr")`) {
		t.Error("the instructor's own session is a row among the learners")
	}
	// Unnamed learners are told apart by their namespace's end.
	if got := browsertest.Eval[string](t, ctx, browsertest.Text("#learner-"+learnerNS(3)+" .learner-name")); got != "Unnamed "+strings.TrimPrefix(learnerNS(3), "lab-") {
		t.Errorf("unnamed learner 3 shows as %q", got)
	}

	// Compact: one line a row. A line of text is about 1.2 rem; a row that
	// wraps or shows its details is two or more.
	lineHeight := browsertest.Eval[float64](t, ctx, `(() => { const r = document.querySelector("#roster-table tbody tr"); return parseFloat(getComputedStyle(r).lineHeight) || 20; })()`)
	tallest := browsertest.Eval[float64](t, ctx, `Math.max(...[...document.querySelectorAll("#roster-table tbody tr")].map(r => r.getBoundingClientRect().height))`)
	if tallest > 2*lineHeight {
		t.Errorf("compact rows: the tallest is %.0f px, over two lines of %.0f px", tallest, lineHeight)
	}
	t.Logf("Compact roster: %d rows, tallest %.0f px, table %.0f px high", n, tallest, browsertest.Eval[float64](t, ctx, `document.getElementById("roster-table").getBoundingClientRect().height`))
	shot(t, ctx, "roster-300-compact")
	// Compact rows cut long text with an ellipsis, but never the actions
	// (Look and Reset) nor the quiz score: in the rows on screen each of
	// those cells holds its content whole.
	if cut := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll("#roster-table tbody tr")]
		.filter(r => { const b = r.getBoundingClientRect(); return b.bottom > 0 && b.top < innerHeight; })
		.flatMap(r => [...r.querySelectorAll(".learner-reset, .learner-quiz")])
		.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.closest("tr").id + " " + c.className)`); len(cut) > 0 {
		t.Errorf("compact rows cut %d cells that must show whole, first %q", len(cut), cut[0])
	}

	// Sort by progress, most first. The first change the instructor makes
	// is the first announcement above the tools; the tools stay where they
	// were, so a click aimed at them just then still lands.
	const toolsTop = `document.getElementById("roster-tools").getBoundingClientRect().top + scrollY`
	topBefore := browsertest.Eval[float64](t, ctx, toolsTop)
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("roster-sort"); s.value = "progress"; s.dispatchEvent(new Event("change")); })()`))
	assertSorted(t, ctx, "progress, most first", func(a, b string) bool { return atoi(a) >= atoi(b) }, "progress")
	browsertest.Eventually(t, ctx, browsertest.Text("#roster-announce"), "Showing all 300 learners.")
	if after := browsertest.Eval[float64](t, ctx, toolsTop); after != topBefore {
		t.Errorf("the tools moved from %.0f px to %.0f px down the page when the announcement appeared above them", topBefore, after)
	}

	// The filter: text on name and namespace, then a chip.
	browsertest.Do(t, ctx, chromedp.SendKeys(chromedp.CSS("#roster-filter"), "ana"))
	browsertest.Eventually(t, ctx, `String(`+rowsJS("who")+`.every(w => w.toLowerCase().includes("ana")) && `+rowsJS("who")+`.length > 0)`, "true")
	shown := browsertest.Eval[int](t, ctx, rowsJS("who")+".length")
	var wantAna int
	for i := range n {
		if w := who(Learner{Name: nameOf(i), Namespace: learnerNS(i)}); strings.Contains(strings.ToLower(w), "ana") {
			wantAna++
		}
	}
	if shown != wantAna {
		t.Errorf("find ana: %d rows shown, want %d", shown, wantAna)
	}
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById("roster-filter"); f.value = ""; f.dispatchEvent(new Event("input")); })()`),
		chromedp.Click(chromedp.CSS(`[data-chip="stuck"]`)))
	browsertest.Eventually(t, ctx, browsertest.Text("#roster-showing"), fmt.Sprintf("Showing %d of 300", stuck))
	if got := browsertest.Eval[[]string](t, ctx, rowsJS("stuck")); len(got) != stuck || slices.Contains(got, "") {
		t.Errorf("stuck chip: rows %v", got)
	}
	shot(t, ctx, "roster-300-stuck")
	axe(t, ctx, "/instructor (roster of 300, stuck only)")
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`[data-chip="stuck"]`)))

	// Redraws keep the sort and the filter, and each one's cost is logged
	// (figures, not assertions: the machine is shared). Two figures: the
	// script's own wall time from the fetched HTML to a laid-out table
	// (performance.now around parse, morph, sort, filter and a forced
	// layout), and the page's main-thread CPU time over one whole 2 s
	// cycle (Chromium's ThreadTime metric), which paint included and other
	// processes' load excluded is the honest cost of a redraw.
	browsertest.Do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, performance.Enable, performance.EnableParams{})
		return err
	}))
	threadTime := func() float64 {
		var m float64
		_, err := chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			res, err := cdp.Call(ctx, tg, performance.GetMetrics, cdp.Empty{})
			if err != nil {
				return err
			}
			for _, x := range res.Metrics {
				if x.Name == "ThreadTime" {
					m = x.Value
					return nil
				}
			}
			return fmt.Errorf("no ThreadTime among %d metrics", len(res.Metrics))
		}))
		if err != nil {
			t.Fatalf("read the page's metrics: %v", err)
		}
		return m
	}
	var wall, cpu []float64
	// Where a redraw's wall time goes, phase by phase (roster.js times
	// them): parsing the fetched HTML, morphing the rows, sorting and
	// filtering, and the forced layout.
	phases := map[string][]float64{}
	// How many rows each redraw got whole: the page sends the digests of
	// the rows it has, and the server sends those unchanged as stubs.
	var whole []int
	last := browsertest.Eval[string](t, ctx, rosterPolled)
	nextRedraw := func() {
		browsertest.Eventually(t, ctx, fmt.Sprintf(`String(%s !== %q)`, rosterPolled, last), "true")
		last = browsertest.Eval[string](t, ctx, rosterPolled)
	}
	nextRedraw()
	before := threadTime()
	for len(wall) < 5 {
		nextRedraw()
		after := threadTime()
		cpu = append(cpu, 1000*(after-before))
		before = after
		wall = append(wall, browsertest.Eval[float64](t, ctx, `Number(`+rosterRedraw+`?.duration.toFixed(1))`))
		for k, v := range browsertest.Eval[map[string]float64](t, ctx, rosterRedraw+`?.detail.phases || {}`) {
			phases[k] = append(phases[k], v)
		}
		rows := browsertest.Eval[map[string]int](t, ctx, rosterRedraw+`?.detail.rows || {}`)
		whole = append(whole, rows["whole"])
		if rows["whole"]+rows["kept"] != n {
			t.Errorf("a redraw had %d rows whole and %d kept, not the %d learners", rows["whole"], rows["kept"], n)
		}
	}
	sort.Float64s(wall)
	sort.Float64s(cpu)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("Roster redraw, %d learners, 60 rows changed each time, in Chromium: main-thread CPU per 2 s cycle median %.1f ms (min %.1f, max %.1f); script wall time fetch-to-layout median %.1f ms (min %.1f, max %.1f), over %d redraws; load average %s (target ≤ 50 ms)",
		n, cpu[len(cpu)/2], cpu[0], cpu[len(cpu)-1], wall[len(wall)/2], wall[0], wall[len(wall)-1], len(wall), strings.Fields(string(load) + " ?")[0])
	var split []string
	for _, k := range []string{"parse", "morph", "apply", "layout"} {
		p := phases[k]
		if len(p) == 0 {
			t.Errorf("roster.js timed no %s phase", k)
			continue
		}
		sort.Float64s(p)
		split = append(split, fmt.Sprintf("%s %.1f", k, p[len(p)/2]))
	}
	slices.Sort(whole)
	t.Logf("Roster redraw phases, median ms: %s; rows sent whole per redraw: %v of %d", strings.Join(split, ", "), whole, n)
	// The class changes 60 rows between two polls; more than half whole
	// means the stubs are not used and every row is parsed again.
	if whole[len(whole)/2] > n/2 {
		t.Errorf("rows sent whole per redraw: %v of %d; the server should stub the rows the page has", whole, n)
	}
	assertSorted(t, ctx, "progress after redraws", func(a, b string) bool { return atoi(a) >= atoi(b) }, "progress")
	shot(t, ctx, "roster-300-after-redraws")
	if got := browsertest.Eval[int](t, ctx, rowsJS("who")+".length"); got != n {
		t.Errorf("after the chip was released, %d rows shown, want %d", got, n)
	}

	// Sorting by name puts the unnamed last and the rest in the order a
	// person reads them: "ana 2" before "ana 12".
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("roster-sort"); s.value = "name"; s.dispatchEvent(new Event("change")); })()`))
	assertSorted(t, ctx, "name", func(a, b string) bool { return naturalLess(a, b) || a == b }, "name")

	// The detailed density is a toggle the next load remembers.
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS("#roster-density")))
	browsertest.Eventually(t, ctx, `document.getElementById("roster-density").getAttribute("aria-pressed") + " " + localStorage.getItem("oplab.roster.detailed")`, "true 1")
	browsertest.Do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#roster-tools")))
	browsertest.Eventually(t, ctx, `document.getElementById("roster-density").getAttribute("aria-pressed") + " " + document.getElementById("roster-live").className`, "true ")
	if got := browsertest.Eval[string](t, ctx, `getComputedStyle(document.querySelector("#learner-`+learnerNS(4)+` .learner-status .detail")).display`); got == "none" {
		t.Error("detailed rows still hide why a learner is stuck")
	}
	shot(t, ctx, "roster-300-detailed")
	axe(t, ctx, "/instructor (roster of 300, detailed)")

	// A phone's width.
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS("#roster-density")), chromedp.EmulateViewport(390, 844))
	shot(t, ctx, "roster-300-390px")
}

func nameOf(i int) string {
	if unnamed(i) {
		return ""
	}
	return fmt.Sprintf("%s %d", firstNames[i%len(firstNames)], i)
}

// naturalLess orders a before b as a person reads them: runs of digits
// by their value, the rest by code point.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da != "" && db != "" {
			// Not atoi: fmt reads a leading 0 as octal.
			na, _ := strconv.Atoi(da)
			nb, _ := strconv.Atoi(db)
			if na != nb {
				return na < nb
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return a == "" && b != ""
}

// digits is the run of ASCII digits s starts with.
func digits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

func atoi(s string) int {
	var n int
	_, _ = fmt.Sscan(s, &n)
	return n
}

// assertSorted fails unless every visible row's attr is in order by ok.
func assertSorted(t *testing.T, ctx context.Context, what string, ok func(a, b string) bool, attr string) {
	t.Helper()
	got := browsertest.Eval[[]string](t, ctx, rowsJS(attr))
	if len(got) < 2 {
		t.Fatalf("sort by %s: %d rows", what, len(got))
	}
	for i := 1; i < len(got); i++ {
		if !ok(got[i-1], got[i]) {
			t.Errorf("sort by %s: row %d (%q) before row %d (%q)", what, i-1, got[i-1], i, got[i])
			return
		}
	}
}

// shot saves what the tab's window shows, scrolled to the roster's tools,
// as a PNG under the artifacts folder, to look at (the whole page of 300
// rows is too tall to read).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	// Two frames after the scroll, so rows that content-visibility kept
	// off screen are drawn.
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("roster-legend").scrollIntoView()`),
		chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`, chromedp.EvalAwaitPromise))
	browsertest.Capture(t, ctx, filepath.Join(browsertest.ArtifactsDir(t, "instructor"), name+".png"), chromedp.CaptureScreenshot())
}

// axe runs axe-core (as web/a11y installs it) on the tab and fails the
// test on every violation; without axe-core it skips, except in CI.
func axe(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	path := filepath.Join("..", "a11y", "node_modules", "axe-core", "axe.min.js")
	if _, err := os.Stat(path); err != nil && os.Getenv("CI") == "" {
		t.Logf("axe-core is not installed (%v): %s not checked; run make browser", err, name)
		return
	}
	src := browsertest.AxeSource(t, path)
	vs, err := browsertest.Axe(ctx, src, `{type: "tag", values: `+browsertest.AxeTags+`}`)
	if err != nil {
		t.Fatalf("axe on %s: %v", name, err)
	}
	for _, v := range vs {
		t.Errorf("%s: %s: %s\n\t%s", name, v.ID, v.Help, strings.Join(v.Nodes, "\n\t"))
	}
}

// TestBrowserRosterStubsOnlyRowsThePageHas checks the redraw's half of
// the stubs: the page sends the digests of the rows it has and the server
// sends those rows as stubs (id and digest only). A stub for a row the page
// holds under another digest must not leave the page showing stale rows:
// the page fetches every row whole at once. Rows changed in place keep
// their nodes and the focus.
func TestBrowserRosterStubsOnlyRowsThePageHas(t *testing.T) {
	t.Parallel()
	const n = 20
	page, _ := rosterServer(t, n)
	ctx := browser.Tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#roster-tools")))
	browsertest.Eventually(t, ctx, `String(document.querySelectorAll("#roster-table tbody tr").length)`, fmt.Sprint(n))
	last := ""
	redraws := func(k int) {
		t.Helper()
		for range k {
			browsertest.Eventually(t, ctx, fmt.Sprintf(`String(%s !== %q)`, rosterPolled, last), "true")
			last = browsertest.Eval[string](t, ctx, rosterPolled)
		}
	}
	redraws(2)
	// Four of the 20 rows change between two polls: the rest came as stubs.
	rows := browsertest.Eval[map[string]int](t, ctx, rosterRedraw+`.detail.rows`)
	if rows["kept"] == 0 || rows["whole"]+rows["kept"] != n {
		t.Errorf("a redraw of %d rows: %v; want most kept as stubs", n, rows)
	}

	// Mark every cell's node and focus a Reset button: a row morphed in
	// place keeps both.
	first := "learner-" + learnerNS(0)
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		for (const c of document.querySelectorAll("#roster-table tbody td")) c.oplabMark = true;
		document.getElementById("reset-`+learnerNS(0)+`").focus(); })()`))

	// Give every row its neighbour's digest and a false cards count: the
	// server, finding each digest among those sent, stubs the rows that did
	// not change, which the page now holds under another digest.
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		const rows = [...document.querySelectorAll("#roster-table tbody tr")];
		const sigs = rows.map((r) => r.dataset.sig);
		rows.forEach((r, i) => { r.dataset.sig = sigs[(i + 1) % sigs.length]; r.querySelector(".learner-cards").textContent = "tampered"; });
	})()`))
	// The redraw under way, the one that met the stubs and the whole one
	// it asked for at once: within them every row is right again (without
	// the whole fetch, a row changes once in five polls).
	redraws(3)
	if got := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll("#roster-table tbody tr")].filter((r) => r.querySelector(".learner-cards").textContent === "tampered").map((r) => r.id)`); len(got) > 0 {
		t.Errorf("%d rows still show what the page was given, not what the server has: %v", len(got), got)
	}
	if got := browsertest.Eval[int](t, ctx, `new Set([...document.querySelectorAll("#roster-table tbody tr")].map((r) => r.dataset.sig)).size`); got != n {
		t.Errorf("%d distinct digests among %d rows", got, n)
	}
	if got := browsertest.Eval[string](t, ctx, `document.activeElement.id`); got != "reset-"+learnerNS(0) {
		t.Errorf("the focus moved to %q", got)
	}
	if got := browsertest.Eval[int](t, ctx, `[...document.querySelectorAll("#`+first+` td")].filter((c) => !c.oplabMark).length`); got != 0 {
		t.Errorf("%d cells of %s were drawn anew, not changed in place", got, first)
	}
}

// TestBrowserRosterGoesOnBehindAProxyThatRefusesTheHeader: a proxy that
// takes no header of 4 KB answers 431; the page then asks for every row
// whole, without the header, and its rows go on changing.
func TestBrowserRosterGoesOnBehindAProxyThatRefusesTheHeader(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var refused, without int
	page, _, _ := rosterServerBehind(t, 20, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/instructor/roster" {
				mu.Lock()
				if r.Header.Get(HaveHeader) != "" {
					refused++
					mu.Unlock()
					http.Error(w, "request header fields too large", http.StatusRequestHeaderFieldsTooLarge)
					return
				}
				without++
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})
	ctx := browser.Tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#roster-tools")))
	quiz := `document.querySelector("#learner-` + learnerNS(3) + ` .learner-quiz").textContent`
	before := browsertest.Eval[string](t, ctx, quiz)
	// Learner 3's quiz best moves once in five polls.
	browsertest.Eventually(t, ctx, `String(`+quiz+` !== `+strconv.Quote(before)+`)`, "true")
	// One poll more: it too goes without the header.
	last := browsertest.Eval[string](t, ctx, rosterPolled)
	browsertest.Eventually(t, ctx, `String(`+rosterPolled+` !== `+strconv.Quote(last)+`)`, "true")
	if got := browsertest.Eval[string](t, ctx, `performance.getEntriesByName("oplab:roster-refresh").at(-1)?.detail.error || ""`); got != "" {
		t.Errorf("the page shows a refresh error %s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if refused != 1 || without < 2 {
		t.Errorf("%d fetches with the header refused, %d without; want 1 refused, then every fetch without it", refused, without)
	}
}

// TestBrowserRosterCompactRowShowsAResetWhole: a compact row whose
// learner is being reset, or was, shows its buttons whole and the
// reset's words in the cell, wrapped, not cut or pushed past the table.
func TestBrowserRosterCompactRowShowsAResetWhole(t *testing.T) {
	t.Parallel()
	page, c, h := rosterServerBehind(t, 12, nil)
	rs := h.opts.Roster.resets
	running, done := learnerNS(0), learnerNS(1)
	seq, err := rs.begin(running, c.now())
	if err != nil {
		t.Fatal(err)
	}
	rs.progress(running, seq, 2, []string{"shop"})
	seq, err = rs.begin(done, c.now())
	if err != nil {
		t.Fatal(err)
	}
	rs.finish(done, seq, c.now(), nil)
	// A failed reset adds the long "Remove the remaining finalizers" button.
	failed := learnerNS(2)
	seq, err = rs.begin(failed, c.now())
	if err != nil {
		t.Fatal(err)
	}
	rs.finish(failed, seq, c.now(), errors.New("after 1m0s, Database shop is still held by its finalizer example.com/keep"))
	ctx := browser.Tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#roster-tools")))
	browsertest.Eventually(t, ctx, `String(document.querySelectorAll("#roster-table .reset-status").length)`, "3")
	for _, ns := range []string{running, done, failed} {
		cell := `document.querySelector("#learner-` + ns + ` .learner-reset")`
		browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](cell+`.scrollIntoView({block: "center"})`),
			chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`, chromedp.EvalAwaitPromise))
		if got := browsertest.Eval[string](t, ctx, `(() => { const c = `+cell+`, b = c.getBoundingClientRect();
			if (c.scrollWidth > c.clientWidth + 1) return "the cell's content is " + c.scrollWidth + " px wide in " + c.clientWidth;
			for (const e of c.querySelectorAll("a, button, .reset-status")) {
				const r = e.getBoundingClientRect();
				if (r.left < b.left - 1 || r.right > b.right + 1) return (e.id || e.className) + " reaches " + Math.round(r.left) + "–" + Math.round(r.right) + " past the cell's " + Math.round(b.left) + "–" + Math.round(b.right);
				if (e.matches(".reset-status") && r.width < 0.8 * b.width) return "the reset's words take " + Math.round(r.width) + " px of the cell's " + Math.round(b.width);
			}
			return ""; })()`); got != "" {
			t.Errorf("%s: %s", ns, got)
		}
	}
	shot(t, ctx, "roster-compact-resets")
}
