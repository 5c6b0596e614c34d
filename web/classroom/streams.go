package classroom

import (
	"fmt"
	"net/http"
)

// GlobalOnly is the stream "namespace" of a page that wants only the global
// messages (the classroom state, the controller's start and stop): nothing
// is ever recorded in it, and no Kubernetes namespace can be named so.
const GlobalOnly = "(classroom)"

// Streams wraps the trace stream's handler (stream.Hub.Handler) so that
// /ws?follow=presenter streams the presenter's namespace to a viewer with a
// session of their own (409 when nobody presents), /ws?classroom=1 streams
// only the global messages (the banner and goto on pages without a lab),
// and /ws streams the viewer's own namespace, resolved by own.
func (c *Classroom) Streams(stream func(namespaceOf func(*http.Request) (string, error)) http.Handler, own func(*http.Request) (string, error)) http.Handler {
	h := stream(func(r *http.Request) (string, error) {
		q := r.URL.Query()
		switch {
		case q.Has("follow"):
			if _, err := own(r); err != nil {
				return "", err
			}
			ns, ok := c.Presenting()
			if !ok {
				return "", ErrNotPresenting
			}
			return ns, nil
		case q.Get("classroom") == "1":
			return GlobalOnly, nil
		}
		return own(r)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Has("follow") {
			if f := q.Get("follow"); f != "presenter" {
				http.Error(w, fmt.Sprintf("query parameter follow=%q: the only one to follow is follow=presenter", f), http.StatusBadRequest)
				return
			}
			if _, ok := c.Presenting(); !ok {
				http.Error(w, "follow=presenter: nobody is presenting; the instructor starts with Present on /instructor", http.StatusConflict)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
