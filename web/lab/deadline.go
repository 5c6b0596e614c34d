package lab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// actionTimeout bounds each lab action's calls to the API server. A frozen
// etcd (or an API server starved of CPU) otherwise holds a create for as
// long as the clients' own timeouts, 18 s and more, with no word; the
// learner is better served by a clear message well within ten seconds.
const actionTimeout = 8 * time.Second

// timeoutMessage is what a learner reads when an action ran out of time.
// The request may still land once the cluster answers again, so the
// message says to look before trying again.
var timeoutMessage = fmt.Sprintf("The cluster did not answer within %d seconds (its storage, etcd, may be frozen or overloaded), so oplab stopped waiting. "+
	"Your change may not have happened, or may still happen once the cluster answers: look at the timeline and your Databases before trying again.", int(actionTimeout/time.Second))

// withActionDeadline is the context a lab action runs in: the request's,
// cut off after actionTimeout.
func withActionDeadline(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), actionTimeout)
}

// timedOut reports whether err is the action's deadline passing (in the
// client, as a context error, or in the API server, as a timeout status).
func timedOut(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	// Some client paths flatten the context error into text.
	return strings.Contains(err.Error(), context.DeadlineExceeded.Error())
}
