package web

import (
	"context"
	"net/http"

	"github.com/oplab-dev/oplab/web/challenges"
	"github.com/oplab-dev/oplab/web/kubeconfig"
)

// registerChallenges mounts the challenge pages: they check the learner's
// work with the same direct client, pause and recorder the lab uses.
func (s *Server) registerChallenges(ctx context.Context, mux *http.ServeMux) {
	opts := challenges.Options{
		Set: s.opts.Content.Challenges, Course: s.opts.Content.Course, Client: s.opts.Client, Sessions: s.opts.Sessions, Controller: s.opts.Controller,
		Exporter: s.opts.Recorder, Sink: s.opts.Recorder, KubeconfigPath: kubeconfig.Path, KubectlCommand: kubeconfig.Command, KubeconfigExport: kubeconfig.Export,
		Records: s.records(), Logger: s.opts.Logger.WithName("challenges"),
	}
	if codes := s.codes.Load(); codes != nil {
		opts.Code = codes
	}
	challenges.New(ctx, opts).Register(mux)
}
