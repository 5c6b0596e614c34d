package code

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/static"
)

// browser is the Chromium this package's browser tests share, started by
// the first of them. A tab may wait minutes: a Run compiles the learner's
// code in a child process, slow on a loaded machine.
var browser = &browsertest.Browser{Width: 1280, Height: 800, TabTimeout: 8 * time.Minute}

// The test binary is also the sandbox child, as oplab is.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == sandbox.ChildArg {
		os.Exit(sandbox.RunChild(os.Stdin, os.Stdout))
	}
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	browser.Stop()
	os.Exit(code)
}

func newTab(t *testing.T) context.Context { return browser.Tab(t) }

// oneNamespace is a session store with one learner.
type oneNamespace string

func (n oneNamespace) NamespaceOf(*http.Request) (string, error) {
	if n == "" {
		return "", errors.New("no session")
	}
	return string(n), nil
}

// Begin is the one learner's session; with none, the join code is asked
// for, as a classroom with a join code does.
func (n oneNamespace) Begin(_ http.ResponseWriter, r *http.Request) (session.Session, error) {
	ns, err := n.NamespaceOf(r)
	if err != nil {
		return session.Session{}, &session.JoinError{}
	}
	return session.Session{Namespace: ns}, nil
}

// fakeController records hand-overs: the page's own behaviour needs no cluster.
type fakeController struct {
	mu   sync.Mutex
	recs map[string]controller.NamespaceReconciler
}

func (f *fakeController) HandOver(ns string, rec controller.NamespaceReconciler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.recs == nil {
		f.recs = map[string]controller.NamespaceReconciler{}
	}
	f.recs[ns] = rec
}

// GrantCode has no cluster to grant in: the page's tests need none.
func (f *fakeController) GrantCode(context.Context, string) error { return nil }

func (f *fakeController) TakeBack(ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.recs, ns)
}

func (f *fakeController) HandedOver(ns string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recs[ns] != nil
}

func childSandbox() *sandbox.Sandbox {
	return &sandbox.Sandbox{Command: func() *exec.Cmd { return exec.Command(os.Args[0], sandbox.ChildArg) }}
}

// pageMux serves the code page for namespace ns, on ctl, with the
// static files its script needs.
func pageMux(ns string, ctl Controller) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS)))
	New(Options{Controller: ctl, Sessions: oneNamespace(ns), NewSandbox: childSandbox}).Register(mux)
	return mux
}

func newServer(t *testing.T, ns string, ctl Controller) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.NewCrossOriginProtection().Handler(pageMux(ns, ctl)))
	t.Cleanup(srv.Close)
	return srv
}

var (
	do         = browsertest.Do
	eventually = browsertest.Eventually
	text       = browsertest.Text
)

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	return browsertest.Eval[T](t, ctx, js)
}

// setSource replaces the editor's text as a paste would.
func setSource(t *testing.T, ctx context.Context, src string) {
	t.Helper()
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const s = document.getElementById("source"); s.value = %q;
		s.dispatchEvent(new Event("input")); return true })()`, src))
}

// typeCode types src into the focused editor as a learner does, line by
// line: each line's leading tabs and its newline are real key presses
// (Tab is the key the editor handles itself; Enter is where an editor would
// auto-indent, and this one must not), and the text between them arrives
// through Chromium's Input.insertText, the path a paste or an input method
// takes, with real beforeinput and input events at the caret. Pressing
// every key of the 10 KB solution took over four minutes: each key is two
// round trips to Chromium, each waiting for a frame.
func typeCode(t *testing.T, ctx context.Context, src string) {
	t.Helper()
	do(t, ctx, chromedp.Focus(chromedp.CSS("#source")))
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		text := strings.TrimLeft(line, "\t")
		if tabs := len(line) - len(text); tabs > 0 {
			do(t, ctx, chromedp.KeyEvent(strings.Repeat(kb.Tab, tabs)))
		}
		if text != "" {
			if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
				t.Fatalf("typing line %d: %v", i+1, err)
			}
		}
		if i < len(lines)-1 {
			do(t, ctx, chromedp.KeyEvent(kb.Enter))
		}
	}
}

// shoot saves the page as a learner sees it, for a person to look at.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browsertest.Screenshot(t, ctx, filepath.Join(browsertest.ArtifactsDir(t, "code"), name))
}

// TestCompileErrorMarksItsLine: a compile error comes back to the editor
// with its line marked in the gutter, and the namespace is not handed over.
func TestCompileErrorMarksItsLine(t *testing.T) {
	ctx := newTab(t)
	ctl := &fakeController{}
	srv := newServer(t, "lab-test", ctl)
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")))
	setSource(t, ctx, "package controller\n\nimport \"os\"\n")
	do(t, ctx, chromedp.Click(chromedp.CSS("#run")))
	eventually(t, ctx, text("#gutter .bad"), "3")
	if got := eval[string](t, ctx, text("#code-error")); !strings.Contains(got, "line 3") || !strings.Contains(got, `"os" is not available`) {
		t.Errorf("error shown: %q", got)
	}
	if ctl.HandedOver("lab-test") {
		t.Error("code that did not compile was handed the namespace")
	}
	shoot(t, ctx, "code-compile-error.png")
}

// Every compile error comes back, as go build lists them, each with its
// line linked and marked in the gutter: a learner fixes them all in one
// pass rather than one Run each.
func TestEveryCompileErrorMarksItsLine(t *testing.T) {
	ctx := newTab(t)
	srv := newServer(t, "lab-test", &fakeController{})
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")))
	src := strings.Replace(strings.Replace(starters.Source("oplab"), "\tvar db dbv1.Database\n", "\tunused := 42\n\tvar db dbv1.Database\n", 1),
		"\treturn ctrl.Result{}, nil\n}\n", "\treturn ctrl.Result{}, undefinedThing\n}\n", 1)
	setSource(t, ctx, src)
	do(t, ctx, chromedp.Click(chromedp.CSS("#run")))
	eventually(t, ctx, `String(document.querySelectorAll("#code-error ol.errors li").length)`, "2")
	got := eval[string](t, ctx, text("#code-error"))
	for _, want := range []string{"Compile errors, 2 of them", "declared and not used: unused", "undefined: undefinedThing"} {
		if !strings.Contains(got, want) {
			t.Errorf("the errors read %q; want %q", got, want)
		}
	}
	if marked := eval[int](t, ctx, `document.querySelectorAll("#gutter .bad").length`); marked != 2 {
		t.Errorf("%d lines marked in the gutter; want both errors' lines", marked)
	}
	shoot(t, ctx, "code-compile-errors.png")
}

// TestTabIndentsAndRunHandsOver: Tab indents in the editor (it does not
// leave it), the code is kept across a reload, and Run hands the namespace
// over; Back takes it back.
func TestTabIndentsAndRunHandsOver(t *testing.T) {
	ctx := newTab(t)
	ctl := &fakeController{}
	srv := newServer(t, "lab-tab", ctl)
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")),
		chromedp.SetValue(chromedp.CSS("#starter"), "oplab"), chromedp.Click(chromedp.CSS("#load")))
	eventually(t, ctx, `String(document.getElementById("source").value.includes("ensureStatefulSet"))`, "true")
	eval[bool](t, ctx, `(() => { const s = document.getElementById("source"); s.focus(); s.setSelectionRange(0, 0); return true })()`)
	do(t, ctx, chromedp.KeyEvent("\t"))
	value := eval[string](t, ctx, `document.getElementById("source").value`)
	if !strings.HasPrefix(value, "\tpackage controller") {
		t.Errorf("after Tab the code starts %q, want a tab before package", value[:min(len(value), 30)])
	}
	if got := eval[string](t, ctx, `document.activeElement.id`); got != "source" {
		t.Errorf("after Tab the focus is on %q, want the editor", got)
	}
	// Undo the tab (Shift+Tab outdents) so the code compiles, then run it.
	do(t, ctx, chromedp.KeyEvent("\t", chromedp.KeyModifiers(chromedp.ModifierShift)))
	value = eval[string](t, ctx, `document.getElementById("source").value`)
	do(t, ctx, chromedp.Click(chromedp.CSS("#run")))
	eventually(t, ctx, `document.getElementById("code").dataset.running`, "true")
	if !ctl.HandedOver("lab-tab") || !strings.Contains(eval[string](t, ctx, text("#code-state")), "Your code") {
		t.Errorf("after Run: handed over %v", ctl.HandedOver("lab-tab"))
	}
	shoot(t, ctx, "code-running.png")
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#source")))
	if kept := eval[string](t, ctx, `document.getElementById("source").value`); kept != value {
		t.Errorf("after a reload the editor holds %d characters, want the %d typed", len(kept), len(value))
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#back")))
	eventually(t, ctx, `document.getElementById("code").dataset.running`, "false")
	if ctl.HandedOver("lab-tab") {
		t.Error("Back did not take the namespace back")
	}
}

// TestTypedSolutionCompilesAndRuns types oplab's reconciler (the reference
// solution of the write-your-own challenge) into the empty editor, as a
// learner would (typeCode: every tab and newline a key press), and runs it: the editor holds exactly what
// was typed (Tab inserts a tab, nothing is auto-indented), it compiles in a
// real child, and the namespace is handed over. That the solution then
// passes the walk-through on the cluster is controller/sandbox's
// TestOplabStarterWalksTheInterview, the write-your-own self-test, and, in
// this page on the full server, web's TestBrowserCodeExercisesSolvedInThePage.
func TestTypedSolutionCompilesAndRuns(t *testing.T) {
	ctx := newTab(t)
	ctl := &fakeController{}
	srv := newServer(t, "lab-typed", ctl)
	solution := starters.Source("oplab")
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")))
	setSource(t, ctx, "")
	typeCode(t, ctx, solution)
	if got := eval[string](t, ctx, `document.getElementById("source").value`); got != solution {
		t.Fatalf("the editor holds %d characters after typing, want the %d typed (first difference at %d)", len(got), len(solution), firstDiff(got, solution))
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#run")))
	eventually(t, ctx, `document.getElementById("code").dataset.running`, "true")
	if got := eval[string](t, ctx, text("#code-error")); got != "" {
		t.Errorf("the typed solution shows an error: %q", got)
	}
	if !ctl.HandedOver("lab-typed") {
		t.Error("the typed solution was not handed the namespace")
	}
	shoot(t, ctx, "code-typed.png")
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestStatusAskedBeforeRunIsNotShownAfterIt: the page polls the code's
// status; a poll asked before Run was pressed answers for the code that ran
// before. Answered after the Run, it must not put that code's error under
// the new code (the exercises test once saw the starter's "already exists"
// shown after the solution's Run). The server holds one poll until the Run
// has answered, then replies with the old code's failure.
func TestStatusAskedBeforeRunIsNotShownAfterIt(t *testing.T) {
	ctx := newTab(t)
	ctl := &fakeController{}
	mux := pageMux("lab-stale", ctl)
	held, release := make(chan struct{}), make(chan struct{})
	var hold sync.Once
	armed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-armed:
			if r.URL.Path == "/code/status" {
				first := false
				hold.Do(func() { first = true })
				if first {
					close(held)
					<-release
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"running":true,"runs":7,"error":{"kind":"error","message":"the code before failed"}}`)
					return
				}
			}
		default:
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")),
		chromedp.SetValue(chromedp.CSS("#starter"), "oplab"), chromedp.Click(chromedp.CSS("#load")))
	eventually(t, ctx, `String(document.getElementById("source").value.includes("ensureStatefulSet"))`, "true")
	close(armed)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the page did not poll its status within a minute")
	}
	answered := eval[int](t, ctx, `performance.getEntriesByType("resource").filter(e => e.name.endsWith("/code/status")).length`)
	do(t, ctx, chromedp.Click(chromedp.CSS("#run")))
	eventually(t, ctx, `String(!document.getElementById("run").disabled && document.getElementById("code").dataset.running === "true")`, "true")
	if got := eval[string](t, ctx, text("#code-error")); got != "" {
		t.Fatalf("after Run, before the held poll answered, the page shows an error: %q", got)
	}
	close(release)
	// The held poll's reply has arrived once its resource entry exists; the
	// page reads it in the tasks that follow, which a timer after it waits out.
	eventually(t, ctx, fmt.Sprintf(`String(performance.getEntriesByType("resource").filter(e => e.name.endsWith("/code/status")).length > %d)`, answered), "true")
	eval[bool](t, ctx, `(setTimeout(() => { window.errorAfter = document.getElementById("code-error").textContent.trim() }, 200), true)`)
	eventually(t, ctx, `String(window.errorAfter !== undefined)`, "true")
	if got := eval[string](t, ctx, `window.errorAfter`); got != "" {
		t.Errorf("the old code's status, asked before Run, is shown after it: %q", got)
	}
}

// TestACompileErrorStaysWhileTheOldCodeRuns: Run with code that does not
// compile leaves the code from before running. Its failures, polled, took
// the compile error's place within 1.5 s and marked their lines in the new
// code. Now the compile error stays, and the page says the code from
// before still runs.
func TestACompileErrorStaysWhileTheOldCodeRuns(t *testing.T) {
	ctx := newTab(t)
	ctl := &fakeController{}
	mux := pageMux("lab-held", ctl)
	var armed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if armed.Load() && r.URL.Path == "/code/status" {
			// The code from before fails on, as a panicking reconciler does.
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"running":true,"runs":9,"error":{"kind":"panic","message":"panic: the old code's failure","line":3}}`)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/code"), chromedp.WaitVisible(chromedp.CSS("#source")),
		chromedp.SetValue(chromedp.CSS("#starter"), "oplab"), chromedp.Click(chromedp.CSS("#load")))
	eventually(t, ctx, `String(document.getElementById("source").value.includes("ensureStatefulSet"))`, "true")
	do(t, ctx, chromedp.Click(chromedp.CSS("#run")))
	eventually(t, ctx, `String(!document.getElementById("run").disabled && document.getElementById("code").dataset.running === "true")`, "true")
	armed.Store(true)
	do(t, ctx, chromedp.SetValue(chromedp.CSS("#source"), "package controller\n\nfunc (\n"), chromedp.Click(chromedp.CSS("#run")))
	eventually(t, ctx, `String(document.getElementById("code-error").textContent.startsWith("Compile error"))`, "true")
	polled := eval[int](t, ctx, `performance.getEntriesByType("resource").filter(e => e.name.endsWith("/code/status")).length`)
	eventually(t, ctx, fmt.Sprintf(`String(performance.getEntriesByType("resource").filter(e => e.name.endsWith("/code/status")).length > %d)`, polled+1), "true")
	eval[bool](t, ctx, `(setTimeout(() => { window.errorAfter = document.getElementById("code-error").textContent.trim() }, 200), true)`)
	eventually(t, ctx, `String(window.errorAfter !== undefined)`, "true")
	if got := eval[string](t, ctx, `window.errorAfter`); !strings.HasPrefix(got, "Compile error") || strings.Contains(got, "old code") {
		t.Errorf("two polls after a Run that did not compile, the page shows %q; want the compile error still", got)
	}
	if got := eval[string](t, ctx, text("#code-state")); !strings.Contains(got, "from before still reconciles") {
		t.Errorf("the page says %q; want it to say the code from before still runs", got)
	}
}
