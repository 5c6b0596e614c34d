// Package code is the code page, /code: the learner writes a Database
// reconciler in the browser, and "Run my code" hands their namespace to it
// (controller/sandbox runs it in a child process); "Back to oplab's
// controller" takes the namespace back.
package code

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/oplab-dev/oplab/web/join"
	"github.com/oplab-dev/oplab/web/session"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/web/httpx"
)

// Controller is what the page needs of controller.Runner: giving a
// namespace's learner code its own identity, handing the namespace to the
// code and taking it back.
type Controller interface {
	GrantCode(ctx context.Context, ns string) error
	HandOver(ns string, rec controller.NamespaceReconciler)
	TakeBack(ns string)
	HandedOver(ns string) bool
}

// Sessions resolves the caller's lab namespace.
type Sessions interface {
	Begin(w http.ResponseWriter, r *http.Request) (session.Session, error)
	NamespaceOf(r *http.Request) (string, error)
}

// Options configures the Handler.
type Options struct {
	Controller Controller
	Sessions   Sessions
	// NewSandbox makes a learner's sandbox; nil means a Sandbox that runs
	// the oplab binary itself as the child.
	NewSandbox func() *sandbox.Sandbox
	// MaxRunning caps the namespaces handed to learner code at once (each
	// has a child process); default 40.
	MaxRunning int
	// Tests configures Test my code; without a Config, the page offers
	// none.
	Tests TestOptions
	// Challenges are the course's; the page lists those that start from
	// one of its starting codes (judge.Challenge.Starter), with their
	// tasks checked live. Nil: no list.
	Challenges *judge.Set
	Logger     logr.Logger
}

// Handler serves /code.
type Handler struct {
	opts   Options
	limits string // what one reconcile may use, as the page says
	// exercises are the code challenges as the page lists them.
	exercises []exerciseView

	mu       sync.Mutex
	learners map[string]*learner // namespace → its code and sandbox
	// tests runs Test my code; nil when there is no tester.
	tests *tests
}

// learner is one namespace's code: the last source saved (the session's
// copy, alongside the browser's), its sandbox while it runs, and how its
// last reconcile ended.
type learner struct {
	mu     sync.Mutex
	source string
	// ran is the source last handed the namespace, for the export.
	ran string
	// imported says source was loaded from a replayed export and has not
	// been shown yet: the page then prefers it to the browser's copy.
	imported bool
	sb       *sandbox.Sandbox
	last     *sandbox.SourceError
	runs     int
	lastRun  time.Time
	// test is the learner's last Test my code; verdict the last that
	// finished with one.
	test, verdict *testRun
}

// New returns the handler.
func New(opts Options) *Handler {
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = 40
	}
	if opts.NewSandbox == nil {
		opts.NewSandbox = func() *sandbox.Sandbox { return &sandbox.Sandbox{} }
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	h := &Handler{opts: opts, limits: opts.NewSandbox().Limits(), learners: map[string]*learner{}, exercises: exercisesOf(opts.Challenges)}
	if opts.Tests.Config != nil {
		h.tests = newTests(opts.Tests, opts.Logger.WithName("tester"))
	}
	return h
}

// Register mounts the routes on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /code", h.page)
	mux.HandleFunc("GET /code/starters/{id}", h.starter)
	mux.HandleFunc("GET /code/status", h.status)
	mux.HandleFunc("POST /code/save", h.save)
	mux.HandleFunc("POST /code/run", h.run)
	mux.HandleFunc("POST /code/back", h.back)
	mux.HandleFunc("POST /code/import", h.importSource)
	mux.HandleFunc("POST /code/test", h.startTest)
	mux.HandleFunc("GET /code/test", h.testStatus)
}

// importPath is where a replay's form loads a file's code into the editor.
const importPath = "/code/import"

// ImportPath is where a form posts a source (field "source") to load it
// into the caller's editor (see lab.LearnerCode).
func (h *Handler) ImportPath() string { return importPath }

// CodeOf returns ns's code for the lab's export: the source last kept and
// the source last run; nil when the learner kept and ran none.
func (h *Handler) CodeOf(ns string) *trace.Code {
	h.mu.Lock()
	l, ok := h.learners[ns]
	h.mu.Unlock()
	if !ok {
		return nil
	}
	l.mu.Lock()
	c := &trace.Code{Source: l.source, Ran: l.ran}
	l.mu.Unlock()
	if c.Source == "" && c.Ran == "" {
		return nil
	}
	c.Running = c.Ran != "" && h.opts.Controller.HandedOver(ns)
	return c
}

// importSource loads a posted source (a replayed export's code) into the
// caller's editor and shows it there. It does not run it: the learner
// reads it first and presses Run.
func (h *Handler) importSource(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, "no lab session: open the lab first", http.StatusForbidden)
		return
	}
	// A form encodes a byte in up to three: the limit fits the largest
	// source an export carries.
	r.Body = http.MaxBytesReader(w, r.Body, 3*trace.MaxCodeBytes+4<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, fmt.Sprintf("source: reading the form: %v", err), http.StatusBadRequest)
		return
	}
	src, ok := r.PostForm["source"]
	if !ok || len(src) != 1 {
		http.Error(w, `source: the form needs exactly one field "source"`, http.StatusBadRequest)
		return
	}
	if len(src[0]) > trace.MaxCodeBytes {
		http.Error(w, fmt.Sprintf("source: %d bytes, more than the %d KiB a reconciler may have", len(src[0]), trace.MaxCodeBytes>>10), http.StatusBadRequest)
		return
	}
	if err := trace.CheckCode(trace.Code{Source: src[0]}); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l := h.learnerOf(ns)
	l.mu.Lock()
	l.source, l.imported = src[0], true
	l.mu.Unlock()
	http.Redirect(w, r, "/code", http.StatusSeeOther)
}

// Forget ends ns's code when its session ends: the namespace goes back to
// oplab's controller, the child process stops, and the saved code goes
// with the session (the browser keeps its own copy).
func (h *Handler) Forget(ns string) {
	h.mu.Lock()
	l, ok := h.learners[ns]
	delete(h.learners, ns)
	h.mu.Unlock()
	if h.opts.Controller.HandedOver(ns) {
		h.opts.Controller.TakeBack(ns)
	}
	if !ok {
		return
	}
	l.mu.Lock()
	sb, tr := l.sb, l.test
	l.sb = nil
	l.mu.Unlock()
	if sb != nil {
		go sb.Close()
	}
	if h.tests != nil {
		h.tests.forget(ns, tr)
	}
}

func (h *Handler) learnerOf(ns string) *learner {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.learners[ns]
	if !ok {
		l = &learner{}
		h.learners[ns] = l
	}
	return l
}

// page renders /code. Like the lab, it begins the learner's session (a
// lesson's link may be their first visit), or asks for the join code.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	sess, err := h.opts.Sessions.Begin(w, r)
	if errors.Is(err, session.ErrJoin) || errors.Is(err, session.ErrEnded) {
		join.WriteForm(w, r, h.opts.Logger, err)
		return
	}
	if err != nil {
		http.Error(w, "could not start a lab session: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	ns := sess.Namespace
	l := h.learnerOf(ns)
	l.mu.Lock()
	v := pageView{Namespace: ns, Source: l.source, Imported: l.imported, Running: h.opts.Controller.HandedOver(ns), Starters: starters.All, Limits: h.limits,
		Testing: h.tests != nil, Exercises: h.exercises}
	if l.sb != nil {
		v.Fence = l.sb.Fence()
	}
	l.imported = false
	l.mu.Unlock()
	if v.Source == "" {
		v.Source = starters.Source("skeleton")
	}
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, Page(v))
}

func (h *Handler) starter(w http.ResponseWriter, r *http.Request) {
	src := starters.Source(r.PathValue("id"))
	if src == "" {
		http.Error(w, fmt.Sprintf("no starter %q", r.PathValue("id")), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, src)
}

// statusView is what the page polls: whether the learner's code runs and
// how its last reconcile ended.
type statusView struct {
	Running bool                 `json:"running"`
	Runs    int                  `json:"runs"`
	Error   *sandbox.SourceError `json:"error,omitempty"`
	// Fence is the kernel fence around the running child, in words.
	Fence string `json:"fence,omitempty"`
}

func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	l := h.learnerOf(ns)
	l.mu.Lock()
	v := statusView{Running: h.opts.Controller.HandedOver(ns), Runs: l.runs, Error: l.last}
	if l.sb != nil {
		if f := l.sb.Fence(); len(f) > 0 {
			v.Fence = FenceWords(f)
		}
	}
	l.mu.Unlock()
	httpx.JSON(w, http.StatusOK, v)
}

// maxSource bounds a posted source (the sandbox refuses more than 256 KiB).
const maxSource = 300 << 10

func readSource(w http.ResponseWriter, r *http.Request) (string, error) {
	var in struct {
		Source string `json:"source"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSource)).Decode(&in); err != nil {
		return "", fmt.Errorf("reading the code: %w", err)
	}
	return in.Source, nil
}

func (h *Handler) save(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	src, err := readSource(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l := h.learnerOf(ns)
	l.mu.Lock()
	l.source, l.imported = src, false
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// runView answers Run: compiled and handed over, or the compile error.
type runView struct {
	Running bool                 `json:"running"`
	Error   *sandbox.SourceError `json:"error,omitempty"`
	Fence   string               `json:"fence,omitempty"`
}

func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	src, err := readSource(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !h.opts.Controller.HandedOver(ns) && h.running() >= h.opts.MaxRunning {
		http.Error(w, fmt.Sprintf("%d learners run their own code already, the most this server allows: try again in a while", h.opts.MaxRunning), http.StatusServiceUnavailable)
		return
	}
	l := h.learnerOf(ns)
	l.mu.Lock()
	l.source = src
	sb := l.sb
	l.mu.Unlock()
	fresh := sb == nil
	if fresh {
		sb = h.opts.NewSandbox()
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if serr := sb.Compile(ctx, src); serr != nil {
		httpx.JSON(w, http.StatusOK, runView{Running: h.opts.Controller.HandedOver(ns), Error: serr})
		return
	}
	// The code writes as its own ServiceAccount, never as oplab: without
	// that identity it does not run at all.
	if err := h.opts.Controller.GrantCode(ctx, ns); err != nil {
		if fresh {
			sb.Close()
		}
		h.opts.Logger.Error(err, "Could not give learner code its identity", "namespace", ns)
		http.Error(w, "your code cannot run: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	l.mu.Lock()
	l.sb, l.last, l.runs, l.ran = sb, nil, 0, src
	l.mu.Unlock()
	h.opts.Controller.HandOver(ns, recording{sb: sb, l: l})
	fence := FenceWords(sb.Fence())
	h.opts.Logger.Info("Learner code runs", "namespace", ns, "fence", fence)
	httpx.JSON(w, http.StatusOK, runView{Running: true, Fence: fence})
}

func (h *Handler) back(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	h.Stop(ns)
	httpx.JSON(w, http.StatusOK, runView{Running: false})
}

// Stop gives ns back to oplab's controller and stops the learner's code,
// as "Back to oplab's controller" does; the saved code stays. It reports
// whether the code ran. A challenge's Start calls it: what it sets up is
// for oplab's controller.
func (h *Handler) Stop(ns string) bool {
	ran := h.opts.Controller.HandedOver(ns)
	h.opts.Controller.TakeBack(ns)
	l := h.learnerOf(ns)
	l.mu.Lock()
	sb := l.sb
	l.sb = nil
	l.mu.Unlock()
	if sb != nil {
		// A reconcile still running finishes first: Close waits for it.
		go sb.Close()
	}
	return ran
}

// running counts the sandboxes with a live child: a learner who left stops
// counting once their idle child is stopped (sandbox.DefaultIdleTimeout).
func (h *Handler) running() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.learners {
		l.mu.Lock()
		if l.sb != nil && l.sb.Alive() {
			n++
		}
		l.mu.Unlock()
	}
	return n
}

// recording runs a reconcile in the sandbox and keeps how it ended, for the
// page's status poll (the error's line marks the editor).
type recording struct {
	sb *sandbox.Sandbox
	l  *learner
}

func (rc recording) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	res, err := rc.sb.Reconcile(ctx, c, req)
	se, _ := sandbox.AsSourceError(err)
	if err != nil && se == nil {
		se = &sandbox.SourceError{Kind: "error", Message: err.Error()}
	}
	rc.l.mu.Lock()
	rc.l.runs++
	rc.l.last, rc.l.lastRun = se, time.Now()
	rc.l.mu.Unlock()
	return res, err
}
