package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// Browsing page after page in one tab left the session without a live
// timeline: Chromium's back/forward cache kept each page's websocket open,
// every page opens one (the classroom's messages), and the session's
// streams ran out, so the lab said "reconnecting…" for good. A page now
// closes its socket when left and opens it again when it comes back.
func TestBrowserBrowsingKeepsTheLiveStream(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form")))
	poll(t, ctx, "the stream to open", streamLive)
	ns := browsertest.Eval[string](t, ctx, `document.getElementById("lab").dataset.namespace`)
	// Twice as many pages as the session has streams, as a learner reads
	// the course beside the lab.
	pages := []string{"/lessons", "/code", "/challenges", "/quiz", "/flashcards", "/lab", "/code", "/lessons",
		"/challenges", "/quiz", "/flashcards", "/lab", "/code", "/challenges", "/quiz", "/lessons"}
	for _, p := range pages {
		browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+p), chromedp.WaitReady(chromedp.CSS("main")))
	}
	browsertest.Do(t, ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form")))
	poll(t, ctx, "the stream to open after browsing", streamLive)

	// Every stream but the lab's own is free again once the server has
	// seen the left pages' sockets close.
	const others = `(async () => {
		const socks = [];
		let open = 0;
		for (let i = 0; i < %d; i++) {
			const s = new WebSocket("ws://" + location.host + "/ws");
			socks.push(s);
			if (await new Promise((res) => { s.onopen = () => res(true); s.onerror = () => res(false); })) open++;
		}
		socks.forEach((s) => s.close());
		return open;
	})()`
	want := web.MaxStreamsPerSession - 1
	var got int
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(others, want), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if got = n; got == want || time.Now().After(end) {
			break
		}
	}
	if got != want {
		t.Errorf("after browsing %d pages, %d more streams could open beside the lab's; want %d: the left pages hold the rest", len(pages), got, want)
	}

	// A lab page that comes back from the cache is live again, and shows
	// what happened while it was away.
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.leftAt = "here"`),
		chromedp.Navigate(e.http.URL+"/lessons"), chromedp.WaitReady(chromedp.CSS("main")))
	if err := e.client.Create(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "away", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	// history.back, not NavigateBack: a page restored from the cache
	// fires no load event for chromedp to wait for.
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`history.back()`))
	// The page changes under the evaluation: ask again until the lab answers.
	waitFor(t, ctx, "the lab to come back", `location.pathname === "/lab" && document.readyState === "complete"`)
	if restored := browsertest.Eval[string](t, ctx, `String(window.leftAt)`); restored != "here" {
		t.Fatalf("the lab came back as a new page (window.leftAt = %s), not from the back/forward cache: this test cannot see a restored page", restored)
	}
	waitFor(t, ctx, "the restored lab's stream to open", streamLive)
	waitFor(t, ctx, "a reconcile of the Database created while the lab was away", `!!document.querySelector('#rows li.row[data-db="away"]')`)
}

// waitFor evaluates expr until it is true, for a minute. Unlike poll (and
// chromedp.Poll) it works on a page restored from the back/forward cache.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	var err error
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		var ok bool
		if ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
	}
	t.Fatalf("waiting for %s (%s): %v", what, expr, err)
}
