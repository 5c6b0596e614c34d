// Package kubeconfig serves a learner's own kubeconfig for download
// (GET /lab/kubeconfig, behind the session cookie) and names the file and
// the kubectl line the pages show. What the kubeconfig grants, and the
// ServiceAccount it is minted for, are controller/labns's (Issuer).
package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/session"
)

// Path is where a learner downloads their kubeconfig.
const Path = "/lab/kubeconfig"

// Sessions resolves the caller's session and how long it has left.
type Sessions interface {
	Access(r *http.Request) (session.Access, error)
}

// Minter mints a learner's kubeconfig (labns.Issuer is the real one).
type Minter interface {
	Issue(ctx context.Context, ns string, until time.Time) (labns.Credentials, error)
}

// Handler serves GET /lab/kubeconfig behind the session cookie.
type Handler struct {
	Sessions Sessions
	Minter   Minter
	Logger   logr.Logger
}

// Register mounts the route on mux.
func (h Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+Path, h.serve)
}

// FileName is the name a learner's kubeconfig downloads as.
func FileName(ns string) string { return "oplab-" + ns + ".kubeconfig" }

// Command is the line a learner pastes once the kubeconfig is downloaded
// to their browser's usual folder.
func Command(ns string) string {
	return "kubectl --kubeconfig ~/Downloads/" + FileName(ns) + " get databases -w"
}

// Export is the line that makes a terminal's kubectl use the downloaded
// kubeconfig, so commands written without --kubeconfig (a challenge's
// hints) reach the learner's namespace and no other cluster.
func Export(ns string) string {
	return "export KUBECONFIG=~/Downloads/" + FileName(ns)
}

func (h Handler) serve(w http.ResponseWriter, r *http.Request) {
	a, err := h.Sessions.Access(r)
	if errors.Is(err, session.ErrNoSession) {
		http.Error(w, "no lab session: open /lab first, then download your kubeconfig from there", http.StatusForbidden)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	creds, err := h.Minter.Issue(r.Context(), a.Namespace, a.Expires)
	if err != nil {
		h.Logger.Error(err, "Failed to make a learner's kubeconfig", "namespace", a.Namespace)
		http.Error(w, fmt.Sprintf("could not make your kubeconfig for namespace %s: %v", a.Namespace, permission.Explain(err)), http.StatusInternalServerError)
		return
	}
	h.Logger.Info("Issued a learner kubeconfig", "namespace", a.Namespace, "expires", creds.Expires)
	// It holds a credential: no cache may keep it (Attachment sees to it).
	w.Header().Set("X-Content-Type-Options", "nosniff")
	httpx.Attachment(w, FileName(a.Namespace), "application/yaml", creds.Kubeconfig)
}
