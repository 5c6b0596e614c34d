package httpx

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/static"
)

// browser is started only by the browser test below: the unit tests of
// this package need none.
var browser = &browsertest.Browser{}

func TestMain(m *testing.M) { os.Exit(browser.Run(m)) }

// The error page is a page of the app, styled and with its navigation, so
// a learner whose page failed can go on; the screenshot is for a person to
// look at.
func TestBrowserErrorPageKeepsTheFrame(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS)))
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, r *http.Request) {
		Render(w, r, logr.Discard(), http.StatusOK, halfThenFail)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	ctx := browser.Tab(t)
	browsertest.Do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/broken"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if got := browsertest.Eval[string](t, ctx, browsertest.Text("main h1")); got != "Something went wrong" {
		t.Errorf("heading %q", got)
	}
	if got := browsertest.Eval[int](t, ctx, `document.querySelectorAll('nav[aria-label="Main"] a').length`); got < 5 {
		t.Errorf("the error page shows %d navigation links, want the app's navigation", got)
	}
	// base.css is applied: the page is not the browser's unstyled default.
	if got := browsertest.Eval[string](t, ctx, `getComputedStyle(document.body).fontFamily`); got == "" || got == `"Times New Roman"` {
		t.Errorf("the page is unstyled (font %q)", got)
	}
	browsertest.Screenshot(t, ctx, filepath.Join(browsertest.ArtifactsDir(t, "httpx"), "error-page.png"))
}
