package e2e

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/instructor"
)

// The instructor token reaches no learner: not a page, not a header, not
// the stream; and the instructor's cookie is not sent to the lab.
func TestInstructorTokenNeverReachesALearner(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	if code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {"watched"}, "replicas": {"1"}}); code != 200 {
		t.Fatalf("create: %d %+v", code, res)
	}
	polltest.Until(t, deadline, "watched Ready", func() (bool, error) {
		d, ok := e.latestState(ns, "watched")
		return ok && d.Ready() == "True", nil
	})
	leaks := func(where, s string) {
		t.Helper()
		if strings.Contains(s, testInstructorToken) {
			t.Errorf("%s contains the instructor token", where)
		}
	}
	for _, path := range []string{"/", "/lab", "/lab?scenario=stuck-finalizer", "/lessons", "/lessons/reconciliation-loop", "/quiz", "/flashcards", "/lab/export", "/lab/preview?name=a&replicas=1", "/lab/replay"} {
		resp, body := get(t, c, e.http.URL+path)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d", path, resp.StatusCode)
		}
		leaks("GET "+path, body)
		for k, v := range resp.Header {
			leaks("GET "+path+" header "+k, strings.Join(v, " "))
		}
	}
	_, res := postForm(t, c, e.http.URL, "/lab/controller/stop", nil)
	leaks("the Stop answer", res.Message)
	postForm(t, c, e.http.URL, "/lab/controller/start", nil)

	// The stream: everything a fresh viewer gets.
	u, _ := url.Parse(e.http.URL)
	hdr := http.Header{"Origin": {e.http.URL}}
	for _, ck := range c.Jar.Cookies(u) {
		hdr.Add("Cookie", ck.String())
	}
	conn, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws://"+u.Host+"/ws", hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frames := 0
	for {
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		frames++
		leaks("a /ws frame", string(data))
	}
	if frames == 0 {
		t.Error("the stream sent nothing; the check read no frame")
	}

	// The instructor, in the same browser: the cookie is scoped to
	// /instructor, so the lab's requests never carry it.
	jar, _ := cookiejar.New(nil)
	ic := &http.Client{Jar: jar}
	resp, _ := get(t, ic, e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken))
	if resp.StatusCode != 200 {
		t.Fatalf("instructor URL = %d", resp.StatusCode)
	}
	if !slices.ContainsFunc(jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/instructor"}), func(c *http.Cookie) bool { return c.Name == instructor.CookieName }) {
		t.Fatal("no instructor cookie after the instructor URL")
	}
	for _, path := range []string{"/lab", "/ws", "/"} {
		if slices.ContainsFunc(jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: path}), func(c *http.Cookie) bool { return c.Name == instructor.CookieName }) {
			t.Errorf("the instructor cookie is sent to %s", path)
		}
	}
}

// A learner's Stop pauses their namespace only: another learner's new
// Database is reconciled meanwhile, and the whole controller keeps running.
func TestLearnerPauseStopsOnlyTheirNamespace(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	a, nsA := e.learner(t)
	b, nsB := e.learner(t)
	t.Cleanup(func() { e.runner.ResumeNamespace(nsA) })
	if code, res := postForm(t, a, e.http.URL, "/lab/controller/stop", nil); code != 200 || res.ControllerRunning || !res.Paused {
		t.Fatalf("A's stop: %d %+v", code, res)
	}
	if !e.runner.Running() || !e.runner.NamespacePaused(nsA) || e.runner.NamespacePaused(nsB) {
		t.Fatalf("after A's stop: running %v, A paused %v, B paused %v; want only A paused", e.runner.Running(), e.runner.NamespacePaused(nsA), e.runner.NamespacePaused(nsB))
	}
	for _, l := range []struct {
		c  *http.Client
		ns string
	}{{a, nsA}, {b, nsB}} {
		if code, res := postForm(t, l.c, e.http.URL, "/lab/databases", url.Values{"name": {"mine"}, "replicas": {"1"}}); code != 200 {
			t.Fatalf("create in %s: %d %+v", l.ns, code, res)
		}
	}
	polltest.Until(t, deadline, "B's Database Ready while A is paused", func() (bool, error) {
		d, ok := e.latestState(nsB, "mine")
		return ok && d.Ready() == "True", nil
	})
	if slices.ContainsFunc(e.trace(nsA, "mine"), func(s controller.Step) bool { return s.Type == controller.StepReconcileStart }) {
		t.Errorf("A's Database was reconciled while A was paused:%s", describeTrace(e.trace(nsA, "mine")))
	}
	if code, res := postForm(t, a, e.http.URL, "/lab/controller/start", nil); code != 200 || !res.ControllerRunning {
		t.Fatalf("A's start: %d %+v", code, res)
	}
	polltest.Until(t, deadline, "A's Database Ready after resuming", func() (bool, error) {
		d, ok := e.latestState(nsA, "mine")
		return ok && d.Ready() == "True", nil
	})
}

// The edit form sends what it showed; a field changed by kubectl meanwhile
// and not by the learner is left alone.
func TestEditKeepsAKubectlChange(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	if code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {"shared"}, "replicas": {"1"}}); code != 200 {
		t.Fatalf("create: %d %+v", code, res)
	}
	key := types.NamespacedName{Namespace: ns, Name: "shared"}
	// kubectl patch database shared --type=merge -p '{"spec":{"replicas":3}}'
	db := &v1alpha1.Database{}
	db.Namespace, db.Name = ns, "shared"
	if err := e.client.Patch(t.Context(), db, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`))); err != nil {
		t.Fatal(err)
	}
	// The learner's form was drawn before: replicas 1, no version. They
	// change only the version.
	code, res := postForm(t, c, e.http.URL, "/lab/databases/shared/edit", url.Values{
		"replicas": {"1"}, "version": {"16"}, "origReplicas": {"1"}, "origVersion": {""},
	})
	if code != 200 || !strings.Contains(res.Message, "version 16") || strings.Contains(res.Message, "replicas") {
		t.Fatalf("edit: %d %+v; want only the version patched", code, res)
	}
	if err := e.client.Get(t.Context(), key, db); err != nil {
		t.Fatal(err)
	}
	if db.Spec.Replicas != 3 || db.Spec.Version != "16" {
		t.Errorf("after the edit: replicas %d version %q; want kubectl's 3 kept and the learner's 16", db.Spec.Replicas, db.Spec.Version)
	}
}

// The instructor page in Chromium: the token form, then, from the printed
// URL, the switch; a learner's paused lab says it is stopped for them.
func TestBrowserInstructorPageAndPausedLab(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/instructor"), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "20-instructor-login")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/instructor/controller/stop"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the token dropped from the address", `location.search === ""`)
	poll(t, ctx, "the controller shown running", `document.getElementById("controller-status").textContent.includes("running")`)
	if html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML + document.cookie`)); err != nil || strings.Contains(html, testInstructorToken) {
		t.Errorf("the instructor page or a script-readable cookie holds the token (%v)", err)
	}
	screenshot(t, ctx, "21-instructor")

	learner := e.tab(t)
	if err := chromedp.Do(learner, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS(`button[data-controller="stop"]`)),
		chromedp.Click(chromedp.CSS(`button[data-controller="stop"]`))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the flash saying only this namespace is paused", `document.querySelector("#flash .flash-ok")?.textContent.includes("other learners' Databases are still reconciled")`)
	poll(t, learner, "the controller shown paused here", `document.getElementById("controller-status").textContent.includes("Your namespace is paused")`)
	// Only the button that applies is enabled, and the page says why.
	poll(t, learner, "Pause disabled, Resume enabled, and why", `document.querySelector('button[data-controller="stop"]').disabled
		&& !document.querySelector('button[data-controller="start"]').disabled && document.getElementById("pause-why").textContent.startsWith("Paused:")`)
	screenshot(t, learner, "22-lab-paused")
	clickEnabled(t, learner, `button[data-controller="start"]`)
	poll(t, learner, "the controller shown running again, Resume disabled", `document.getElementById("controller-status").textContent.includes("running")
		&& document.querySelector('button[data-controller="start"]').disabled && !document.querySelector('button[data-controller="stop"]').disabled`)
	if !e.runner.Running() {
		t.Error("the learner's Stop stopped the whole controller")
	}
}
