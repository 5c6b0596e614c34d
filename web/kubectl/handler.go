package kubectl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/web/session"
)

// Path is where the lab's terminal sends a command.
const Path = "/lab/kubectl"

// ResultMark starts the line the terminal ends each answer with, after
// kubectl's own output: the Result as JSON. (A record separator: kubectl
// prints none of its own.)
const ResultMark = "\x1e"

// maxBody bounds a command and the editor's text.
const maxBody = 256 << 10

// Sessions resolves the caller's lab session and how long it has left.
type Sessions interface {
	Access(r *http.Request) (session.Access, error)
}

// Handler serves POST /lab/kubectl behind the session cookie: a form with
// the command line (command) and the editor's text (stdin). The answer is
// kubectl's output as it comes (text/plain, flushed), then ResultMark and
// the Result; a command the terminal does not run is a 422 saying why.
type Handler struct {
	Runner   *Runner
	Sessions Sessions
	Logger   logr.Logger
}

// Register mounts the route on mux.
func (h Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST "+Path, h.serve)
}

func (h Handler) serve(w http.ResponseWriter, r *http.Request) {
	a, err := h.Sessions.Access(r)
	if errors.Is(err, session.ErrNoSession) {
		http.Error(w, "no lab session: open /lab first", http.StatusForbidden)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, fmt.Sprintf("the command and the editor's text may be %d KiB together: %v", maxBody>>10, err), http.StatusRequestEntityTooLarge)
		return
	}
	cmd, err := Parse(r.PostForm.Get("command"), a.Namespace)
	if err != nil {
		http.Error(w, "not run: "+err.Error(), http.StatusUnprocessableEntity)
		return
	}
	stdin := r.PostForm.Get("stdin")
	if cmd.Stdin && stdin == "" {
		http.Error(w, "not run: -f - reads the editor below, which is empty: write or paste the YAML there", http.StatusUnprocessableEntity)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	timeout := h.Runner.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	_ = rc.SetWriteDeadline(time.Now().Add(timeout + 10*time.Second))
	out := flushing{w: w, rc: rc}
	began := time.Now()
	answered := false
	res, err := h.Runner.Run(r.Context(), a.Namespace, a.Expires, cmd, stdin, out, func() {
		// The answer begins now, before kubectl prints anything: a watch
		// may print nothing for a while, and the page says it runs.
		answered = true
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
	})
	switch {
	case errors.Is(err, ErrBusy):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case errors.Is(err, ErrFull):
		w.Header().Set("Retry-After", "2")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	case err != nil && !answered:
		// No identity could be minted: nothing ran.
		h.Logger.Error(err, "Failed to run a learner's kubectl command", "namespace", a.Namespace, "verb", cmd.Args[0])
		http.Error(w, "not run: "+permission.Explain(err).Error(), http.StatusInternalServerError)
		return
	case err != nil:
		// The process would not start: said in the answer begun.
		h.Logger.Error(err, "Failed to start a learner's kubectl command", "namespace", a.Namespace, "verb", cmd.Args[0])
		res = Result{Exit: -1, Note: "not run: " + err.Error()}
	}
	h.Logger.Info("Ran a learner's kubectl command", "namespace", a.Namespace, "verb", cmd.Args[0], "exit", res.Exit, "note", res.Note,
		"took", time.Since(began).Round(time.Millisecond))
	tail, _ := json.Marshal(res)
	_, _ = out.Write(append([]byte(ResultMark), tail...))
}

// flushing sends each write to the browser at once: a watch's lines are
// read as they come.
type flushing struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (f flushing) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}
