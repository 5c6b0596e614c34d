package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/web"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/starting"
)

// TestBrowserLabWaitsForTheClusterThenTurnsLive plays a first run as a
// newcomer sees it: the course pages answer while the control plane is
// built, the lab says which binary is being built and how many are left,
// follows the build as it goes, and becomes the lab by itself when the
// full server takes over (here a stand-in, as cmd/oplab swaps it in: the
// cluster is not the point). axe-core finds nothing in light or dark.
func TestBrowserLabWaitsForTheClusterThenTurnsLive(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	var status atomic.Pointer[starting.Status]
	set := func(s starting.Status) { status.Store(&s) }
	began := time.Now().Add(-3*time.Minute - 12*time.Second)
	set(starting.Status{Phase: starting.Building, Building: "kube-apiserver", Built: 1, Total: 6, Began: began,
		Done: []starting.Built{{Name: "etcd", Took: 62 * time.Second}}})
	early, err := web.Starting(web.StartingOptions{Content: mustCourse(t), Status: func() starting.Status { return *status.Load() }, Logger: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	// The full server, once in: /starting says ready, /lab is the lab.
	full := http.NewServeMux()
	full.HandleFunc("GET /starting", web.Ready)
	full.HandleFunc("GET /lab", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!DOCTYPE html><html lang="en"><title>Lab</title><main><h1>Your lab</h1></main></html>`))
	})
	var front atomic.Pointer[http.Handler]
	front.Store(&early)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*front.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)

	for _, path := range []string{"/", "/lessons", "/quiz", "/flashcards", "/challenges", "/challenges/interview-walkthrough"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s while the cluster is built = %d, want 200", path, resp.StatusCode)
		}
	}

	ctx := browser.Tab(t)
	dir := browsertest.ArtifactsDir(t, "starting")
	browsertest.Do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#starting-status")))
	got := browsertest.Eval[string](t, ctx, browsertest.Text("#starting-status"))
	for _, want := range []string{"kube-apiserver", "step 2 of 6", "4 more after it"} {
		if !strings.Contains(got, want) {
			t.Errorf("the status reads %q; want it to say %q", got, want)
		}
	}
	// The build began 3 min 12 s before the page was asked for.
	var mins, secs int
	got = browsertest.Eval[string](t, ctx, browsertest.Text("#starting-elapsed"))
	if _, err := fmt.Sscanf(got, "%d min %d s so far", &mins, &secs); err != nil || mins*60+secs < 3*60+12 {
		t.Errorf("the time so far reads %q; want at least 3 min 12 s so far", got)
	}
	if got := browsertest.Eval[string](t, ctx, browsertest.Text("#starting-done")); !strings.Contains(got, "etcd built in 1 min 2 s") {
		t.Errorf("the binaries built read %q; want etcd with its time", got)
	}
	checkPage(t, ctx, src, "/lab while building")
	browsertest.Do(t, ctx, chromedp.EmulateViewport(1280, 800))
	browsertest.Screenshot(t, ctx, filepath.Join(dir, "building-1280.png"))

	// The build goes on: the page follows without a reload.
	set(starting.Status{Phase: starting.Building, Building: "kubectl", Built: 2, Total: 6, Began: began,
		Done: []starting.Built{{Name: "etcd", Took: 62 * time.Second}, {Name: "kube-apiserver", Took: 7*time.Minute + 30*time.Second}}})
	browsertest.Eventually(t, ctx, `String(document.querySelector("#starting-status").textContent.includes("kubectl, step 3 of 6") && document.querySelector("#starting-done").children.length == 2)`, "true")
	if got := browsertest.Eval[string](t, ctx, `document.querySelector("#starting-progress").value + " of " + document.querySelector("#starting-progress").max`); got != "2 of 6" {
		t.Errorf("the progress bar reads %s; want 2 of 6", got)
	}
	browsertest.Do(t, ctx, chromedp.EmulateViewport(390, 844))
	browsertest.Screenshot(t, ctx, filepath.Join(dir, "building-390.png"))

	set(starting.Status{Phase: starting.Starting, Began: time.Now()})
	browsertest.Eventually(t, ctx, `String(document.querySelector("#starting-status").textContent.startsWith("Starting the cluster"))`, "true")

	// A challenge reads as text meanwhile: its tasks and hints, no Start,
	// no forms, and the same live status.
	chal, chalCtx := srv.URL+"/challenges/interview-walkthrough", browser.Tab(t)
	browsertest.Do(t, chalCtx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(chal), chromedp.WaitVisible(chromedp.CSS("#starting-status")))
	if got := browsertest.Eval[string](t, chalCtx, `[document.querySelectorAll("ol.tasks li").length > 3, !!document.querySelector("#start-form"), document.querySelectorAll("#tasks form").length, document.querySelector("#starting-status").textContent].join("|")`); got != "true|false|0|Starting the cluster: etcd, the API server, the controller manager, the scheduler and a fake node." {
		t.Errorf("the challenge while the cluster starts reads %q; want its tasks, no Start form, no task forms, the status", got)
	}
	if got := browsertest.Eval[string](t, chalCtx, `document.querySelector("#tasks").textContent`); strings.Contains(got, "$NS") {
		t.Errorf("the tasks show the namespace placeholder: %q", got)
	}
	checkPage(t, chalCtx, src, "a challenge while the cluster starts")
	browsertest.Do(t, chalCtx, chromedp.EmulateViewport(1280, 800))
	browsertest.Screenshot(t, chalCtx, filepath.Join(dir, "challenge-reading-1280.png"))

	// The full server takes over: the pages become the real ones by
	// themselves.
	full.HandleFunc("GET /challenges/{id}", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!DOCTYPE html><html lang="en"><title>Challenge</title><main><h1>The live challenge</h1></main></html>`))
	})
	var h http.Handler = full
	front.Store(&h)
	browsertest.Eventually(t, ctx, `document.querySelector("main h1") ? document.querySelector("main h1").textContent : ""`, "Your lab")
	browsertest.Eventually(t, chalCtx, `document.querySelector("main h1") ? document.querySelector("main h1").textContent : ""`, "The live challenge")
}

// The readiness probe and the pages that cannot wait say why, with a
// status a client can act on; a form post is not lost in silence.
func TestStartingAnswersWhatNeedsTheCluster(t *testing.T) {
	t.Parallel()
	st := starting.Status{Phase: starting.Building, Building: "etcd", Built: 0, Total: 7, Began: time.Now()}
	h, err := web.Starting(web.StartingOptions{Content: mustCourse(t), Status: func() starting.Status { return st }, Logger: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		code         int
		says         string
	}{
		{"GET", "/readyz", http.StatusServiceUnavailable, "not ready: Building the Kubernetes control plane from source: etcd, step 1 of 7"},
		{"GET", "/lab", http.StatusServiceUnavailable, "The lab is getting ready"},
		{"GET", "/code", http.StatusServiceUnavailable, "The lab is getting ready"},
		{"GET", "/instructor", http.StatusServiceUnavailable, "The lab is getting ready"},
		{"POST", "/lab/databases", http.StatusServiceUnavailable, "the cluster is not up yet"},
		{"GET", "/starting", http.StatusOK, `"phase":"building"`},
		{"GET", "/healthz", http.StatusOK, "ok"},
		{"GET", "/lessons", http.StatusOK, "Lessons"},
		{"GET", "/static/starting.js", http.StatusOK, "/starting"},
	} {
		r := httptest.NewRequest(c.method, "http://127.0.0.1:8080"+c.path, nil)
		if c.method == "POST" {
			r.Header.Set("Origin", "http://127.0.0.1:8080")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.says) {
			t.Errorf("%s %s = %d %.200q; want %d saying %q", c.method, c.path, w.Code, w.Body.String(), c.code, c.says)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s %s: Content-Security-Policy %q; want the full server's", c.method, c.path, csp)
		}
	}
	// The same guards as the full server: another host name is refused
	// (DNS rebinding), and a cross-site form post too.
	r := httptest.NewRequest("GET", "http://rebound.example/lab", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMisdirectedRequest {
		t.Errorf("GET /lab for host rebound.example = %d, want 421", w.Code)
	}
	r = httptest.NewRequest("POST", "http://127.0.0.1:8080/quiz", strings.NewReader("q=1"))
	r.Header.Set("Origin", "https://evil.example")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("a cross-site POST /quiz = %d, want 403", w.Code)
	}
}
