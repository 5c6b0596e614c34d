// Package browsertest starts the one headless Chromium that a test binary's
// browser tests share, at the first test that asks for a tab, so that
// running only a package's unit tests starts no browser. Each tab is a
// fresh browser context (its own cookies and storage), so tests do not see
// each other's sessions or progress.
//
// A package declares its browser and stops it after its tests:
//
//	var browser = &browsertest.Browser{Width: 1280, Height: 800}
//
//	func TestMain(m *testing.M) { os.Exit(browser.Run(m)) }
//
// and a test opens a tab with browser.Tab(t). Without Chromium a browser
// test is skipped, except in CI (CI set), where it fails.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's chromium, which the browser tests drive.
const ChromiumPath = "/usr/bin/chromium"

// DisabledFeatures are Chromium features the tests have no use for and pay
// for at every tab. Each tab opens in a new browser context, so in a window
// of its own, and headless Chromium's window preloads its address bar's two
// popups as WebUI pages, each in a renderer of its own; it also starts a
// spare renderer for the next navigation, which the next tab, in another
// context, cannot use. Without them a tab costs about a third of the CPU
// (docs/BENCHMARKS.md). An unknown name is ignored, so a Chromium that
// renames them brings the popups back: TestTabsOpenNoBrowserUIPages says so.
const DisabledFeatures = "WebUIOmniboxPopup,WebUIOmniboxAimPopup,SpareRendererForSitePerProcess"

// defaultTabTimeout bounds a tab's work when the Browser names none.
const defaultTabTimeout = 2 * time.Minute

// Browser is one headless Chromium, started at the first Tab. Its fields
// are read then; set them where the Browser is declared.
type Browser struct {
	// Width and Height size the window in CSS pixels; zero keeps
	// Chromium's own size. A test may still emulate another viewport.
	Width, Height int
	// TabTimeout bounds everything done in one tab, Eventually's waits
	// included: it catches a hang, it times nothing. Zero is 2 minutes.
	TabTimeout time.Duration

	once sync.Once
	mu   sync.Mutex
	ctx  context.Context
	err  error
	stop func()
}

// start launches Chromium with a fresh profile directory, which Stop
// removes again. The flags keep it from reaching out (no background
// networking, component updates or sync) and from needing what a container
// lacks (a sandbox, a GPU).
func (b *Browser) start() {
	if _, err := os.Stat(ChromiumPath); err != nil {
		b.err = fmt.Errorf("chromium not installed at %s (apt-get install chromium): %w", ChromiumPath, err)
		return
	}
	profile, err := os.MkdirTemp("", "oplab-chromium-")
	if err != nil {
		b.err = fmt.Errorf("make a profile directory for chromium: %w", err)
		return
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-features", DisabledFeatures),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(profile),
	}
	if b.Width > 0 && b.Height > 0 {
		opts = append(opts, chromedp.WindowSize(b.Width, b.Height))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	stop := func() {
		cancel()
		cancelAlloc()
		_ = os.RemoveAll(profile)
	}
	// The first action on the context is what starts the browser.
	if err := chromedp.Do(ctx); err != nil {
		stop()
		b.err = fmt.Errorf("start chromium: %w", err)
		return
	}
	b.mu.Lock()
	b.ctx, b.stop = ctx, stop
	b.mu.Unlock()
}

// Tab opens a tab in a fresh browser context, closed when the test ends.
// Its context carries the Browser's TabTimeout. It skips the test when
// Chromium cannot start, and fails it instead when CI is set, since CI must
// have a browser.
func (b *Browser) Tab(t testing.TB) context.Context {
	t.Helper()
	b.once.Do(b.start)
	if b.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("browser tests need Chromium in CI: %v", b.err)
		}
		t.Skipf("skipping browser test: %v", b.err)
	}
	tab, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first action creates the tab; it may not carry a deadline, for
	// chromedp would tie the tab's life to it. Later actions may.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	timeout := b.TabTimeout
	if timeout <= 0 {
		timeout = defaultTabTimeout
	}
	ctx, cancelTimeout := context.WithTimeout(tab, timeout)
	t.Cleanup(cancelTimeout)
	return ctx
}

// Stop ends Chromium, if it was started, and removes its profile. TestMain
// calls it after the tests have run.
func (b *Browser) Stop() {
	b.mu.Lock()
	stop := b.stop
	b.stop = nil
	b.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Run runs the tests, then Stops the browser, and returns their exit code:
// all a TestMain with nothing else to set up needs.
func (b *Browser) Run(m *testing.M) int {
	defer b.Stop()
	return m.Run()
}

// Do runs actions in the tab, failing the test on an error.
func Do(t testing.TB, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// Eval evaluates a JavaScript expression in the tab's page and returns its
// value, failing the test on an error.
func Eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// pollEvery is how often Eventually looks again.
const pollEvery = 50 * time.Millisecond

// Eventually evaluates js until it returns want, and fails the test with
// the last value if the tab's deadline comes first. It asserts on the
// outcome, never on how long it took. It polls from Go rather than in the
// page, so that it can span a navigation.
func Eventually(t testing.TB, ctx context.Context, js, want string) {
	t.Helper()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var got string
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err == nil && v == want {
			return
		}
		switch {
		case err == nil:
			got = v
		case ctx.Err() == nil:
			got = "error: " + err.Error()
		}
		// An evaluation cut short by the deadline says nothing of the
		// page: the value before it is the one worth reporting.
		select {
		case <-ctx.Done():
			t.Fatalf("%s = %q, want %q (gave up: %v)", js, got, want, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// Text is an expression for the trimmed text of the first element matching
// the CSS selector sel, or "<missing>" when none does.
func Text(sel string) string {
	return fmt.Sprintf(`(document.querySelector(%q) || {textContent: "<missing>"}).textContent.trim()`, sel)
}

// LastMark is an expression for the start time, as a string, of the latest
// User Timing entry called name, or "" while there is none. The pages'
// scripts mark what happens without a visible change (a poll that found
// nothing new) so that a test can wait for it without a test-only attribute.
func LastMark(name string) string {
	return fmt.Sprintf(`String(performance.getEntriesByName(%q).at(-1)?.startTime ?? "")`, name)
}

// ArtifactsDir is the folder for what a person may want to look at after
// the tests (screenshots): $OPLAB_ARTIFACTS/name, or oplab-artifacts/name
// in the system's temporary folder; never inside the repository.
func ArtifactsDir(t testing.TB, name string) string {
	t.Helper()
	base := os.Getenv("OPLAB_ARTIFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "oplab-artifacts")
	}
	dir := filepath.Join(base, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("make the artifacts folder: %v", err)
	}
	return dir
}

// ScreenshotsWanted is whether the tests save their screenshots: always
// at a desk (CI unset), where a person looks at them, and in CI only when
// OPLAB_ARTIFACTS names a folder to keep them in. A CI run keeps no files
// otherwise, and a whole-page capture costs Chromium a few hundred ms of
// CPU: over a hundred of them were a tenth of the browser tests' CPU
// (docs/BENCHMARKS.md). Screenshots of a failure are saved either way.
func ScreenshotsWanted() bool {
	return os.Getenv("CI") == "" || os.Getenv("OPLAB_ARTIFACTS") != ""
}

// Screenshot saves the whole page in the tab as the PNG file path, when
// ScreenshotsWanted.
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	Capture(t, ctx, path, chromedp.FullScreenshot(100))
}

// Capture saves what shot captures (chromedp.FullScreenshot, the window's
// chromedp.CaptureScreenshot, one element's chromedp.Screenshot) as the
// PNG file path, when ScreenshotsWanted.
func Capture(t testing.TB, ctx context.Context, path string, shot chromedp.Action[[]byte]) {
	t.Helper()
	if ScreenshotsWanted() {
		if err := save(t, ctx, path, shot); err != nil {
			t.Fatal(err)
		}
	}
}

// FailureScreenshot saves the whole page as the PNG file path whatever
// ScreenshotsWanted says: what the page showed when a wait gave up. One
// that cannot be taken (the tab is gone) is logged, not fatal: the caller's
// own failure, which follows, says what went wrong.
func FailureScreenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	if err := save(t, ctx, path, chromedp.FullScreenshot(100)); err != nil {
		t.Log(err)
	}
}

func save(t testing.TB, ctx context.Context, path string, shot chromedp.Action[[]byte]) error {
	t.Helper()
	began := time.Now()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("save the screenshot: %w", err)
	}
	t.Logf("Saved screenshot %s (%d KiB in %s)", path, len(png)>>10, time.Since(began).Round(time.Millisecond))
	return nil
}

// AxeTags are the axe-core rule sets every page must pass with zero
// violations.
const AxeTags = `["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]`

// AxeSource reads axe-core's axe.min.js at path (web/a11y/node_modules,
// which make browser fills from web/a11y/package-lock.json). Without it
// the test is skipped, or fails in CI.
func AxeSource(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI=%s and axe-core is missing: %v (make browser installs it)", os.Getenv("CI"), err)
		}
		t.Skipf("skipping: axe-core is not installed (%v): run make browser", err)
	}
	return string(b)
}

// AxeViolation is one rule axe-core found broken, with up to six of the
// nodes that break it.
type AxeViolation struct {
	ID    string   `json:"id"`
	Help  string   `json:"help"`
	Nodes []string `json:"nodes"`
}

// Axe runs axe-core (src) on the page ctx shows, injected first unless the
// document has it already, with runOnly as axe's option of that name (a
// tag set or a list of rules), and returns the violations. Only violations
// are asked for: axe then skips describing every node that passed, most of
// its work on a long table.
func Axe(ctx context.Context, src, runOnly string) ([]AxeViolation, error) {
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
		var vs []AxeViolation
		vs, err = chromedp.Run(ctx, chromedp.Evaluate[[]AxeViolation](`axe.run(document, {runOnly: `+runOnly+`, resultTypes: ["violations"]})
		.then(r => r.violations.map(v => ({id: v.id, help: v.help,
			nodes: v.nodes.slice(0, 6).map(n => n.target.join(" ") + " — " + (n.failureSummary || "").replace(/\s+/g, " "))})))`,
			chromedp.EvalAwaitPromise))
		if err == nil || !strings.Contains(err.Error(), "nthChild") {
			return vs, err
		}
	}
	return nil, err
}
