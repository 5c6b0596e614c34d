// Package lab serves /lab: the live view of the Database controller at work
// in the learner's own namespace, the forms that change it, the "try it
// live" scenarios, and the export and replay of a recorded timeline.
//
// The page is server-rendered and works without JavaScript: every form
// POSTs and redirects back with its outcome. lab/forms.js enhances it: forms are
// sent with fetch, and the timeline, the loop diagram and the object panels
// follow the /ws stream live.
package lab

import (
	"context"
	"net/http"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// Sessions resolves the caller's lab namespace and carries flash messages.
type Sessions interface {
	Begin(w http.ResponseWriter, r *http.Request) (session.Session, error)
	NamespaceOf(r *http.Request) (string, error)
	SetFlash(r *http.Request, f session.Flash)
	TakeFlash(r *http.Request) *session.Flash
}

// States reads the current view models of a namespace's Databases, and of
// the final snapshots that outlived theirs.
type States interface {
	Databases(ctx context.Context, namespace string) ([]dbview.Database, error)
	Snapshots(ctx context.Context, namespace string) ([]dbview.Snapshot, error)
}

// Controller is what the lab needs of the one shared controller: whether it
// runs at all (only the instructor stops it), and the pause of one
// namespace, which is what a learner's Stop and Start do, so one learner
// never stops another's reconciles.
type Controller interface {
	Running() bool
	PauseNamespace(ns string)
	ResumeNamespace(ns string)
	NamespacePaused(ns string) bool
	// HandedOver is whether the learner's own reconciler (web/code)
	// reconciles ns in place of oplab's: the controller bar says so.
	HandedOver(ns string) bool
}

// Exporter exports a namespace's recorded timeline.
type Exporter interface {
	Export(namespace string) trace.Export
}

// LearnerCode is the code page's copy of a learner's own reconciler
// (web/code), which the export carries and a replay can load back.
type LearnerCode interface {
	// CodeOf returns ns's code, nil when the learner wrote none.
	CodeOf(ns string) *trace.Code
	// ImportPath is where a form posts a source (field "source") to load
	// it into the learner's editor.
	ImportPath() string
	// TestTrace is schedule n of ns's last reconciler test, as an export,
	// with the step where it went wrong; ok is false when there is none.
	TestTrace(ns string, n int) (export []byte, mark uint64, name string, ok bool)
}

// Options configures the Handler.
type Options struct {
	// Records, when set, keeps when the learner set each scenario up, so
	// the server can judge it seen through from their timeline
	// (Scenario.SeenIn).
	Records interface {
		Record(ctx context.Context, ns string, f func(*progress.Record) bool) bool
	}
	Store      Store
	Sessions   Sessions
	States     States
	Controller Controller
	Exporter   Exporter
	// History rebuilds the objects at a step (time travel); nil: the
	// history routes answer 404.
	History History
	// Pitfalls offered; nil means controller.Pitfalls.
	Pitfalls []controller.PitfallInfo
	// MaxDatabases caps the Databases per lab namespace; default 5.
	MaxDatabases int
	// KubectlLine is the kubectl command line the page offers to paste,
	// without a namespace; the page adds the learner's "-n NAMESPACE".
	// Empty: the page shows none.
	KubectlLine string
	// KubeconfigPath is where the learner downloads their own kubeconfig,
	// and KubectlCommand the line to paste once they have; when both are
	// set, the page offers them instead of KubectlLine.
	KubeconfigPath string
	KubectlCommand func(namespace string) string
	// Classroom follows the presenter's lab; nil: nobody can present.
	Classroom Classroom
	// Code adds the learner's own code to the export and lets a replay
	// load a file's code into the editor; nil: no code page.
	Code LearnerCode
	// Terminal puts kubectl in the page (web/kubectl serves it).
	Terminal bool
	// ClientOf tells a request's client address (session.ClientAddress),
	// whose one replay at a time a visitor without a session has; nil:
	// the peer's.
	ClientOf func(*http.Request) string
	Logger   logr.Logger
}

// Handler serves the lab routes.
type Handler struct {
	opts Options
	// creating makes each namespace's count-then-create one step.
	creating nsLocks
}

// New returns the lab handler.
func New(opts Options) *Handler {
	if opts.Pitfalls == nil {
		opts.Pitfalls = controller.Pitfalls
	}
	if opts.MaxDatabases <= 0 {
		opts.MaxDatabases = 5
	}
	if opts.ClientOf == nil {
		opts.ClientOf = session.ClientAddress(nil)
	}
	return &Handler{opts: opts}
}

// Register mounts the lab routes on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /lab", h.page)
	mux.HandleFunc("GET /lab/preview", h.preview)
	mux.HandleFunc("GET /lab/export", h.export)
	mux.HandleFunc("GET /lab/ping", h.ping)
	mux.HandleFunc("GET /lab/history", h.travelAt)
	mux.HandleFunc("GET /lab/history/diff", h.travelDiff)
	mux.HandleFunc("GET /lab/replay/history", h.replayTravelAt)
	mux.HandleFunc("GET /lab/replay/history/diff", h.replayTravelDiff)
	mux.HandleFunc("GET /lab/replay", h.replayForm)
	mux.HandleFunc("POST /lab/replay", h.replay)
	mux.HandleFunc("POST /lab/replay/test/{schedule}", h.replayTest)
	mux.HandleFunc("POST /lab/databases", h.form(h.createDatabase))
	mux.HandleFunc("POST /lab/databases/{name}/edit", h.form(h.editDatabase))
	mux.HandleFunc("POST /lab/databases/{name}/delete", h.form(h.deleteDatabase))
	mux.HandleFunc("POST /lab/databases/{name}/pitfall", h.form(h.setPitfall))
	mux.HandleFunc("POST /lab/databases/{name}/pods", h.form(h.setPods))
	mux.HandleFunc("POST /lab/databases/{name}/finalizers/remove", h.form(h.removeFinalizers))
	mux.HandleFunc("POST /lab/databases/{name}/children/{kind}/delete", h.form(h.deleteChild))
	mux.HandleFunc("POST /lab/databases/{name}/statefulset/scale", h.form(h.scaleStatefulSet))
	mux.HandleFunc("POST /lab/controller/{action}", h.form(h.switchController))
	mux.HandleFunc("POST /lab/scenarios/{scenario}", h.form(h.setupScenario))
	mux.HandleFunc("POST /lab/present", h.present)
}
