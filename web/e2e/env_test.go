package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/cmd/oplab/app"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web"
	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/kubectl"
	"github.com/oplab-dev/oplab/web/lab"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/stream"
)

// The shared server's instructor token and kubectl line.
const (
	testInstructorToken = "instructor-token-of-the-web-tests"
	testKubectlLine     = "kubectl --kubeconfig /tmp/oplab-test-kubeconfig get databases -w"
)

// deadline bounds every wait: generous, because the tests check that things
// happen, never how fast.
const deadline = 3 * time.Minute

// resetWait is how long a roster reset waits for a learner's Databases to
// go here: the tests that hold one release it within seconds, and the one
// whose reset cannot finish need not wait a minute to see it fail.
const resetWait = 30 * time.Second

// env is everything the integration and browser tests share: one embedded
// cluster, one controller, one recorder, one server and one browser, started
// on first use and stopped by TestMain.
//
// Every test calls t.Parallel. A learner's test owns its namespace; a test
// of what reaches every learner of a class (follow mode, "send everyone
// to", the class timer, a demo's narration, the roster) takes a class of
// its own (needClass), a second server on the same cluster, so no other
// test's page is among its learners. Run serially, the package left the
// two cores idle more than half the time, waiting on the cluster, the
// controller and the pages' polls; docs/BENCHMARKS.md has the figures.
type testEnv struct {
	cluster  *cluster.Cluster
	runner   *controller.Runner
	recorder *trace.Recorder
	app      *app.Web
	server   *web.Server
	http     *httptest.Server
	client   client.Client
	cancel   context.CancelFunc
	// opts is how the shared server was assembled; a class (needClass)
	// is assembled the same way with a prefix of its own.
	opts app.Options
	// sinks hands what the controller reports to the server whose
	// learner it is about.
	sinks *sinks
}

// newStream starts a recorder and the hub streaming it, as cmd/oplab does,
// until ctx ends.
func newStream(ctx context.Context) (*trace.Recorder, *stream.Hub) {
	rec := trace.NewRecorder(trace.RecorderOptions{Card: lab.NewFragments().Redraw})
	hub := stream.NewHub(rec, stream.HubOptions{})
	go rec.Run(ctx)
	go hub.Run(ctx)
	return rec, hub
}

// sinks is the controller's Sink and Observer: a step or object in a
// class's namespace goes to that class's recorder, the rest to the shared
// server's, and a step of no namespace (the controller's own) to all. A
// class has its own recorder because the classroom's state (the presenter,
// "send everyone to", the timer) is published on it to every page it
// streams to, as each oplab instance on a shared cluster has its own.
type sinks struct {
	mu      sync.Mutex
	shared  *trace.Recorder
	classes map[string]*trace.Recorder // by namespace prefix
}

func (s *sinks) add(prefix string, rec *trace.Recorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.classes[prefix] = rec
}

func (s *sinks) remove(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.classes, prefix)
}

// of is the recorders of namespace ns.
func (s *sinks) of(ns string) []*trace.Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns == "" {
		all := []*trace.Recorder{s.shared}
		for _, rec := range s.classes {
			all = append(all, rec)
		}
		return all
	}
	for prefix, rec := range s.classes {
		if strings.HasPrefix(ns, prefix) {
			return []*trace.Recorder{rec}
		}
	}
	return []*trace.Recorder{s.shared}
}

func (s *sinks) Emit(step controller.Step) {
	for _, rec := range s.of(step.Object.Namespace) {
		rec.Emit(step)
	}
}

func (s *sinks) Observe(event string, ref controller.ObjectRef, obj any) {
	for _, rec := range s.of(ref.Namespace) {
		rec.Observe(event, ref, obj)
	}
}

// browser is the one Chromium the package's browser tests share, started by
// the first tab, so the tests that need only the cluster start none. A tab's
// timeout catches a hang: the longest browser test here takes about a minute
// and a half on a loaded machine, and a hang should cost the suite minutes,
// not a quarter of an hour.
var browser = &browsertest.Browser{Width: 1400, Height: 1000, TabTimeout: 5 * time.Minute}

var (
	shared     *testEnv
	sharedErr  error
	sharedOnce sync.Once
)

func TestMain(m *testing.M) {
	// The code page's sandbox runs this test binary as its child.
	if len(os.Args) == 2 && os.Args[1] == sandbox.ChildArg {
		os.Exit(sandbox.RunChild(os.Stdin, os.Stdout))
	}
	// And the lab's terminal runs it as its kubectl, and that kubectl's
	// diff (web/kubectl).
	if len(os.Args) == 2 && os.Args[1] == kubectl.ChildArg {
		os.Exit(kubectl.RunChild(os.Stdin, os.Stdout))
	}
	if len(os.Args) == 4 && os.Args[3] == kubectl.DiffArg {
		os.Exit(kubectl.RunDiff(os.Args[1], os.Args[2], os.Stdout))
	}
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	browser.Stop()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// needEnv returns the shared environment, skipping the test when the
// control plane is not provisioned (a failure when CI is set).
func needEnv(t testing.TB) *testEnv {
	t.Helper()
	clustertest.Assets(t)
	sharedOnce.Do(func() { shared, sharedErr = startEnv() })
	if sharedErr != nil {
		t.Fatalf("starting the test environment: %v", sharedErr)
	}
	return shared
}

// testLogger writes the server's logs to the cluster log file, so a failing
// test can be read afterwards without flooding the test output.
func testLogger(w *os.File) logr.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(w, prefix, args) }, funcr.Options{Verbosity: 1})
}

func startEnv() (_ *testEnv, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &testEnv{cancel: cancel}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	logFile, err := os.Create(filepath.Join(artifactsDir(), "cluster.log"))
	if err != nil {
		return e, err
	}
	crds, err := controller.CRDs()
	if err != nil {
		return e, err
	}
	if e.cluster, err = cluster.Start(ctx, cluster.Options{Mode: cluster.ModeFull, CRDs: crds, Log: logFile}); err != nil {
		return e, err
	}
	// As cmd/oplab does on the cluster it starts: the learner policies and
	// the learner code's ClusterRole.
	if err := controller.InstallLearnerPolicies(ctx, e.cluster.Config()); err != nil {
		return e, err
	}
	var hub *stream.Hub
	e.recorder, hub = newStream(ctx)
	e.sinks = &sinks{shared: e.recorder, classes: map[string]*trace.Recorder{}}
	opts := controller.DefaultOptions()
	opts.Sink, opts.ResyncPeriod = e.sinks, 10*time.Second
	e.runner = controller.NewRunner(e.cluster.Config(), opts)
	if err := e.runner.Start(ctx); err != nil {
		return e, err
	}
	// oplab's own assembly (cmd/oplab/app), as cmd/oplab runs it.
	content, err := loadCourse()
	if err != nil {
		return e, err
	}
	demos, err := demo.Load("")
	if err != nil {
		return e, err
	}
	e.opts = app.Options{
		Config: e.cluster.Config(), Recorder: e.recorder, Hub: hub, Controller: e.runner, Logger: testLogger(logFile),
		Content: content, Demos: demos,
		InstructorToken: testInstructorToken, KubectlLine: testKubectlLine, LearnerCode: e.runner,
		// The demo tests check what happens, not the room's pace; the
		// roster's, what a reset that cannot finish says, not its minute.
		DemoDwell: demo.MinDwell, ResetWait: resetWait,
	}
	if e.app, err = app.NewWeb(ctx, e.opts); err != nil {
		return e, err
	}
	e.server = e.app.Server()
	go func() { _ = e.app.Run(ctx) }()
	e.http = httptest.NewServer(e.app.Handler()) // 127.0.0.1 only
	e.client, err = client.New(e.cluster.Config(), client.Options{Scheme: mustScheme()})
	return e, err
}

// classes numbers the classes needClass starts.
var classes atomic.Int32

// needClass returns the shared environment with a server of its own: a
// second oplab instance on the shared cluster and controller, with its own
// namespace prefix, as two classes share a cluster (--namespace-prefix).
// Its classroom, presenter, class timer, demo player and roster are its
// own, so a test of what reaches every learner's page (follow mode, "send
// everyone to", a demo's narration, a reset from the roster) calls
// t.Parallel: no other test's page is among those learners. Its learners'
// namespaces go when the test ends.
func needClass(t *testing.T) *testEnv {
	t.Helper()
	return needEnv(t).class(t, nil)
}

// class starts a class's server as needClass does, its options changed
// by set (when not nil) after its prefix is chosen.
func (e *testEnv) class(t *testing.T, set func(*app.Options)) *testEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := *e
	c.opts.NamespacePrefix = fmt.Sprintf("class%d-", classes.Add(1))
	c.recorder, c.opts.Hub = newStream(ctx)
	c.opts.Recorder = c.recorder
	if set != nil {
		set(&c.opts)
	}
	// Registered before the server starts: a restored session's first
	// steps are its class's.
	e.sinks.add(c.opts.NamespacePrefix, c.recorder)
	var err error
	if c.app, err = app.NewWeb(ctx, c.opts); err != nil {
		e.sinks.remove(c.opts.NamespacePrefix)
		cancel()
		t.Fatalf("starting the class's server: %v", err)
	}
	c.server, c.cancel = c.app.Server(), cancel
	done := make(chan struct{})
	go func() { _ = c.app.Run(ctx); close(done) }()
	c.http = httptest.NewServer(c.app.Handler())
	t.Cleanup(func() {
		c.http.Close()
		cancel()
		<-done
		nss := labns.KubeNamespaces{Client: c.client, Prefix: c.opts.NamespacePrefix}
		all, err := nss.List(context.Background())
		if err != nil {
			t.Logf("listing the class's namespaces: %v", err)
		}
		for _, n := range all {
			if err := nss.Delete(context.Background(), n.Name); err != nil {
				t.Logf("deleting the class's namespace %s: %v", n.Name, err)
			}
		}
		e.sinks.remove(c.opts.NamespacePrefix)
	})
	return &c
}

// loadCourse is the compiled-in course, as cmd/oplab loads it at start:
// once for the package.
var loadCourse = sync.OnceValues(learn.LoadContent)

func mustCourse(t testing.TB) *learn.Content {
	t.Helper()
	c, err := loadCourse()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustScheme() *runtime.Scheme {
	s, err := app.NewScheme()
	if err != nil {
		panic(err)
	}
	return s
}

func (e *testEnv) stop() {
	if e.http != nil {
		e.http.Close()
	}
	if e.runner != nil {
		_ = e.runner.Stop()
	}
	e.cancel()
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared cluster:", err)
		}
	}
}

// tab opens a tab in a fresh browser context: its own cookies, hence its own
// lab session and namespace.
func (e *testEnv) tab(t *testing.T) context.Context { return browser.Tab(t) }

// learner is an HTTP client with its own cookie jar: one lab session.
func (e *testEnv) learner(t testing.TB) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.http.URL + "/lab")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	parts := strings.SplitN(b.String(), `data-namespace="`, 2)
	if len(parts) != 2 {
		t.Fatalf("GET /lab: no namespace in the page (status %d)", resp.StatusCode)
	}
	return c, strings.SplitN(parts[1], `"`, 2)[0]
}

// artifactsDir is where screenshots and logs go: $OPLAB_ARTIFACTS, or a
// folder in the temp dir. Never in the source tree.
func artifactsDir() string {
	dir := os.Getenv("OPLAB_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "oplab-artifacts")
	}
	dir = filepath.Join(dir, "web")
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// screenshot saves the whole page as NAME.png in the artifacts dir (when
// browsertest.ScreenshotsWanted).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browsertest.Screenshot(t, ctx, filepath.Join(artifactsDir(), name+".png"))
}

// failedShot saves the whole page as failed-TEST.png in the artifacts dir,
// in CI too: what the page showed when the test gave up.
func failedShot(t *testing.T, ctx context.Context) {
	t.Helper()
	browsertest.FailureScreenshot(t, ctx, filepath.Join(artifactsDir(), "failed-"+strings.ReplaceAll(t.Name(), "/", "-")+".png"))
}

// poll waits until the JavaScript expression is truthy, failing the test
// with what after the deadline.
func poll(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(deadline))); err != nil {
		failedShot(t, ctx)
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// clickEnabled clicks the button sel once the page enables it: Pause and
// Resume are disabled while the pill is redrawn after an answer, and a
// click on a disabled button is lost without a word.
func clickEnabled(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	poll(t, ctx, sel+" enabled", fmt.Sprintf(`(() => { const b = document.querySelector(%q); return !!b && !b.disabled; })()`, sel))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatal(err)
	}
}

func httptestRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(t *testing.T) *http.Request {
	t.Helper()
	return httptest.NewRequest("GET", "/lab", nil).WithContext(t.Context())
}

// cdpCall sends one DevTools command to the tab (chromedp has no action
// for most of them).
func cdpCall[P, R any](cmd cdp.Command[P, R], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}

// do sends req with c and returns the response with its body read whole:
// the one way these tests ask the server something over HTTP.
func do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func get(t testing.TB, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, c, req)
}

// postAccept posts form to u as a page's form does, asking for accept (""
// for a browser's default).
func postAccept(t testing.TB, c *http.Client, u string, form url.Values, accept string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	return do(t, c, req)
}
