package code

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/controller/tester"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/web/httpx"
)

// Test my code: the page runs controller/tester on the code in the editor
// (it need not be running), one test per learner at a time, each schedule
// in a scratch namespace of the learner's own, and keeps the verdict and
// the failed schedules' traces for the lab's replay.

// ScratchNamespaces makes and deletes the scratch namespaces
// (labns.KubeNamespaces).
type ScratchNamespaces interface {
	CreateScratch(ctx context.Context, name, of string) error
	ScratchOf(ctx context.Context, of string) ([]string, error)
	Delete(ctx context.Context, name string) error
}

// CodeIdentity gives a scratch namespace its learner-code identity and
// keeps oplab's controller out of it (controller.Runner).
type CodeIdentity interface {
	GrantCode(ctx context.Context, ns string) error
	Ignore(ns string)
}

// TestOptions configures Test my code; a zero Config: no tester.
type TestOptions struct {
	// Config is oplab's own identity.
	Config     *rest.Config
	Namespaces ScratchNamespaces
	Identity   CodeIdentity
	// MaxTests caps the tests running at once over the server (4);
	// Schedules the schedules running at once over all of them (8).
	MaxTests, Schedules int
	// Deadline bounds one test (5 minutes).
	Deadline      time.Duration
	ImageRegistry string
}

// tests runs learners' tests.
type tests struct {
	opts    TestOptions
	running chan struct{}
	slots   chan struct{}
	log     logr.Logger

	mapperOnce sync.Once
	mapper     meta.RESTMapper
	mapperErr  error
}

func newTests(opts TestOptions, log logr.Logger) *tests {
	if opts.MaxTests <= 0 {
		opts.MaxTests = 4
	}
	if opts.Schedules <= 0 {
		opts.Schedules = 8
	}
	if opts.Deadline <= 0 {
		opts.Deadline = 5 * time.Minute
	}
	return &tests{opts: opts, running: make(chan struct{}, opts.MaxTests), slots: make(chan struct{}, opts.Schedules), log: log}
}

// testRun is a learner's last test.
type testRun struct {
	mu       sync.Mutex
	state    string // running, done, failed
	began    time.Time
	ended    time.Time
	done, of int
	result   tester.Result
	err      string
	cancel   context.CancelFunc
}

// scratch is tester.Scratch for one learner.
type scratch struct {
	t  *tests
	of string
}

func (s scratch) Make(ctx context.Context) (string, error) {
	name := s.of + "-t" + strings.ToLower(rand.Text()[:6])
	// Ignored before it exists: oplab's controller never races the
	// tester's driver there.
	s.t.opts.Identity.Ignore(name)
	if err := s.t.opts.Namespaces.CreateScratch(ctx, name, s.of); err != nil {
		return "", fmt.Errorf("making a scratch namespace for your test: %w", err)
	}
	if err := s.t.opts.Identity.GrantCode(ctx, name); err != nil {
		return "", fmt.Errorf("giving your code its identity in a scratch namespace: %w", err)
	}
	return name, nil
}

func (s scratch) Remove(ns string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.t.opts.Namespaces.Delete(ctx, ns); err != nil {
			s.t.log.Error(err, "Could not delete a test's scratch namespace", "namespace", ns)
		}
	}()
}

// run tests src for the learner of ns, telling progress.
func (t *tests) run(ctx context.Context, ns, src string, newSandbox func() *sandbox.Sandbox, progress func(done, of int)) (tester.Result, error) {
	t.mapperOnce.Do(func() { t.mapper, t.mapperErr = controller.NewMapper(t.opts.Config) })
	if t.mapperErr != nil {
		return tester.Result{}, t.mapperErr
	}
	return tester.Run(ctx, tester.Options{
		Config: t.opts.Config, Mapper: t.mapper, Scratch: scratch{t: t, of: ns}, Slots: t.slots,
		ImageRegistry: t.opts.ImageRegistry, Progress: progress, Logger: t.log.WithValues("namespace", ns),
		Compile: func(ctx context.Context) (tester.Code, error) {
			s := newSandbox()
			if serr := s.Compile(ctx, src); serr != nil {
				return nil, serr
			}
			return s, nil
		},
	})
}

// forget ends ns's test and deletes what is left of its scratch
// namespaces (the session ended).
func (t *tests) forget(ns string, tr *testRun) {
	if tr != nil {
		tr.mu.Lock()
		if tr.cancel != nil {
			tr.cancel()
		}
		tr.mu.Unlock()
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		left, err := t.opts.Namespaces.ScratchOf(ctx, ns)
		if err != nil {
			t.log.Error(err, "Could not list an ended session's scratch namespaces", "namespace", ns)
			return
		}
		for _, s := range left {
			if err := t.opts.Namespaces.Delete(ctx, s); err != nil {
				t.log.Error(err, "Could not delete an ended session's scratch namespace", "namespace", s)
			}
		}
	}()
}

// testView is what GET /code/test answers.
type testView struct {
	// State is none (never tested), running, done or failed (the tester
	// itself failed: Error says why; not a verdict on the code).
	State     string           `json:"state"`
	Passed    bool             `json:"passed"`
	Schedules int              `json:"schedules"`
	Findings  []tester.Finding `json:"findings"`
	Progress  *progressView    `json:"progress,omitempty"`
	TookMs    int64            `json:"tookMs,omitempty"`
	Error     string           `json:"error,omitempty"`
}

type progressView struct {
	Done int `json:"done"`
	Of   int `json:"of"`
}

func (tr *testRun) view() testView {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	v := testView{State: tr.state, Findings: []tester.Finding{}}
	switch tr.state {
	case "running":
		v.Progress = &progressView{Done: tr.done, Of: tr.of}
	case "done":
		v.Passed, v.Schedules, v.Findings = tr.result.Passed, tr.result.Schedules, tr.result.Findings
		if v.Findings == nil {
			v.Findings = []tester.Finding{}
		}
		v.TookMs = tr.ended.Sub(tr.began).Milliseconds()
	case "failed":
		v.Error = tr.err
	}
	return v
}

// startTest is POST /code/test: the code is compiled as Run compiles it
// (a compile error answers as Run's does), then tested in the background:
// 202, and GET /code/test tells how it goes.
func (h *Handler) startTest(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if h.tests == nil {
		http.Error(w, "this oplab runs no reconciler tests", http.StatusNotFound)
		return
	}
	src, err := readSource(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l := h.learnerOf(ns)
	l.mu.Lock()
	if tr := l.test; tr != nil && tr.view().State == "running" {
		l.mu.Unlock()
		httpx.JSON(w, http.StatusConflict, map[string]string{"error": fmt.Sprintf(
			"a test of your code is running already (started %s ago): wait for its verdict", time.Since(tr.began).Round(time.Second))})
		return
	}
	l.source = src
	l.mu.Unlock()
	// Compiled as Run compiles it, in a child of its own: the same errors.
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	sb := h.opts.NewSandbox()
	serr := sb.Compile(ctx, src)
	sb.Close()
	if serr != nil {
		httpx.JSON(w, http.StatusOK, runView{Running: h.opts.Controller.HandedOver(ns), Error: serr})
		return
	}
	select {
	case h.tests.running <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "30")
		httpx.JSON(w, http.StatusServiceUnavailable, map[string]string{"error": fmt.Sprintf(
			"%d learners' tests are running already, the most this server runs at once: try again in a minute", h.tests.opts.MaxTests)})
		return
	}
	tctx, tcancel := context.WithTimeout(context.Background(), h.tests.opts.Deadline)
	tr := &testRun{state: "running", began: time.Now(), cancel: tcancel}
	l.mu.Lock()
	l.test = tr
	l.mu.Unlock()
	h.opts.Logger.Info("Testing learner code", "namespace", ns)
	go func() {
		defer func() { <-h.tests.running }()
		defer tcancel()
		res, err := h.tests.run(tctx, ns, src, h.opts.NewSandbox, func(done, of int) {
			tr.mu.Lock()
			tr.done, tr.of = done, of
			tr.mu.Unlock()
		})
		tr.mu.Lock()
		tr.ended = time.Now()
		if err != nil {
			tr.state, tr.err = "failed", testFailure(err)
		} else {
			tr.state, tr.result = "done", res
		}
		tr.mu.Unlock()
		if err != nil {
			h.opts.Logger.Error(err, "A test of learner code failed", "namespace", ns)
			return
		}
		// (l's lock after tr's is let go: startTest takes them the other
		// way round.)
		l.mu.Lock()
		l.verdict = tr
		l.mu.Unlock()
		h.opts.Logger.Info("Tested learner code", "namespace", ns, "passed", res.Passed, "schedules", res.Schedules,
			"findings", len(res.Findings), "took", res.Took.Round(time.Millisecond))
	}()
	httpx.JSON(w, http.StatusAccepted, testView{State: "running", Findings: []tester.Finding{}, Progress: &progressView{}})
}

// testFailure says why the tester itself could not finish.
func testFailure(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "the test ran past its deadline and was stopped; try again"
	}
	return "the tester could not finish: " + err.Error()
}

// testStatus is GET /code/test.
func (h *Handler) testStatus(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	l := h.learnerOf(ns)
	l.mu.Lock()
	tr := l.test
	l.mu.Unlock()
	if tr == nil {
		httpx.JSON(w, http.StatusOK, testView{State: "none", Findings: []tester.Finding{}})
		return
	}
	httpx.JSON(w, http.StatusOK, tr.view())
}

// TestTrace is the export of ns's last test's schedule n, for the lab's
// replay, and the step to mark in it; ok is false when there is none.
func (h *Handler) TestTrace(ns string, n int) (export []byte, mark uint64, name string, ok bool) {
	h.mu.Lock()
	l, found := h.learners[ns]
	h.mu.Unlock()
	if !found {
		return nil, 0, "", false
	}
	l.mu.Lock()
	tr := l.test
	l.mu.Unlock()
	if tr == nil {
		return nil, 0, "", false
	}
	tr.mu.Lock()
	trace := tr.result.Traces[n]
	tr.mu.Unlock()
	if trace == nil {
		return nil, 0, "", false
	}
	b, err := exportOf(trace)
	if err != nil {
		h.opts.Logger.Error(err, "Could not export a test's trace", "namespace", ns, "schedule", n)
		return nil, 0, "", false
	}
	return b, uint64(trace.Marked), "test schedule " + strconv.Itoa(n) + ": " + trace.Name, true
}

// exportOf makes a schedule's trace a lab export, through a recorder of
// its own (the same encoding and history the live lab's export has).
func exportOf(tr *tester.Trace) ([]byte, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := trace.NewRecorder(trace.RecorderOptions{})
	go rec.Run(ctx)
	obs := 0
	for i, s := range tr.Steps {
		for obs < len(tr.Observed) && tr.Observed[obs].After <= i {
			o := tr.Observed[obs]
			rec.Observe(o.Event, o.Ref, o.Object)
			obs++
		}
		s.Seq = 0
		rec.Emit(s)
	}
	e := rec.Export(tr.Namespace)
	return json.Marshal(e)
}

// Testing says the page offers Test my code.
func (h *Handler) Testing() bool { return h.tests != nil }

// Verdict is a learner's latest finished test, for the roster: passed, or
// the patterns of its findings.
type Verdict struct {
	Passed    bool
	Patterns  []string
	Schedules int
	At        time.Time
}

// VerdictOf is ns's latest finished test's verdict; ok is false when the
// learner has finished none.
func (h *Handler) VerdictOf(ns string) (Verdict, bool) {
	h.mu.Lock()
	l, found := h.learners[ns]
	h.mu.Unlock()
	if !found {
		return Verdict{}, false
	}
	l.mu.Lock()
	tr := l.verdict
	l.mu.Unlock()
	if tr == nil {
		return Verdict{}, false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	v := Verdict{Passed: tr.result.Passed, Schedules: tr.result.Schedules, At: tr.ended}
	for _, f := range tr.result.Findings {
		if !slices.Contains(v.Patterns, f.Pattern) {
			v.Patterns = append(v.Patterns, f.Pattern)
		}
	}
	return v, true
}

// TestedSince is ns's latest verdict finished after since, for the code
// exercises' checks; nil when there is none.
func (h *Handler) TestedSince(ns string, since time.Time) *judge.Tested {
	h.mu.Lock()
	l, found := h.learners[ns]
	h.mu.Unlock()
	if !found {
		return nil
	}
	l.mu.Lock()
	tr := l.verdict
	l.mu.Unlock()
	if tr == nil {
		return nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.ended.After(since) {
		return nil
	}
	t := &judge.Tested{Passed: tr.result.Passed, Schedules: tr.result.Schedules}
	for _, f := range tr.result.Findings {
		t.Findings = append(t.Findings, f.Pattern+": "+f.Message)
	}
	return t
}
