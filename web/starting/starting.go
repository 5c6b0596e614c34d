// Package starting is what oplab serves about its cluster before the
// cluster is up: on a fresh machine the embedded control plane is built
// from source first (11–20 minutes), then started (seconds). Meanwhile the
// course pages are served as usual (web.Starting), and every page that
// needs the cluster (the lab, the code page, the instructor's) says what
// is being built, how many are left and for how long it has run, live,
// and turns into the real page by itself when the cluster is up.
package starting

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/web/httpx"
)

// Phase is how far the cluster is.
type Phase string

const (
	// Building: the control plane's binaries are being compiled.
	Building Phase = "building"
	// Starting: the binaries are there; the embedded cluster is being
	// started.
	Starting Phase = "starting"
	// Connecting: oplab is reaching its API server (a kubeconfig's, or
	// the embedded one's once started) and starting the controller.
	Connecting Phase = "connecting"
	// Failed: building or starting failed; oplab stops.
	Failed Phase = "failed"
	// Ready: the cluster is up and the real pages are served. The
	// starting pages never see it; the real server answers it.
	Ready Phase = "ready"
)

// Status is where the cluster stands, as the pages show it. Whoever runs
// the build hands out a new Status at each step and never changes one.
type Status struct {
	Phase Phase `json:"phase"`
	// Building is the binary being compiled, and Built and Total how many
	// of this run's binaries are done.
	Building string `json:"building,omitempty"`
	Built    int    `json:"built"`
	Total    int    `json:"total"`
	// Done are the binaries done, each with how long it took.
	Done []Built `json:"done,omitempty"`
	// Began is when this phase began.
	Began time.Time `json:"began"`
	// Err says why the phase failed.
	Err string `json:"error,omitempty"`
}

// Built is one binary done.
type Built struct {
	Name string        `json:"name"`
	Took time.Duration `json:"took"`
}

// Sentence says the status in words. The time so far is apart
// (Elapsed): a live region that changed every second would be read out
// every second.
func (s Status) Sentence() string {
	switch s.Phase {
	case Building:
		return fmt.Sprintf("Building the Kubernetes control plane from source: %s, step %d of %d (%d more after it).",
			s.Building, s.Built+1, s.Total, s.Total-s.Built-1)
	case Starting:
		return "Starting the cluster: etcd, the API server, the controller manager, the scheduler and a fake node."
	case Connecting:
		return "Connecting to the Kubernetes API server and starting the controller."
	case Failed:
		return "The cluster could not be made: " + s.Err
	}
	return "The cluster is up."
}

// Elapsed is how long the phase has run as of now, in words.
func (s Status) Elapsed(now time.Time) string { return Duration(now.Sub(s.Began)) + " so far" }

// Duration is d as a person says it: "3 min 12 s", "45 s".
func Duration(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// Handler serves the pages that need the cluster while it is not up.
type Handler struct {
	// Status is the current status; it is called on every request.
	Status func() Status
	Now    func() time.Time
	Logger logr.Logger
}

// Register mounts /readyz, /starting (the status as JSON, which the page
// polls) and, for every page that needs the cluster, the page that says
// how far it is. A websocket or a form post gets 503 and the sentence.
func (h Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.HandleFunc("GET /starting", h.json)
	for _, p := range []struct{ pattern, title string }{
		{"/lab", "Lab"}, {"/lab/", "Lab"}, {"/code", "Your code"}, {"/code/", "Your code"},
		{"/instructor", "Instructor"}, {"/instructor/", "Instructor"},
	} {
		mux.HandleFunc("GET "+p.pattern, h.page(p.title, strings.TrimPrefix(strings.TrimSuffix(p.pattern, "/"), "/")))
	}
	mux.HandleFunc("GET /ws", h.unavailable)
	mux.HandleFunc("POST /", h.unavailable)
}

func (h Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// readyz is 503 until the cluster is up: a readiness probe keeps traffic
// away, and says why.
func (h Handler) readyz(w http.ResponseWriter, _ *http.Request) {
	st := h.Status()
	http.Error(w, "not ready: "+st.Sentence()+" "+st.Elapsed(h.now()), http.StatusServiceUnavailable)
}

func (h Handler) json(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, http.StatusOK, h.Status())
}

// unavailable answers what cannot wait for a page: 503, Retry-After, and
// the sentence.
func (h Handler) unavailable(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Retry-After", "5")
	st := h.Status()
	http.Error(w, "the cluster is not up yet. "+st.Sentence()+" "+st.Elapsed(h.now()), http.StatusServiceUnavailable)
}

func (h Handler) page(title, active string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		v := view{Title: title, Active: active, Status: h.Status(), Now: h.now()}
		httpx.Render(w, r, h.Logger, http.StatusServiceUnavailable, page(v))
	}
}

// view is the page's model.
type view struct {
	Title, Active string
	Status        Status
	Now           time.Time
}

func (v view) Elapsed() string { return v.Status.Elapsed(v.Now) }
