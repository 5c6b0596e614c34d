package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var browser = &Browser{Width: 640, Height: 480}

func TestMain(m *testing.M) { os.Exit(browser.Run(m)) }

// page serves one page whose script sets its title to "ready" a moment
// after it loads, so Eventually has to wait for it.
func page(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!DOCTYPE html><title>start</title><p id="p">  hello  </p>
<script>setTimeout(() => { document.title = "ready"; }, 100);</script>`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTabEvalEventuallyAndText(t *testing.T) {
	srv := page(t)
	ctx := browser.Tab(t)
	Do(t, ctx, chromedp.Navigate(srv.URL))
	Eventually(t, ctx, "document.title", "ready")
	if got := Eval[string](t, ctx, Text("#p")); got != "hello" {
		t.Errorf("Text(#p) = %q, want the trimmed text", got)
	}
	if got := Eval[string](t, ctx, Text("#nothing")); got != "<missing>" {
		t.Errorf("Text(#nothing) = %q, want <missing>", got)
	}
	if got := Eval[int](t, ctx, "window.innerWidth"); got != 640 {
		t.Errorf("window is %d wide, want the Browser's 640", got)
	}
}

// Each tab is its own browser context: what one test keeps in storage or
// cookies, the next does not see, even on the same origin.
func TestTabsDoNotShareStorage(t *testing.T) {
	srv := page(t)
	first := browser.Tab(t)
	Do(t, first, chromedp.Navigate(srv.URL))
	Eval[bool](t, first, `localStorage.setItem("k", "first"); document.cookie = "c=first"; true`)
	if got := Eval[string](t, first, `localStorage.getItem("k") + document.cookie`); got != "firstc=first" {
		t.Fatalf("the first tab kept %q, want its own storage and cookie", got)
	}
	second := browser.Tab(t)
	Do(t, second, chromedp.Navigate(srv.URL))
	if got := Eval[string](t, second, `String(localStorage.getItem("k")) + "|" + document.cookie`); got != "null|" {
		t.Errorf("the second tab sees %q of the first tab's storage and cookies", got)
	}
}

func TestArtifactsDirAndScreenshot(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("OPLAB_ARTIFACTS", t.TempDir())
	dir := ArtifactsDir(t, "browsertest")
	srv := page(t)
	ctx := browser.Tab(t)
	Do(t, ctx, chromedp.Navigate(srv.URL))
	path := dir + "/page.png"
	Screenshot(t, ctx, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Errorf("%s is not a PNG (%d bytes)", path, len(b))
	}
}

// TestScreenshotsInCIOnlyWhereKept: in CI without OPLAB_ARTIFACTS no
// screenshot is saved, but a failure's is.
func TestScreenshotsInCIOnlyWhereKept(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("OPLAB_ARTIFACTS", "")
	if ScreenshotsWanted() {
		t.Fatal("ScreenshotsWanted in CI with no OPLAB_ARTIFACTS")
	}
	srv := page(t)
	ctx := browser.Tab(t)
	Do(t, ctx, chromedp.Navigate(srv.URL))
	dir := t.TempDir()
	Screenshot(t, ctx, dir+"/skipped.png")
	Capture(t, ctx, dir+"/skipped-window.png", chromedp.CaptureScreenshot())
	FailureScreenshot(t, ctx, dir+"/failed.png")
	for name, want := range map[string]bool{"skipped.png": false, "skipped-window.png": false, "failed.png": true} {
		if _, err := os.Stat(dir + "/" + name); (err == nil) != want {
			t.Errorf("%s saved: %v, want %v", name, err == nil, want)
		}
	}
	t.Setenv("CI", "")
	if !ScreenshotsWanted() {
		t.Error("ScreenshotsWanted is false at a desk (CI unset)")
	}
}

// fatalRecorder stands in for a test to catch Fatalf, ending the goroutine
// as the testing package does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Eventually gives up at the tab's deadline and says what it saw last.
func TestEventuallyFailsAtTheDeadlineWithTheLastValue(t *testing.T) {
	srv := page(t)
	tab := browser.Tab(t)
	Do(t, tab, chromedp.Navigate(srv.URL))
	Eventually(t, tab, "document.title", "ready")
	ctx, cancel := context.WithTimeout(tab, 300*time.Millisecond)
	defer cancel()
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(rec, ctx, "document.title", "never")
	}()
	<-done
	if !strings.Contains(rec.msg, `document.title = "ready", want "never"`) {
		t.Errorf("Eventually ended with %q, want the last value and the wanted one", rec.msg)
	}
}

// A tab's window preloads none of the browser's own WebUI pages (the
// address bar's popups), each a renderer the tests would pay for at every
// tab. Chromium ignores a feature name it does not know, so this fails when
// a new Chromium renames what DisabledFeatures turns off.
func TestTabsOpenNoBrowserUIPages(t *testing.T) {
	srv := page(t)
	ctx := browser.Tab(t)
	Do(t, ctx, chromedp.Navigate(srv.URL))
	Eventually(t, ctx, "document.title", "ready")
	targets, err := chromedp.Targets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, ti := range targets {
		switch {
		case ti.Type == "page":
			pages++
		case strings.HasPrefix(ti.URL, "chrome:"), ti.Type == "browser_ui":
			t.Errorf("the browser opened %s (%s) beside the tab: a renderer for nothing; update DisabledFeatures (%s) for this Chromium",
				ti.URL, ti.Type, DisabledFeatures)
		}
	}
	if pages == 0 {
		t.Errorf("no page among the browser's targets %v: the check saw nothing", targets)
	}
}

// LastMark reads "" before the page marks anything, then the latest mark's
// time, so a wait on it moves on each new mark.
func TestLastMarkFollowsTheLatestMark(t *testing.T) {
	ctx := browser.Tab(t)
	Do(t, ctx, chromedp.Navigate(page(t).URL))
	for _, step := range []struct{ js, want string }{
		{"", ""},
		{`performance.mark("test:other", {startTime: 3});`, ""},
		{`performance.mark("test:poll", {startTime: 5});`, "5"},
		{`performance.mark("test:poll", {startTime: 9});`, "9"},
	} {
		if got := Eval[string](t, ctx, step.js+LastMark("test:poll")); got != step.want {
			t.Errorf("after %q: %q, want %q", step.js, got, step.want)
		}
	}
}
