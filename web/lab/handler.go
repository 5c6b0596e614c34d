// Package lab serves /lab: the live view of the Database controller at work
// in the learner's own namespace, the forms that change it, the "try it
// live" scenarios, and the export and replay of a recorded timeline.
//
// The page is server-rendered and works without JavaScript: every form
// POSTs and redirects back with its outcome. lab.js enhances it: forms are
// sent with fetch, and the timeline, the loop diagram and the object panels
// follow the /ws stream live.
package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/lab/state"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/stream"
)

// Sessions resolves the caller's lab namespace and carries flash messages.
type Sessions interface {
	Begin(w http.ResponseWriter, r *http.Request) (session.Session, error)
	Namespace(r *http.Request) (string, error)
	NamespaceOf(r *http.Request) (string, error)
	SetFlash(r *http.Request, f session.Flash)
	TakeFlash(r *http.Request) *session.Flash
}

// States reads the current view models of a namespace's Databases, and of
// the final snapshots that outlived theirs.
type States interface {
	Databases(ctx context.Context, namespace string) ([]state.Database, error)
	Snapshots(ctx context.Context, namespace string) ([]state.Snapshot, error)
}

// Controller is the switch that stops and starts the controller.
type Controller interface {
	Start(ctx context.Context) error
	Stop() error
	Running() bool
}

// Exporter exports a namespace's recorded timeline.
type Exporter interface {
	Export(namespace string) stream.Export
}

// Options configures the Handler.
type Options struct {
	Store      Store
	Sessions   Sessions
	States     States
	Controller Controller
	Exporter   Exporter
	// Pitfalls offered; nil means controller.Pitfalls.
	Pitfalls []Pitfall
	// MaxDatabases caps the Databases per lab namespace; default 5.
	MaxDatabases int
	// KubeconfigPath is where the learner downloads their own kubeconfig,
	// and KubectlCommand the line to paste once they have; empty and nil
	// mean the page offers none.
	KubeconfigPath string
	KubectlCommand func(namespace string) string
	Logger         logr.Logger
}

// Handler serves the lab routes.
type Handler struct {
	opts Options
	// base outlives requests: the controller started from a request must
	// keep running after the request is answered.
	base context.Context
	// creating makes each namespace's count-then-create one step.
	creating nsLocks
}

// New returns the lab handler. ctx bounds everything started on a
// learner's behalf (the controller, when started from the page).
func New(ctx context.Context, opts Options) *Handler {
	if opts.Pitfalls == nil {
		for _, p := range controller.Pitfalls {
			opts.Pitfalls = append(opts.Pitfalls, Pitfall{Name: p.Name, Title: p.Title, Description: p.Description})
		}
	}
	if opts.MaxDatabases <= 0 {
		opts.MaxDatabases = 5
	}
	return &Handler{opts: opts, base: ctx}
}

// Register mounts the lab routes on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /lab", h.page)
	mux.HandleFunc("GET /lab/preview", h.preview)
	mux.HandleFunc("GET /lab/export", h.export)
	mux.HandleFunc("GET /lab/ping", h.ping)
	mux.HandleFunc("GET /lab/replay", h.replayForm)
	mux.HandleFunc("POST /lab/replay", h.replay)
	mux.HandleFunc("POST /lab/databases", h.form(h.createDatabase))
	mux.HandleFunc("POST /lab/databases/{name}/edit", h.form(h.editDatabase))
	mux.HandleFunc("POST /lab/databases/{name}/delete", h.form(h.deleteDatabase))
	mux.HandleFunc("POST /lab/databases/{name}/pitfall", h.form(h.setPitfall))
	mux.HandleFunc("POST /lab/databases/{name}/finalizers/remove", h.form(h.removeFinalizers))
	mux.HandleFunc("POST /lab/databases/{name}/children/{kind}/delete", h.form(h.deleteChild))
	mux.HandleFunc("POST /lab/databases/{name}/statefulset/scale", h.form(h.scaleStatefulSet))
	mux.HandleFunc("POST /lab/controller/{action}", h.form(h.switchController))
	mux.HandleFunc("POST /lab/scenarios/{scenario}", h.form(h.setupScenario))
}

// outcome is what a form action reports: a message on success, or err.
type outcome struct {
	message string
	err     error
	// scenario, when set, is where the redirect goes back to.
	scenario string
}

// action is a form handler: it gets the caller's namespace (created on
// first use) and the parsed form, and reports an outcome.
type action func(ctx context.Context, ns string, r *http.Request) outcome

func knownScenario(name string) string {
	if _, ok := FindScenario(name); ok {
		return name
	}
	return ""
}

// Result is the JSON answer to a form sent by lab.js.
type Result struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	// Field names the input at fault, when the error is about one.
	Field string `json:"field,omitempty"`
	// ControllerRunning is the controller's state after the action, so the
	// page can show it even before the stream reports it.
	ControllerRunning bool `json:"controllerRunning"`
}

func (h *Handler) answer(w http.ResponseWriter, r *http.Request, out outcome) {
	res, code := describe(out)
	res.ControllerRunning = h.opts.Controller.Running()
	if out.err != nil {
		h.opts.Logger.V(1).Info("Refused lab action", "path", r.URL.Path, "error", out.err.Error())
	}
	if wantsJSON(r) {
		writeJSON(w, code, res)
		return
	}
	if errors.Is(out.err, session.ErrNoSession) {
		http.Error(w, res.Message, code)
		return
	}
	f := session.Flash{Error: !res.OK, Message: res.Message, Field: res.Field}
	if !res.OK && r.URL.Path == "/lab/databases" {
		f.Form = map[string]string{}
		for _, k := range []string{"name", "engine", "version", "replicas", "pitfall"} {
			f.Form[k] = r.PostForm.Get(k)
		}
	}
	h.opts.Sessions.SetFlash(r, f)
	target := "/lab"
	if out.scenario != "" {
		target += "?scenario=" + url.QueryEscape(out.scenario) + "&ready=1"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// describe turns an outcome into what the learner reads. API errors keep the
// API server's wording, which names the field ("spec.replicas: Invalid
// value: 7: ..."), because reading it is part of the lesson.
func describe(out outcome) (Result, int) {
	if out.err == nil {
		return Result{OK: true, Message: out.message}, http.StatusOK
	}
	var fe *FieldError
	if errors.As(out.err, &fe) {
		return Result{Message: fe.Error(), Field: fe.Field}, http.StatusUnprocessableEntity
	}
	if errors.Is(out.err, session.ErrNoSession) {
		return Result{Message: out.err.Error()}, http.StatusForbidden
	}
	var mbe *http.MaxBytesError
	if errors.As(out.err, &mbe) {
		return Result{Message: out.err.Error()}, http.StatusRequestEntityTooLarge
	}
	var status apierrors.APIStatus
	if errors.As(out.err, &status) {
		res := Result{Message: out.err.Error()}
		if d := status.Status().Details; d != nil && len(d.Causes) > 0 {
			res.Field = strings.TrimPrefix(d.Causes[0].Field, "spec.")
		}
		code := int(status.Status().Code)
		if code < 400 {
			code = http.StatusBadGateway
		}
		return res, code
	}
	return Result{Message: out.err.Error()}, http.StatusInternalServerError
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// create is the one path by which the lab creates a Database: the form and
// the scenarios both go through the per-namespace cap. The count and the
// create happen under the namespace's lock, so concurrent creates cannot
// all count below the cap and all create.
func (h *Handler) create(ctx context.Context, ns string, in CreateInput) error {
	unlock, err := h.creating.lock(ctx, ns)
	if err != nil {
		return err
	}
	defer unlock()
	n, err := h.opts.Store.CountDatabases(ctx, ns)
	if err != nil {
		return err
	}
	if n >= h.opts.MaxDatabases {
		return &FieldError{Field: "name", Message: fmt.Sprintf("your lab already has %d Databases and may hold at most %d: delete one first", n, h.opts.MaxDatabases)}
	}
	return h.opts.Store.CreateDatabase(ctx, ns, in)
}

func (h *Handler) createDatabase(ctx context.Context, ns string, r *http.Request) outcome {
	in, err := parseCreate(r.PostForm, h.opts.Pitfalls)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.create(ctx, ns, in); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Created Database %s: watch its first reconcile.", in.Name)}
}

// pathName reads and checks the {name} of a per-Database route.
func pathName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	return name, validName("name", name)
}

func (h *Handler) editDatabase(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	in, err := parseEdit(r.PostForm)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.EditDatabase(ctx, ns, name, in); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Patched %s: replicas %d, version %s. Watch generation move, then observedGeneration catch up.", name, in.Replicas, orDefault(in.Version))}
}

func orDefault(v string) string {
	if v == "" {
		return "(engine default)"
	}
	return v
}

func (h *Handler) deleteDatabase(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.DeleteDatabase(ctx, ns, name); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Asked to delete %s. Its finalizer holds it until the controller has cleaned up.", name)}
}

func (h *Handler) setPitfall(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	p := strings.TrimSpace(r.PostForm.Get("pitfall"))
	if err := validPitfall("pitfall", p, h.opts.Pitfalls); err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.SetPitfall(ctx, ns, name, p); err != nil {
		return outcome{err: err}
	}
	if p == "" {
		return outcome{message: fmt.Sprintf("Switched pitfalls off for %s.", name)}
	}
	return outcome{message: fmt.Sprintf("Switched the %s pitfall on for %s.", p, name)}
}

func (h *Handler) removeFinalizers(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.RemoveFinalizers(ctx, ns, name); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Removed the finalizers of %s. If it was Terminating it is gone now, and no final snapshot was taken.", name)}
}

func (h *Handler) deleteChild(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	kind, err := parseChildKind(r.PathValue("kind"))
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.DeleteChild(ctx, ns, name, kind); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Deleted the %s of %s behind the controller's back. Watch the delete event trigger a reconcile that recreates it.", kind, name)}
}

func (h *Handler) scaleStatefulSet(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	n, err := parseReplicas("stsReplicas", r.PostForm.Get("replicas"), 0, 10)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.ScaleStatefulSet(ctx, ns, name, n); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Scaled the StatefulSet of %s to %d by hand. The controller should set it back to the Database's spec.", name, n)}
}

func (h *Handler) switchController(_ context.Context, _ string, r *http.Request) outcome {
	c := h.opts.Controller
	switch r.PathValue("action") {
	case "stop":
		if !c.Running() {
			return outcome{message: "The controller is already stopped."}
		}
		if err := c.Stop(); err != nil {
			return outcome{err: fmt.Errorf("stop the controller: %w", err)}
		}
		return outcome{message: "Stopped the controller. Changes now pile up with no one to act on them."}
	case "start":
		if c.Running() {
			return outcome{message: "The controller is already running."}
		}
		if err := c.Start(h.base); err != nil {
			return outcome{err: fmt.Errorf("start the controller: %w", err)}
		}
		return outcome{message: "Started the controller. Its caches sync, then it reconciles every Database: level-triggered, it needs no replay of missed events."}
	}
	return outcome{err: &FieldError{Field: "action", Message: fmt.Sprintf("%q is not a controller action: want start or stop", r.PathValue("action"))}}
}

func (h *Handler) setupScenario(ctx context.Context, ns string, r *http.Request) outcome {
	name := r.PathValue("scenario")
	s, ok := FindScenario(name)
	if !ok {
		return outcome{err: unknownScenario(name)}
	}
	msg, err := s.run(ctx, h, ns)
	return outcome{message: msg, err: err, scenario: s.Name}
}

func unknownScenario(name string) error {
	names := make([]string, len(Scenarios))
	for i, s := range Scenarios {
		names[i] = s.Name
	}
	return &FieldError{Field: "scenario", Message: fmt.Sprintf("unknown scenario %q: want one of %s", name, strings.Join(names, ", "))}
}

// page renders /lab.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	sess, err := h.opts.Sessions.Begin(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	p := Page{
		Namespace: sess.Namespace, ControllerRunning: h.opts.Controller.Running(),
		Pitfalls: h.opts.Pitfalls, Engines: Engines, ChildKinds: ChildKinds, MaxDatabases: h.opts.MaxDatabases,
	}
	if h.opts.KubeconfigPath != "" && h.opts.KubectlCommand != nil {
		p.Kubeconfig, p.KubectlCommand = h.opts.KubeconfigPath, h.opts.KubectlCommand(sess.Namespace)
	}
	for _, s := range Scenarios {
		p.Scenarios = append(p.Scenarios, *s.view(false))
	}
	if f := h.opts.Sessions.TakeFlash(r); f != nil {
		p.Flash = &Flash{Error: f.Error, Message: f.Message, Field: f.Field}
		p.Form = formFrom(func(k string) string { return f.Form[k] })
	}
	q := r.URL.Query()
	if q.Has("preview") {
		p.Form = formFrom(q.Get)
	}
	if p.Form.Name == "" && p.Form.Replicas == "" {
		p.Form = CreateForm{Name: "orders", Engine: "postgres", Replicas: "1"}
	}
	p.Form.Preview, p.Form.PreviewError = previewYAML(sess.Namespace, p.Form, h.opts.Pitfalls)
	if name := q.Get("scenario"); name != "" {
		s, ok := FindScenario(name)
		if ok {
			p.Scenario = s.view(q.Get("ready") == "1")
		} else if p.Flash == nil {
			p.Flash = &Flash{Error: true, Message: unknownScenario(name).Error(), Field: "scenario"}
		}
	}
	p.Databases, err = h.opts.States.Databases(r.Context(), sess.Namespace)
	if err == nil {
		p.Kept, err = h.opts.States.Snapshots(r.Context(), sess.Namespace)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	render(w, r, http.StatusOK, LabPage(p))
}

func formFrom(get func(string) string) CreateForm {
	return CreateForm{Name: get("name"), Engine: get("engine"), Version: get("version"), Replicas: get("replicas"), Pitfall: get("pitfall")}
}

// previewYAML renders the Database the form describes, or says what is wrong.
func previewYAML(ns string, f CreateForm, pitfalls []Pitfall) (string, string) {
	form := url.Values{"name": {f.Name}, "engine": {f.Engine}, "version": {f.Version}, "replicas": {f.Replicas}, "pitfall": {f.Pitfall}}
	in, err := parseCreate(form, pitfalls)
	if err != nil {
		return "", err.Error()
	}
	db := NewDatabase(ns, in)
	meta := map[string]any{"name": db.Name, "namespace": db.Namespace}
	if len(db.Annotations) > 0 {
		meta["annotations"] = db.Annotations
	}
	spec := map[string]any{"engine": in.Engine, "replicas": in.Replicas}
	if in.Version != "" {
		spec["version"] = in.Version
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": db.APIVersion, "kind": db.Kind, "metadata": meta, "spec": spec})
	if err != nil {
		return "", err.Error()
	}
	return string(b), ""
}

// preview answers lab.js's live YAML preview.
func (h *Handler) preview(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		ns = "lab-…"
	}
	y, problem := previewYAML(ns, formFrom(r.URL.Query().Get), h.opts.Pitfalls)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if problem != "" {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(problem))
		return
	}
	_, _ = w.Write([]byte(y))
}

// ping keeps an open lab page's session from going idle: a learner who only
// watches the timeline sends no other requests.
func (h *Handler) ping(w http.ResponseWriter, r *http.Request) {
	if _, err := h.opts.Sessions.NamespaceOf(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func render(w http.ResponseWriter, r *http.Request, code int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := c.Render(r.Context(), w); err != nil {
		_, _ = fmt.Fprintf(w, "<p class=error>render failed: %s</p>", templ.EscapeString(err.Error()))
	}
}
