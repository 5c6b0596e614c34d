package challenges

import (
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/judge"
	"github.com/oplab-dev/oplab/web/httpx"
)

// Reading serves the challenges' text while oplab's cluster is not up
// (web.Starting): the list, and each challenge with its tasks and hints,
// but no Start, namespace or checks, which need the cluster. Each page
// says how far the cluster is and turns live by itself when it is up.
type Reading struct {
	Set    *judge.Set
	Course *lessons.Course
	// Waiting says how far the cluster is, and its phase.
	Waiting func() (sentence, phase string)
	Logger  logr.Logger
}

// yourNamespace stands in the hints for the namespace a learner gets once
// the cluster is up.
const yourNamespace = "&lt;your-namespace&gt;"

// Register mounts GET /challenges and GET /challenges/{id}.
func (rd Reading) Register(mux *http.ServeMux) {
	h := &Handler{opts: Options{Set: rd.Set, Course: rd.Course, Logger: rd.Logger}}
	mux.HandleFunc("GET /challenges", h.list)
	mux.HandleFunc("GET /challenges/{id}", func(w http.ResponseWriter, r *http.Request) {
		c, ok := rd.Set.Get(r.PathValue("id"))
		if !ok {
			httpx.Render(w, r, rd.Logger, http.StatusNotFound, notFoundPage(r.PathValue("id"), h.listView()))
			return
		}
		v := h.pageView(c, yourNamespace, time.Time{}, "")
		v.Waiting, v.WaitingPhase = rd.Waiting()
		w.Header().Set("Cache-Control", "no-store")
		httpx.Render(w, r, rd.Logger, http.StatusOK, challengePage(v))
	})
}
