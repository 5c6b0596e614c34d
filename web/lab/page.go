package lab

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/classroom"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/join"
	"github.com/oplab-dev/oplab/web/session"
	"sigs.k8s.io/yaml"
)

// page renders /lab.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	sess, err := h.opts.Sessions.Begin(w, r)
	if errors.Is(err, session.ErrJoin) || errors.Is(err, session.ErrEnded) {
		join.WriteForm(w, r, h.opts.Logger, err)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	p, err := h.pageModel(r, sess.Namespace)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, LabPage(p))
}

// LookPage renders the lab of namespace ns for the instructor, read-only:
// the learner's cards, state and timeline, live from stream, with none of
// the lab's forms shown (and the writes they would post go to the
// caller's own namespace in any case: every write route takes the
// namespace from the caller's session, never from the request). who names
// the learner on the page. The instructor's routes call it, behind their
// cookie.
func (h *Handler) LookPage(w http.ResponseWriter, r *http.Request, ns, who, stream string) {
	p, err := h.pageModel(r, ns)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	p.Flash, p.Scenario, p.KubectlLine, p.Kubeconfig = nil, nil, "", ""
	p.Look, p.LookStream = who, stream
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, LabPage(p))
}

// pageModel builds the view model of /lab for namespace ns, taking the
// session's flash.
func (h *Handler) pageModel(r *http.Request, ns string) (Page, error) {
	p := Page{
		Namespace: ns, ControllerRunning: h.reconciling(ns),
		Paused: h.opts.Controller.NamespacePaused(ns), YourCode: h.opts.Controller.HandedOver(ns), KubectlLine: kubectlLine(h.opts.KubectlLine, ns),
		Terminal: h.opts.Terminal,
		Pitfalls: h.opts.Pitfalls, Engines: Engines, ChildKinds: ChildKinds, MaxDatabases: h.opts.MaxDatabases,
	}
	// A kubeconfig of the learner's own beats the server's: it reaches only
	// their namespace.
	if h.opts.KubeconfigPath != "" && h.opts.KubectlCommand != nil {
		p.Kubeconfig, p.KubectlLine = h.opts.KubeconfigPath, h.opts.KubectlCommand(ns)
	}
	for _, s := range Scenarios {
		p.Scenarios = append(p.Scenarios, *s.view(false))
	}
	if c, ok := h.opts.Classroom.(interface {
		Timer() (classroom.Timer, bool)
	}); ok {
		if t, ok := c.Timer(); ok {
			p.ClassTimer = t.Label + ": " + classroom.TimerText(t, time.Now())
		}
	}
	if f := h.opts.Sessions.TakeFlash(r); f != nil {
		p.Flash = f
		p.Form = formFrom(func(k string) string { return f.Form[k] })
	}
	q := r.URL.Query()
	p.Projector = q.Get("projector") == "1"
	if q.Has("preview") {
		p.Form = formFrom(q.Get)
		p.Form.Previewing = true
	}
	if p.Form.Name == "" && p.Form.Replicas == "" {
		p.Form = CreateForm{Name: "orders", Engine: "postgres", Replicas: "1", Previewing: p.Form.Previewing}
	}
	p.Form.Preview, p.Form.PreviewError = previewYAML(ns, p.Form, h.opts.Pitfalls)
	if name := q.Get("scenario"); name != "" {
		s, ok := FindScenario(name)
		if ok {
			p.Scenario = s.view(q.Get("ready") == "1")
		} else if p.Flash == nil {
			p.Flash = &session.Flash{Error: true, Message: unknownScenario(name).Error(), Field: "scenario"}
		}
	}
	// Taken before the query: a state the watcher published before it is
	// in the answer (the watcher's one goroutine serves both).
	p.Rendered = time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	var err error
	p.Databases, err = h.opts.States.Databases(r.Context(), ns)
	if err == nil {
		p.Kept, err = h.opts.States.Snapshots(r.Context(), ns)
	}
	return p, err
}

func formFrom(get func(string) string) CreateForm {
	return CreateForm{Name: get("name"), Engine: get("engine"), Version: get("version"), Replicas: get("replicas"), Pitfall: get("pitfall")}
}

// previewYAML renders the Database the form describes, or says what is wrong.
func previewYAML(ns string, f CreateForm, pitfalls []controller.PitfallInfo) (string, string) {
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

// preview answers lab/forms.js's live YAML preview.
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

// kubectlLine is the server's kubectl line scoped to the learner's namespace.
func kubectlLine(line, ns string) string {
	if line == "" {
		return ""
	}
	return line + " -n " + ns
}
