package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/lab"
)

// axePath is axe-core as `npm ci --prefix web/a11y` installs it (make
// browser does), pinned by web/a11y/package-lock.json.
var axePath = filepath.Join("a11y", "node_modules", "axe-core", "axe.min.js")

// axeTags are the rule sets every page must pass with zero violations.
const axeTags = `["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]`

type axeViolation struct {
	ID    string   `json:"id"`
	Help  string   `json:"help"`
	Nodes []string `json:"nodes"`
}

func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(axePath)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI=%s and axe-core is missing: %v (make browser installs it)", os.Getenv("CI"), err)
		}
		t.Skipf("skipping: axe-core is not installed (%v): run make browser", err)
	}
	return string(b)
}

// runAxe injects axe-core into the page ctx shows, unless that document
// has it already (checkPage runs it twice, in light and in dark), and
// returns what it finds.
func runAxe(ctx context.Context, src string) ([]axeViolation, error) {
	has, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("typeof axe === 'object'"))
	if err == nil && !has {
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](src+"\n;typeof axe === 'object'"))
	}
	if err != nil {
		return nil, fmt.Errorf("inject axe-core: %w", err)
	}
	// A live page (a follower's, the stream's rows) may drop a node while
	// axe walks it, and axe then throws computing that node's selector
	// ("reading 'nthChild'"); that run checked nothing, so it is run again.
	// Violations are never retried away.
	for try := 0; try < 3; try++ {
		var vs []axeViolation
		vs, err = chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {runOnly: {type: "tag", values: `+axeTags+`}})
		.then(r => r.violations.map(v => ({id: v.id, help: v.help,
			nodes: v.nodes.slice(0, 6).map(n => n.target.join(" ") + " — " + (n.failureSummary || "").replace(/\s+/g, " "))})))`,
			chromedp.EvalAwaitPromise))
		if err == nil || !strings.Contains(err.Error(), "nthChild") {
			return vs, err
		}
	}
	return nil, err
}

// checkPage runs axe-core on what ctx shows, in light and in dark, and
// fails the test with every violation listed.
func checkPage(t *testing.T, ctx context.Context, src, name string) int {
	t.Helper()
	checked := 0
	for _, scheme := range []string{"light", "dark"} {
		// Let the colour transitions end, so axe reads the scheme's colours.
		if err := chromedp.Do(ctx, colorScheme(scheme), chromedp.Sleep(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		vs, err := runAxe(ctx, src)
		if err != nil {
			t.Fatalf("%s (%s): %v", name, scheme, err)
		}
		checked++
		for _, v := range vs {
			t.Errorf("%s (%s): %s: %s\n\t%s", name, scheme, v.ID, v.Help, strings.Join(v.Nodes, "\n\t"))
		}
	}
	return checked
}

func TestAccessibility(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t)
	t.Cleanup(func() {
		if !e.runner.Running() {
			_ = e.runner.Start(context.Background())
		}
	})
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
		if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
			t.Fatal(err)
		}
		checked += checkPage(t, ctx, src, "/quiz (graded)")
	}

	// The lab with a Database in each scenario's state, the stuck finalizer
	// last: it stops the controller.
	var names []string
	for _, s := range lab.Scenarios {
		if s.Name != "stuck-finalizer" {
			names = append(names, s.Name)
		}
	}
	for _, name := range append(names, "stuck-finalizer") {
		tab := e.tab(t)
		openLab(t, tab, "?scenario="+name)
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`.scenario form button`))); err != nil {
			t.Fatal(err)
		}
		poll(t, tab, name+" set up", `document.querySelector("#flash .flash-ok") !== null && document.querySelector("#databases article.db") !== null`)
		// Open what a learner opens: every details on the page.
		if err := chromedp.Do(tab, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`)); err != nil {
			t.Fatal(err)
		}
		checked += checkPage(t, tab, src, "/lab?scenario="+name)
		if name == "stuck-finalizer" {
			if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#db-stuck form[action="/lab/databases/stuck/delete"] button`))); err != nil {
				t.Fatal(err)
			}
			poll(t, tab, "stuck Terminating", `document.querySelector("#db-stuck .terminating") !== null`)
			checked += checkPage(t, tab, src, "/lab?scenario=stuck-finalizer (Terminating)")
		}
	}
	// The stuck finalizer stopped the controller; the rest needs it.
	if !e.runner.Running() {
		if err := e.runner.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	// The lab while the learner's namespace is paused.
	tab := e.tab(t)
	ns := openLab(t, tab, "")
	paused := controller.Step{Type: controller.StepController, Phase: "paused", Object: controller.ObjectRef{Kind: "Controller", Namespace: ns, Name: "database"}}
	e.recorder.Emit(paused)
	poll(t, tab, "the loop saying paused", `!document.getElementById("loop-paused").hidden`)
	checked += checkPage(t, tab, src, "/lab (namespace paused)")
	paused.Phase = "resumed"
	e.recorder.Emit(paused)

	// An export played back.
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

	t.Logf("axe-core %s: %d page checks (light and dark), %d tags", axeTags, checked, 5)
}

// colorScheme emulates prefers-color-scheme, with reduced motion: the loop
// diagram's lights fade, and axe must read the colours at rest, not halfway.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return cdpCall(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}},
	})
}
