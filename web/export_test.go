package web

import "github.com/oplab-dev/oplab/web/stream"

// What the external tests (package web_test: the end-to-end tests on the
// shared cluster and browser, env_test.go) use of the package's insides.

var (
	StaticFiles     = staticFiles
	SecurityHeaders = securityHeaders
	Ready           = ready
)

const MaxStreamsPerSession = maxStreamsPerSession

// CodeOf is the learner's own code the code page keeps for ns; nil when
// there is none, or no code page.
func (s *Server) CodeOf(ns string) *stream.Code {
	if codes := s.codes.Load(); codes != nil {
		return codes.CodeOf(ns)
	}
	return nil
}
