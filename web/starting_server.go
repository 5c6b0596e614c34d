package web

import (
	"errors"
	"net/http"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/web/challenges"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/starting"
)

// StartingOptions configures the server oplab runs before its cluster is up.
type StartingOptions struct {
	// Status is where the cluster stands; called on every request.
	Status func() starting.Status
	// AllowedHosts are the host names the server answers to (checkHost).
	AllowedHosts []string
	// Content is the course (learn.LoadContent), required.
	Content *learn.Content
	Logger  logr.Logger
}

// Starting is what oplab serves while its cluster is built and started:
// the course itself (home, lessons, quiz, flashcards, the challenges'
// text), which needs no cluster, and for the pages that do, a page that
// says how far the cluster is and turns into the real one when it is up. It is the same
// site behind the same protections; oplab swaps the full server in once
// app.NewWeb (cmd/oplab/app) returns.
func Starting(opts StartingOptions) (http.Handler, error) {
	if opts.Content == nil {
		return nil, errors.New("starting options: Content is required")
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", StaticFiles()))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	starting.Handler{Status: opts.Status, Logger: opts.Logger.WithName("starting")}.Register(mux)
	learn.Register(mux, opts.Content)
	challenges.Reading{Set: opts.Content.Challenges, Course: opts.Content.Course, Logger: opts.Logger.WithName("challenges"), Waiting: func() (string, string) {
		st := opts.Status()
		return st.Sentence(), string(st.Phase)
	}}.Register(mux)
	return SecurityHeaders(bodyDeadline(checkHost(opts.AllowedHosts, protect(mux)))), nil
}

// Ready answers the starting page's poll once the full server is in:
// its script then loads the real page.
func Ready(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, http.StatusOK, starting.Status{Phase: starting.Ready})
}
