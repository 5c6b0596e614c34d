// Package challenges serves the challenge pages: /challenges lists them, and
// /challenges/{id} shows one with its tasks, which turn done by themselves
// while the learner works in the lab or with their kubectl, or, for a
// question or a find-or-read task, once the learner's answer is judged
// right (POST /challenges/{id}/answer). The page asks
// /challenges/{id}/status (JSON) every 1.5 s and on each message of the
// learner's stream; the server evaluates the checks against the session's
// namespace and trace each time and keeps no progress of its own: the
// browser keeps it in localStorage ("oplab.challenges").
//
// It is a package of its own, not part of web/learn, because it needs what
// the lab needs (the session's namespace, a client of the API server, the
// controller's pause and the trace recorder), while web/learn serves static
// course content and touches no cluster.
package challenges

import (
	"context"
	"errors"
	"fmt"
	"github.com/oplab-dev/oplab/web/join"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// Sessions maps a browser to its lab namespace.
type Sessions interface {
	Begin(w http.ResponseWriter, r *http.Request) (session.Session, error)
	NamespaceOf(r *http.Request) (string, error)
	SetFlash(r *http.Request, f session.Flash)
	TakeFlash(r *http.Request) *session.Flash
}

// Controller pauses and resumes one namespace, as the lab's Stop and Start do.
type Controller interface {
	PauseNamespace(ns string)
	ResumeNamespace(ns string)
	NamespacePaused(ns string) bool
}

// LearnerCode stops a learner's own reconciler in their namespace (the code
// page's Handler).
type LearnerCode interface {
	// Stop reports whether the code ran.
	Stop(ns string) bool
	// TestedSince is ns's latest Test my code verdict finished after
	// since; nil when there is none.
	TestedSince(ns string, since time.Time) *judge.Tested
}

// Exporter exports a namespace's recorded timeline (the stream Recorder).
type Exporter interface {
	Export(namespace string) trace.Export
}

// Records is where the server keeps what its own checks and grading found
// of a learner's work (session.Manager): the roster and the class export
// count it, and nothing a browser says.
type Records interface {
	Record(ctx context.Context, ns string, f func(*progress.Record) bool) bool
	RecordOf(ctx context.Context, ns string) (progress.Record, bool)
}

// Options configures the handler.
type Options struct {
	Set    *judge.Set
	Course *lessons.Course
	// Client reads and writes the learners' namespaces straight on the API
	// server (not a cache), so a check never judges stale state.
	Client     client.Client
	Sessions   Sessions
	Controller Controller
	// Code, when set, is stopped at each Start: the wipe and the starting
	// state are oplab's controller's to reconcile, not the learner's code.
	Code     LearnerCode
	Exporter Exporter
	// Sink, when set, gets a step on the learner's timeline at each Start,
	// so the rows of the Databases before it (often of the same names)
	// read as the past.
	Sink controller.Sink
	// KubeconfigPath and KubectlCommand offer the learner's own kubectl,
	// as the lab does; empty: none is shown.
	KubeconfigPath string
	KubectlCommand func(namespace string) string
	// KubeconfigExport is the line that points a terminal's kubectl at
	// that kubeconfig: the hints write kubectl without --kubeconfig.
	KubeconfigExport func(namespace string) string
	// Records, when set, keeps each learner's Start and the tasks the
	// server found done since it.
	Records Records
	Logger  logr.Logger
}

// Handler serves the challenge pages.
type Handler struct {
	opts     Options
	traces   *traces
	starting starts
}

// starts are the namespaces whose Start is running: a second Start there
// (another tab) would wipe what the first one is preparing, so it is
// refused until the first ends.
type starts struct {
	mu sync.Mutex
	ns map[string]bool
}

// begin claims ns; false means a Start is already running there.
func (s *starts) begin(ns string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns[ns] {
		return false
	}
	if s.ns == nil {
		s.ns = map[string]bool{}
	}
	s.ns[ns] = true
	return true
}

func (s *starts) end(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ns, ns)
}

// New builds the handler and starts the goroutine that keeps each
// namespace's decoded trace, until ctx ends.
func New(ctx context.Context, opts Options) *Handler {
	h := &Handler{opts: opts, traces: newTraces(opts.Exporter)}
	go h.traces.run(ctx)
	return h
}

// Register mounts the pages on mux:
//
//	GET  /challenges              every challenge, with the lesson section it practises
//	GET  /challenges/{id}         one challenge: its text, tasks and hints, the Start form
//	POST /challenges/{id}/start   wipes the learner's Databases and prepares the start
//	GET  /challenges/{id}/status  the tasks' states in the learner's namespace (JSON)
//	POST /challenges/{id}/answer  grades the answer to a question task or an input task
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /challenges", h.list)
	mux.HandleFunc("GET /challenges/{id}", h.page)
	mux.HandleFunc("POST /challenges/{id}/start", h.start)
	mux.HandleFunc("GET /challenges/{id}/status", h.status)
	mux.HandleFunc("POST /challenges/{id}/answer", h.answer)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, listPage(h.listView()))
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	c, ok := h.opts.Set.Get(r.PathValue("id"))
	if !ok {
		httpx.Render(w, r, h.opts.Logger, http.StatusNotFound, notFoundPage(r.PathValue("id"), h.listView()))
		return
	}
	sess, err := h.opts.Sessions.Begin(w, r)
	if errors.Is(err, session.ErrJoin) || errors.Is(err, session.ErrEnded) {
		join.WriteForm(w, r, h.opts.Logger, err)
		return
	}
	if err != nil {
		http.Error(w, "could not start a lab session: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	since, _ := parseSince(q.Get("since"))
	v := h.pageView(c, sess.Namespace, since, q.Get("done"))
	if f := h.opts.Sessions.TakeFlash(r); f != nil && !v.answerFeedback(f.Field, f.Message, f.Error) {
		v.Message = f.Message
	}
	// Without JavaScript the page shows the tasks as they stand when it is
	// loaded; the script keeps them current.
	states, err := h.evaluate(r.Context(), c, sess.Namespace, since, httpx.SplitIDs(q.Get("done"), len(c.Tasks)))
	if err != nil {
		h.opts.Logger.Info("Could not evaluate every check", "challenge", c.ID, "namespace", sess.Namespace, "err", err.Error())
	}
	v.apply(states)
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, challengePage(v))
}

// PhaseStarted is the phase of the controller-type step a Start puts on
// the learner's timeline.
const PhaseStarted = "challenge-started"

// startResult is the JSON answer of a scripted Start.
type startResult struct {
	Started int64  `json:"started"` // Unix milliseconds: the trace judged begins here
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

func (h *Handler) start(w http.ResponseWriter, r *http.Request) {
	c, ok := h.opts.Set.Get(r.PathValue("id"))
	if !ok {
		http.Error(w, fmt.Sprintf("no challenge %q", r.PathValue("id")), http.StatusNotFound)
		return
	}
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, "no lab session: open the challenge page first", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("confirm") != "wipe" {
		h.answerStart(w, r, c, http.StatusBadRequest, startResult{Error: "Start not done: tick the box that says you understand your Databases will be deleted."})
		return
	}
	if !h.starting.begin(ns) {
		h.answerStart(w, r, c, http.StatusConflict, startResult{Error: "Start is already running in your namespace (another tab?): wait for it to finish."})
		return
	}
	defer h.starting.end(ns)
	// The wipe waits for finalizers; it must not be cut short by a learner
	// closing the tab, or the namespace would be left half wiped.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Minute)
	defer cancel()
	// What Start did beyond the wipe, said in its answer.
	var said []string
	started, err := c.Start(ctx, judge.PrepareEnv{
		Namespace: ns, Client: h.opts.Client,
		Pause: func(context.Context) error { h.opts.Controller.PauseNamespace(ns); return nil },
		Resume: func(context.Context) error {
			if h.opts.Code != nil && h.opts.Code.Stop(ns) {
				said = append(said, "Your own code was stopped: oplab's controller reconciles your namespace again.")
			}
			h.opts.Controller.ResumeNamespace(ns)
			return nil
		},
		Said: func(msg string) { said = append(said, msg) },
		Started: func(at time.Time) {
			if h.opts.Sink == nil {
				return
			}
			h.opts.Sink.Emit(controller.Step{
				Time: at, Type: controller.StepController, Phase: PhaseStarted,
				Object:  controller.ObjectRef{Kind: "Challenge", Namespace: ns, Name: c.ID},
				Message: fmt.Sprintf("%q: your namespace was wiped and set up again; the rows below are from before.", c.Title),
			})
		},
	})
	if err != nil {
		h.opts.Logger.Error(err, "Failed to start a challenge", "challenge", c.ID, "namespace", ns)
		h.answerStart(w, r, c, http.StatusInternalServerError, startResult{Error: "Start failed: " + err.Error()})
		return
	}
	if h.opts.Records != nil {
		h.opts.Records.Record(ctx, ns, func(rec *progress.Record) bool { rec.ChallengeStarted(c.ID, started.UnixMilli()); return true })
	}
	h.opts.Logger.Info("Started a challenge", "challenge", c.ID, "namespace", ns)
	h.answerStart(w, r, c, http.StatusOK, startResult{Started: started.UnixMilli(),
		Message: strings.Join(append([]string{"Started: your namespace is set up for this challenge."}, said...), " ")})
}

// answerStart answers the script with JSON, and a plain form post with a
// redirect to the page (which then judges the trace since the start).
func (h *Handler) answerStart(w http.ResponseWriter, r *http.Request, c *judge.Challenge, code int, res startResult) {
	if httpx.WantsJSON(r) {
		httpx.JSON(w, code, res)
		return
	}
	h.opts.Sessions.SetFlash(r, session.Flash{Error: res.Error != "", Message: res.Message + res.Error})
	target := c.URL()
	if res.Started != 0 {
		target += "?since=" + strconv.FormatInt(res.Started, 10)
	}
	http.Redirect(w, r, target+"#start", http.StatusSeeOther)
}

// answerResult is the JSON answer of POST /challenges/{id}/answer.
type answerResult struct {
	Task    string `json:"task"`
	Correct bool   `json:"correct"`
	Detail  string `json:"detail,omitempty"`
	Error   string `json:"error,omitempty"`
}

// answer grades a question task, or judges an input task's typed answer.
// The server keeps no progress: a right answer is remembered by the
// browser, which lists the task as done from then on, as it does the tasks
// its checks found done. The form's own fields are task, choice (one per
// pick) or answer (the typed text), and, for the redirect without
// JavaScript, since and done as the page had them.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request) {
	c, ok := h.opts.Set.Get(r.PathValue("id"))
	if !ok {
		httpx.JSON(w, http.StatusNotFound, answerResult{Error: fmt.Sprintf("no challenge %q", r.PathValue("id"))})
		return
	}
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		httpx.JSON(w, http.StatusForbidden, answerResult{Error: "no lab session: open the challenge page first"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		h.answered(w, r, c, http.StatusBadRequest, answerResult{Error: "answer not read: " + err.Error()})
		return
	}
	task := r.PostForm.Get("task")
	since, err := parseSince(r.PostForm.Get("since"))
	if err != nil {
		h.answered(w, r, c, http.StatusBadRequest, answerResult{Task: task, Error: "Not graded: " + err.Error()})
		return
	}
	// The tasks a question comes after must be done first, as the page
	// shows it: judged the way the status is, from the done list and the
	// checks.
	states, err := h.evaluate(r.Context(), c, ns, since, httpx.SplitIDs(r.PostForm.Get("done"), len(c.Tasks)))
	if err != nil {
		h.opts.Logger.Info("Could not evaluate every check", "challenge", c.ID, "namespace", ns, "err", err.Error())
	}
	if i := slices.IndexFunc(states, func(s judge.TaskState) bool { return s.ID == task }); i >= 0 && states[i].State == judge.StateLocked {
		h.answered(w, r, c, http.StatusConflict, answerResult{Task: task, Error: "Not graded yet: " + states[i].Detail})
		return
	}
	if i := slices.IndexFunc(c.Tasks, func(t judge.Task) bool { return t.ID == task }); i >= 0 && c.Tasks[i].Input != "" {
		h.submitted(w, r, c, ns, since, task)
		return
	}
	var picked []int
	for _, v := range r.PostForm["choice"] {
		i, err := strconv.Atoi(v)
		if err != nil {
			h.answered(w, r, c, http.StatusBadRequest, answerResult{Task: task, Error: fmt.Sprintf("choice %q is not a choice number", v)})
			return
		}
		picked = append(picked, i)
	}
	a, err := c.Answer(task, picked)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, judge.ErrNoTask) {
			code = http.StatusNotFound
		}
		h.answered(w, r, c, code, answerResult{Task: task, Error: "Not graded: " + err.Error()})
		return
	}
	if a.Correct {
		h.verified(r.Context(), c, ns, task, since, false)
	}
	h.answered(w, r, c, http.StatusOK, answerResult{Task: task, Correct: a.Correct, Detail: a.Detail})
}

// verified records task of c as done by the server's own judgement: a
// question it graded, or a typed answer it judged against the cluster
// (cluster is true: the answer holds only for the trace since the Start
// the server recorded). It records nothing when the tasks task comes
// after are not themselves recorded: a done list a browser sent unlocks
// the page, not the grade.
func (h *Handler) verified(ctx context.Context, c *judge.Challenge, ns, task string, since time.Time, cluster bool) {
	if h.opts.Records == nil {
		return
	}
	i := slices.IndexFunc(c.Tasks, func(t judge.Task) bool { return t.ID == task })
	if i < 0 {
		return
	}
	h.opts.Records.Record(ctx, ns, func(rec *progress.Record) bool {
		cr := rec.Challenges[c.ID]
		if cr == nil {
			if cluster {
				return false
			}
			rec.ChallengeStarted(c.ID, 0)
			cr = rec.Challenges[c.ID]
		}
		if cluster && (cr.Started == 0 || cr.Started != since.UnixMilli()) {
			return false
		}
		for _, after := range c.Tasks[i].After {
			if !slices.Contains(cr.Tasks, after) {
				return false
			}
		}
		return rec.TasksDone(c.ID, cr.Started, []string{task})
	})
}

// submitted judges the typed answer to input task task against the
// learner's namespace and trace as they are now.
func (h *Handler) submitted(w http.ResponseWriter, r *http.Request, c *judge.Challenge, ns string, since time.Time, task string) {
	env, err := h.env(r.Context(), ns, since)
	if err != nil {
		h.answered(w, r, c, http.StatusServiceUnavailable, answerResult{Task: task, Error: "Not checked: your trace could not be read: " + err.Error()})
		return
	}
	a, err := c.Submit(r.Context(), env, task, r.PostForm.Get("answer"))
	var bad *judge.InputError
	switch {
	case errors.As(err, &bad):
		h.answered(w, r, c, http.StatusBadRequest, answerResult{Task: task, Error: "Not checked: " + bad.Reason + "."})
	case errors.Is(err, judge.ErrNotStarted):
		h.answered(w, r, c, http.StatusConflict, answerResult{Task: task, Error: "Not checked: " + err.Error() + "."})
	case err != nil:
		h.opts.Logger.Info("Could not judge an answer", "challenge", c.ID, "task", task, "namespace", ns, "err", err.Error())
		h.answered(w, r, c, http.StatusServiceUnavailable, answerResult{Task: task, Error: "Not checked: " + err.Error() + "."})
	default:
		if a.Correct {
			h.verified(r.Context(), c, ns, task, since, true)
		}
		h.answered(w, r, c, http.StatusOK, answerResult{Task: task, Correct: a.Correct, Detail: a.Detail})
	}
}

// answered answers the script with JSON, and a plain form post with a
// redirect to the page: a right answer joins the done list in its address,
// a wrong one (or an error) is shown under the task.
func (h *Handler) answered(w http.ResponseWriter, r *http.Request, c *judge.Challenge, code int, res answerResult) {
	if httpx.WantsJSON(r) {
		httpx.JSON(w, code, res)
		return
	}
	done := httpx.SplitIDs(r.PostForm.Get("done"), len(c.Tasks))
	if res.Correct && !slices.Contains(done, res.Task) {
		done = append(done, res.Task)
	}
	if !res.Correct {
		h.opts.Sessions.SetFlash(r, session.Flash{Error: true, Message: res.Detail + res.Error, Field: res.Task})
	} else if i := slices.IndexFunc(c.Tasks, func(t judge.Task) bool { return t.ID == res.Task }); i >= 0 && c.Tasks[i].Input != "" {
		// An input's verdict depends on the cluster at the time, so a later
		// evaluation cannot say it again: the page shows it once.
		h.opts.Sessions.SetFlash(r, session.Flash{Message: res.Detail, Field: res.Task})
	}
	q := url.Values{}
	if since, err := parseSince(r.PostForm.Get("since")); err == nil && !since.IsZero() {
		q.Set("since", strconv.FormatInt(since.UnixMilli(), 10))
	}
	if len(done) > 0 {
		q.Set("done", strings.Join(done, ","))
	}
	target := c.URL()
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target+"#task-"+res.Task, http.StatusSeeOther)
}

// Status is the JSON of GET /challenges/{id}/status.
type Status struct {
	Tasks  []judge.TaskState `json:"tasks"`
	Done   int               `json:"done"`
	Of     int               `json:"of"`
	Paused bool              `json:"paused"`
	// Verified are the tasks the server itself found done since the
	// Start it recorded: what the instructor's roster counts.
	Verified []string `json:"verified"`
	Error    string   `json:"error,omitempty"`
	// Quieted names the Databases whose looping pitfall (an error loop, a
	// status storm) was switched off as the challenge was found complete:
	// a finished challenge leaves nothing retrying on the timeline.
	Quieted []string `json:"quieted,omitempty"`
}

// status evaluates the challenge in the caller's namespace. since (Unix ms)
// is when the learner pressed Start; done lists the tasks their browser has
// seen done, which stay done.
func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	c, ok := h.opts.Set.Get(r.PathValue("id"))
	if !ok {
		httpx.JSON(w, http.StatusNotFound, Status{Error: fmt.Sprintf("no challenge %q", r.PathValue("id"))})
		return
	}
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		httpx.JSON(w, http.StatusForbidden, Status{Error: "no lab session: reload the page"})
		return
	}
	q := r.URL.Query()
	since, err := parseSince(q.Get("since"))
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, Status{Error: err.Error()})
		return
	}
	states, verified, err := h.judge(r.Context(), c, ns, since, httpx.SplitIDs(q.Get("done"), len(c.Tasks)))
	st := Status{Tasks: states, Of: len(states), Paused: h.opts.Controller.NamespacePaused(ns), Verified: verified}
	if err != nil {
		st.Error = "Some checks could not look: " + err.Error()
	}
	for _, s := range states {
		if s.State == judge.StateDone {
			st.Done++
		}
	}
	if st.Of > 0 && st.Done == st.Of && err == nil {
		st.Quieted = h.quiet(r.Context(), ns)
	}
	httpx.JSON(w, http.StatusOK, st)
}

// quiet switches off, in ns, the pitfalls that keep a Database reconciling
// with no one acting (an error loop, a status storm; a challenge's decoy)
// and the hiding of them, and names those Databases. Once off, there is
// nothing left to switch: the page's next poll costs one list.
func (h *Handler) quiet(ctx context.Context, ns string) []string {
	var dbs dbv1.DatabaseList
	if err := h.opts.Client.List(ctx, &dbs, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []string
	for i := range dbs.Items {
		db := &dbs.Items[i]
		if p := db.Annotations[controller.PitfallAnnotation]; !db.DeletionTimestamp.IsZero() ||
			(p != controller.PitfallNonIdempotentCreate && p != controller.PitfallStatusThrash) {
			continue
		}
		patch := client.MergeFrom(db.DeepCopy())
		delete(db.Annotations, controller.PitfallAnnotation)
		delete(db.Annotations, controller.PitfallHiddenAnnotation)
		if err := h.opts.Client.Patch(ctx, db, patch); err != nil {
			h.opts.Logger.Error(err, "Failed to switch off a finished challenge's pitfall", "namespace", ns, "database", db.Name)
			continue
		}
		out = append(out, db.Name)
	}
	return out
}

// judge evaluates the challenge for the status, and records what the
// server's own checks found done. When since is the Start the server
// recorded, the checks run with only the tasks it already recorded taken
// as done, so a task a browser claims (done) is checked, not believed;
// the tasks found done are recorded. A claimed task the checks do not
// find done still shows done to the learner (a task once done stays done
// on their page), evaluated a second time with the claim, but is not
// recorded. It returns the states and the recorded tasks.
func (h *Handler) judge(ctx context.Context, c *judge.Challenge, ns string, since time.Time, claimed []string) ([]judge.TaskState, []string, error) {
	var rec progress.Record
	if h.opts.Records != nil {
		rec, _ = h.opts.Records.RecordOf(ctx, ns)
	}
	cr := rec.Challenges[c.ID]
	if cr == nil || cr.Started == 0 || cr.Started != since.UnixMilli() {
		states, err := h.evaluate(ctx, c, ns, since, claimed)
		return states, []string{}, err
	}
	states, err := h.evaluate(ctx, c, ns, since, cr.Tasks)
	var done []string
	for _, s := range states {
		if s.State == judge.StateDone {
			done = append(done, s.ID)
		}
	}
	h.opts.Records.Record(ctx, ns, func(rec *progress.Record) bool { return rec.TasksDone(c.ID, cr.Started, done) })
	for _, id := range claimed {
		if !slices.Contains(done, id) {
			states, err = h.evaluate(ctx, c, ns, since, append(slices.Clone(cr.Tasks), claimed...))
			break
		}
	}
	slices.Sort(done)
	return states, append([]string{}, done...), err
}

func (h *Handler) evaluate(ctx context.Context, c *judge.Challenge, ns string, since time.Time, done []string) ([]judge.TaskState, error) {
	env, err := h.env(ctx, ns, since)
	if err != nil {
		return nil, err
	}
	already := map[string]bool{}
	for _, id := range done {
		already[id] = true
	}
	return c.Evaluate(ctx, env, already)
}

// env is what the checks and the input tasks' judges see of namespace ns
// since the learner's Start.
func (h *Handler) env(ctx context.Context, ns string, since time.Time) (judge.Env, error) {
	trace, err := h.traces.steps(ctx, ns, since)
	if err != nil {
		return judge.Env{}, err
	}
	env := judge.Env{Namespace: ns, Client: h.opts.Client, Trace: trace, Paused: h.opts.Controller.NamespacePaused(ns), NotStarted: since.IsZero()}
	if h.opts.Code != nil && !since.IsZero() {
		env.Tested = h.opts.Code.TestedSince(ns, since)
	}
	return env, nil
}

// parseSince reads Unix milliseconds; empty is the zero time (the whole trace).
func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, fmt.Errorf("since %q must be Unix milliseconds", s)
	}
	return time.UnixMilli(ms), nil
}
