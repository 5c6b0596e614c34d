package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// A learner whose first page is the code page (a lesson's "write it
// yourself" link) lands on it, in their own namespace, where they were
// sent to the lab without a word; the lab then shows that same namespace.
func TestBrowserCodePageOnAFirstVisit(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")))
	if path := browsertest.Eval[string](t, ctx, `location.pathname`); path != "/code" {
		t.Fatalf("a first visit to /code ended on %s", path)
	}
	ns := browsertest.Eval[string](t, ctx, `document.getElementById("code").dataset.namespace`)
	if active := browsertest.Eval[string](t, ctx, `document.querySelector('nav a[aria-current="page"]')?.textContent.trim() ?? ""`); active != "Your code" {
		t.Errorf("the menu marks %q as the page; want Your code", active)
	}
	browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form")))
	if lab := browsertest.Eval[string](t, ctx, `document.getElementById("lab").dataset.namespace`); ns == "" || lab != ns {
		t.Errorf("the code page's namespace %q and the lab's %q; want one session's", ns, lab)
	}
}
