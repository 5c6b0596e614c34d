package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/web"
	"github.com/oplab-dev/oplab/web/lab"
)

// watchViolations records, in window.__csp, every Content-Security-Policy
// violation of every page the tab opens from now on, and makes
// window.__pwned the mark a payload sets.
func watchViolations(t *testing.T, ctx context.Context) {
	t.Helper()
	const src = `window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " at " + location.pathname));`
	if err := chromedp.Do(ctx, cdpCall(page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})); err != nil {
		t.Fatalf("watch for policy violations: %v", err)
	}
}

func violations(t *testing.T, ctx context.Context) []string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || []`))
	if err != nil {
		t.Fatalf("read policy violations: %v", err)
	}
	return v
}

// markerServer counts the requests a payload would send out of the page.
func markerServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

// payload is markup that, if it ever reached a page as HTML and ran, would
// set the title and window.__pwned and call the marker server, three ways.
func payload(marker string) string {
	js := fmt.Sprintf(`document.title='pwned';window.__pwned=1;fetch('%s/fetch');new Image().src='%s/img'`, marker, marker)
	return fmt.Sprintf(`<img src="x" onerror="%s"><script>%s</script><a id="pwn" href="javascript:%s">x</a>`, js, js, js)
}

// replayOnly serves the lab's replay pages with the server's headers, no
// cluster needed: what the upload does is decided before anything reaches
// one.
func replayOnly(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", web.StaticFiles()))
	lab.New(lab.Options{}).Register(mux)
	srv := httptest.NewServer(web.SecurityHeaders(mux))
	t.Cleanup(srv.Close)
	return srv
}

// The two payloads of issue 19's finding (d): a key that encoding/json
// reads in any case ("Kind" beside "kind", "Type" beside "type") made the
// server skip drawing a state's card itself while the page put the file's
// own state.html in the page. The upload must be refused, naming the key,
// and nothing of the file may run.
func TestBrowserReplayPayloadsRunNoScript(t *testing.T) {
	t.Parallel()
	srv := replayOnly(t)
	marker, hits := markerServer(t)
	state := fmt.Sprintf(`{"namespace":"lab-a","name":"a","uid":"u","engine":"postgres","version":"16","replicas":1,"storage":"1Gi","specYAML":"","generation":1,"observedGeneration":1,"stale":false,"readyReplicas":1,"html":%q}`, payload(marker))
	for _, tc := range []struct{ name, message, field string }{
		{"Kind beside kind", `{"seq":1,"time":"2026-01-01T00:00:00Z","type":"state","object":{"kind":"Database","namespace":"lab-a","name":"a","Kind":"Nope"},"state":` + state + `}`, `object.Kind`},
		{"Type beside type", `{"seq":1,"time":"2026-01-01T00:00:00Z","type":"state","Type":"event","object":{"kind":"Database","namespace":"lab-a","name":"a"},"state":` + state + `}`, `Type`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "crafted.json")
			body := `{"version":1,"exportedAt":"2026-01-01T00:00:00Z","namespace":"lab-a","messages":[` + tc.message + `]}`
			if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			tab := browser.Tab(t)
			watchViolations(t, tab)
			if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/lab/replay"),
				chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}),
				chromedp.Click(chromedp.CSS(`.replay-form button`))); err != nil {
				t.Fatal(err)
			}
			// Either the refusal or, were the file accepted, the player.
			pollAcross(t, tab, "the replay's answer", `document.querySelector('[role="alert"]') !== null || document.getElementById("replay-all") !== null`)
			if ok, _ := chromedp.Run(tab, chromedp.Evaluate[bool](`document.getElementById("replay-all") !== null`)); ok {
				t.Error("the crafted file was accepted")
				// Play it, as a learner would, to give the payload its chance.
				_ = chromedp.Do(tab, chromedp.Click(chromedp.CSS("#replay-all")),
					chromedp.Evaluate[chromedp.Void](`document.getElementById("pwn")?.click()`))
			}
			msg, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector('[role="alert"]')?.textContent || ""`))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(msg, tc.field) || !strings.Contains(msg, "unknown field") {
				t.Errorf("the page says %q, want the file refused naming %q", msg, tc.field)
			}
			pwned, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.title === "pwned" || window.__pwned !== undefined`))
			if err != nil {
				t.Fatal(err)
			}
			if pwned || hits.Load() != 0 {
				t.Errorf("the file's script ran: title or window.__pwned set %v, %d requests to the marker", pwned, hits.Load())
			}
		})
	}
}

// The policy itself stops the payload should markup from a file or an
// object ever reach a page: no inline script, no event handler attribute,
// no javascript: URL runs, and nothing is fetched from another origin.
func TestBrowserPolicyBlocksInlineScript(t *testing.T) {
	t.Parallel()
	marker, hits := markerServer(t)
	srv := httptest.NewServer(web.SecurityHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>page</title><div id="in"></div>%s<script src="/nothing.js"></script>`, payload(marker))
	})))
	t.Cleanup(srv.Close)
	tab := browser.Tab(t)
	watchViolations(t, tab)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/"),
		// What the lab (lab/cards.js) does with a state's HTML.
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById("in").innerHTML = %q`, payload(marker))),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("pwn").click()`)); err != nil {
		t.Fatal(err)
	}
	// The inline script, two handlers and a javascript: URL are refused
	// (the page's own watcher sees each refusal).
	poll(t, tab, "the refusals", `window.__csp.filter((v) => v.startsWith("script-src")).length >= 3`)
	pwned, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.title === "pwned" || window.__pwned !== undefined`))
	if err != nil {
		t.Fatal(err)
	}
	if pwned || hits.Load() != 0 {
		t.Errorf("inline script ran under the policy: pwned %v, %d requests to the marker; violations %q", pwned, hits.Load(), violations(t, tab))
	}
}

// Every page works under the policy: visited in Chromium, none reports a
// violation, and the lab's stream still opens (its websocket is 'self').
func TestBrowserPagesKeepThePolicy(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	tab := e.tab(t)
	watchViolations(t, tab)
	e.openLab(t, tab, "")
	createInTab(t, tab, "csp")
	poll(t, tab, "the new card", `document.getElementById("db-csp") !== null`)
	if v := violations(t, tab); len(v) > 0 {
		t.Errorf("/lab broke the policy: %q", v)
	}
	for _, path := range []string{"/", "/lessons", "/quiz", "/flashcards", "/challenges", "/instructor?token=" + url.QueryEscape(testInstructorToken), "/lab/replay"} {
		if err := chromedp.Do(tab, chromedp.Navigate(e.http.URL+path), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		poll(t, tab, path+" loaded", `document.readyState === "complete"`)
		if v := violations(t, tab); len(v) > 0 {
			t.Errorf("%s broke the policy: %q", path, v)
		}
	}
	file := e.exportWithReady(t, "cspplayed")
	if err := chromedp.Do(tab, chromedp.Navigate(e.http.URL+"/lab/replay"),
		chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}),
		chromedp.Click(chromedp.CSS(`.replay-form button`)),
		chromedp.WaitVisible(chromedp.CSS("#replay-all")),
		chromedp.Click(chromedp.CSS("#replay-all"))); err != nil {
		t.Fatal(err)
	}
	poll(t, tab, "the replayed card", `document.getElementById("db-cspplayed") !== null`)
	if v := violations(t, tab); len(v) > 0 {
		t.Errorf("the replay broke the policy: %q", v)
	}
}
