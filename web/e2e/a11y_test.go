package e2e

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/lab"
)

// axePath is axe-core as `npm ci --prefix web/a11y` installs it (make
// browser does), pinned by web/a11y/package-lock.json.
var axePath = filepath.Join("..", "a11y", "node_modules", "axe-core", "axe.min.js")

// axeTags are the rule sets every page must pass with zero violations.
const axeTags = browsertest.AxeTags

type axeViolation = browsertest.AxeViolation

func axeSource(t *testing.T) string { return browsertest.AxeSource(t, axePath) }

// darkRules are the rules that read colours: the only ones whose result
// can change with the scheme. The dark scheme (base.css) sets the colour
// custom properties and nothing else, so the DOM and the layout axe walks
// are the same in both; every rule of axeTags runs in light, these run
// again in dark. (axe-core 4.14: of the 70 rules in axeTags, these two.)
const darkRules = `["color-contrast", "link-in-text-block"]`

// runAxe runs the rules the scheme needs on the page ctx shows.
func runAxe(ctx context.Context, src, scheme string) ([]axeViolation, error) {
	only := `{type: "tag", values: ` + axeTags + `}`
	if scheme == "dark" {
		only = `{type: "rule", values: ` + darkRules + `}`
	}
	return browsertest.Axe(ctx, src, only)
}

// schemeViolations runs axe-core on what ctx shows in light, then in dark.
func schemeViolations(ctx context.Context, src string) (map[string][]axeViolation, error) {
	out := map[string][]axeViolation{}
	for _, scheme := range []string{"light", "dark"} {
		if err := chromedp.Do(ctx, colorScheme(scheme)); err != nil {
			return nil, err
		}
		// Let the colour transitions the new scheme started end, so axe
		// reads its colours at rest. getAnimations recalculates the styles
		// first, so a transition just begun is among them.
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`document.getAnimations().length === 0`,
			chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			return nil, fmt.Errorf("the %s scheme's transitions never ended: %w", scheme, err)
		}
		vs, err := runAxe(ctx, src, scheme)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", scheme, err)
		}
		out[scheme] = vs
	}
	return out, nil
}

// checkPage runs axe-core on what ctx shows, in light and in dark, and
// fails the test with every violation listed.
func checkPage(t *testing.T, ctx context.Context, src, name string) int {
	t.Helper()
	found, err := schemeViolations(ctx, src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, scheme := range []string{"light", "dark"} {
		for _, v := range found[scheme] {
			t.Errorf("%s (%s): %s: %s\n\t%s", name, scheme, v.ID, v.Help, strings.Join(v.Nodes, "\n\t"))
		}
	}
	return len(found)
}

// TestAxeChecksEachSchemeForWhatItChanges: a page with an image without
// alt text, and text readable in light but not in dark. The structural
// fault is found in light, the dark-only contrast fault in dark: the
// dark pass, which runs only the colour rules, still catches what the
// scheme breaks.
func TestAxeChecksEachSchemeForWhatItChanges(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	ctx := browser.Tab(t)
	page := `<!doctype html><html lang="en"><head><title>axe control</title><style>
		body { background: #fff; color: #111; }
		@media (prefers-color-scheme: dark) { body { background: #111; } p.dim { color: #222; } }
	</style></head><body><main><h1>Control</h1><p class="dim">Readable in light only.</p><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="20" height="20"></main></body></html>`
	if err := chromedp.Do(ctx, chromedp.Navigate("data:text/html;charset=utf-8,"+url.PathEscape(page)), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
		t.Fatal(err)
	}
	found, err := schemeViolations(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(vs []axeViolation) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return strings.Join(out, ",")
	}
	if got := ids(found["light"]); got != "image-alt" {
		t.Errorf("light: violations %q, want image-alt alone", got)
	}
	if got := ids(found["dark"]); got != "color-contrast" {
		t.Errorf("dark: violations %q, want color-contrast alone", got)
	}
}

// TestAccessibility: every course page, the lab and the replay page empty,
// and the quiz graded. The lab in each scenario's state, and while paused
// and playing back, are the two tests below: three tests that run beside
// the others, rather than one that ran alone at the end of the package.
func TestAccessibility(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t)
	ctx := e.tab(t)
	checked := 0
	for _, path := range append(coursePages(t), "/lab", "/lab/replay") {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+path), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
			t.Fatal(err)
		}
		checked += checkPage(t, ctx, src, path)
	}
	// The quiz graded: the result page has its own markup.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/quiz"), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
		t.Fatal(err)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const f = document.querySelector('main form[method="post"]'); if (!f) return 0;
		f.querySelectorAll('input[type="radio"]').forEach((r, i, all) => { if (!all[i - 1] || all[i - 1].name !== r.name) r.checked = true; }); f.submit(); return 1; })()`)); n == 1 {
		// The graded page whole, not the form's page going nor the new
		// one half parsed (an input before its label).
		if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS("fieldset.question.right, fieldset.question.wrong"))); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "the graded quiz loaded", `document.readyState === "complete"`)
		checked += checkPage(t, ctx, src, "/quiz (graded)")
	}
	logChecked(t, checked)
}

// TestAccessibilityOfEveryScenario: the lab with a Database in each
// scenario's state, every disclosure open, and the stuck finalizer's
// Database Terminating.
func TestAccessibilityOfEveryScenario(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t)
	var checked atomic.Int64
	// Each in its own tab and namespace, side by side, the tab closed once
	// checked: a scenario's pitfall goes on acting, and its page on drawing,
	// for as long as the tab is open.
	t.Run("scenarios", func(t *testing.T) {
		for _, s := range lab.Scenarios {
			t.Run(s.Name, func(t *testing.T) {
				t.Parallel()
				checked.Add(int64(checkScenario(t, e, src, s.Name)))
			})
		}
	})
	logChecked(t, int(checked.Load()))
}

// checkScenario sets the scenario up in a tab of its own and checks the lab.
func checkScenario(t *testing.T, e *testEnv, src, name string) int {
	tab := e.tab(t)
	e.openLab(t, tab, "?scenario="+name)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`.scenario form button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, tab, name+" set up", `document.querySelector("#flash .flash-ok") !== null && document.querySelector("#databases article.db") !== null`)
	// Open what a learner opens: every details on the page.
	if err := chromedp.Do(tab, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`)); err != nil {
		t.Fatal(err)
	}
	checked := checkPage(t, tab, src, "/lab?scenario="+name)
	if name == "stuck-finalizer" {
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#db-stuck form[action="/lab/databases/stuck/delete"] button`))); err != nil {
			t.Fatal(err)
		}
		poll(t, tab, "stuck Terminating", `document.querySelector("#db-stuck .terminating") !== null`)
		checked += checkPage(t, tab, src, "/lab?scenario=stuck-finalizer (Terminating)")
	}
	return checked
}

// TestAccessibilityPausedAndReplayed: the lab while the learner's
// namespace is paused, and an export played back.
func TestAccessibilityPausedAndReplayed(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t)
	tab := e.tab(t)
	ns := e.openLab(t, tab, "")
	paused := controller.Step{Type: controller.StepController, Phase: "paused", Object: controller.ObjectRef{Kind: "Controller", Namespace: ns, Name: "database"}}
	e.recorder.Emit(paused)
	poll(t, tab, "the loop saying paused", `!document.getElementById("loop-paused").hidden`)
	checked := checkPage(t, tab, src, "/lab (namespace paused)")
	paused.Phase = "resumed"
	e.recorder.Emit(paused)

	file := e.exportWithReady(t, "played")
	if err := chromedp.Do(tab, chromedp.Navigate(e.http.URL+"/lab/replay"),
		chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}),
		chromedp.Click(chromedp.CSS(`.replay-form button`)),
		chromedp.WaitVisible(chromedp.CSS("#replay-all")),
		chromedp.Click(chromedp.CSS("#replay-all"))); err != nil {
		t.Fatal(err)
	}
	poll(t, tab, "the replayed card", `document.getElementById("db-played") !== null`)
	checked += checkPage(t, tab, src, "/lab/replay (playing)")
	logChecked(t, checked)
}

func logChecked(t *testing.T, checked int) {
	t.Logf("axe-core %s: %d page checks (light, then dark for %s)", axeTags, checked, darkRules)
}

// colorScheme emulates prefers-color-scheme, with reduced motion: the loop
// diagram's lights fade, and axe must read the colours at rest, not halfway.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return cdpCall(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}},
	})
}
