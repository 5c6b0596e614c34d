package instructor

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/oplab-dev/oplab/web/session"
)

// Look lets the instructor look over a learner's shoulder: their lab,
// live and read-only, as followers watch the presenter's. Both routes are
// under /instructor, where the instructor's cookie goes, so a learner's
// browser can open neither.
type Look struct {
	// Page renders the lab of namespace read-only, saying whose it is
	// (lab.Handler.LookPage); stream is where its page opens the live
	// stream. Nil: no looking.
	Page func(w http.ResponseWriter, r *http.Request, namespace, who, stream string)
	// Stream is the trace stream of namespace (the hub's handler).
	Stream func(namespace string) http.Handler
}

func (h *Handler) registerLook(mux *http.ServeMux) {
	if h.opts.Look.Page == nil || h.opts.Look.Stream == nil || h.opts.Roster.Learners == nil {
		return
	}
	mux.HandleFunc("GET /instructor/look/{namespace}", h.guard(h.lookPage))
	mux.HandleFunc("GET /instructor/look/{namespace}/ws", h.guard(h.lookStream))
}

// lookURL is the roster's link to a learner's lab.
func lookURL(namespace string) string { return "/instructor/look/" + namespace }

// learner finds the session of the namespace in the path: only a
// learner's namespace can be looked at (not any namespace of the cluster).
func (h *Handler) learner(w http.ResponseWriter, r *http.Request) (session.SessionInfo, bool) {
	ns := r.PathValue("namespace")
	list, err := h.opts.Roster.Learners.List(r.Context())
	if err != nil {
		http.Error(w, "could not read the sessions: "+err.Error(), http.StatusServiceUnavailable)
		return session.SessionInfo{}, false
	}
	i := slices.IndexFunc(list, func(s session.SessionInfo) bool { return s.Namespace == ns })
	if i < 0 {
		http.Error(w, fmt.Sprintf("namespace %q: no learner session has it (it may have ended)", ns), http.StatusNotFound)
		return session.SessionInfo{}, false
	}
	return list[i], true
}

func (h *Handler) lookPage(w http.ResponseWriter, r *http.Request) {
	s, ok := h.learner(w, r)
	if !ok {
		return
	}
	who := Learner{Name: s.Name, Namespace: s.Namespace}.Display()
	h.opts.Logger.Info("Looked at a learner's lab", "namespace", s.Namespace)
	h.opts.Look.Page(w, r, s.Namespace, who, lookURL(s.Namespace)+"/ws")
}

func (h *Handler) lookStream(w http.ResponseWriter, r *http.Request) {
	s, ok := h.learner(w, r)
	if !ok {
		return
	}
	h.opts.Look.Stream(s.Namespace).ServeHTTP(w, r)
}
