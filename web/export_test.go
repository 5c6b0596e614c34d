package web

// What the external tests (package web_test: the end-to-end tests on the
// shared cluster and browser, env_test.go) use of the package's insides.

import (
	"github.com/oplab-dev/oplab/web/code"
	"github.com/oplab-dev/oplab/web/lab/state"
	"github.com/oplab-dev/oplab/web/session"
)

var (
	StaticFiles     = staticFiles
	SecurityHeaders = securityHeaders
	Ready           = ready
	NewScheme       = newScheme
)

const MaxStreamsPerSession = maxStreamsPerSession

// Watcher is the lab's state watcher.
func (s *Server) Watcher() *state.Watcher { return s.watcher }

// Sessions is the session table.
func (s *Server) Sessions() *session.Manager { return s.sessions }

// Codes is the code page, nil until mounted.
func (s *Server) Codes() *code.Handler { return s.codes.Load() }
