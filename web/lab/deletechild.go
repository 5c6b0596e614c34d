package lab

import (
	"context"
	"fmt"
	"net/http"
)

func (h *Handler) deleteChild(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	kind, err := parseChildKind(r.PathValue("kind"))
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.DeleteChild(ctx, ns, name, kind); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Deleted the %s of %s behind the controller's back. Watch the delete event trigger a reconcile that recreates it.", kind, name)}
}

func (h *Handler) scaleStatefulSet(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	n, err := parseReplicas("stsReplicas", r.PostForm.Get("replicas"), 0, 10)
	if err != nil {
		return outcome{err: err}
	}
	if err := h.opts.Store.ScaleStatefulSet(ctx, ns, name, n); err != nil {
		return outcome{err: err}
	}
	return outcome{message: fmt.Sprintf("Scaled the StatefulSet of %s to %d by hand. The controller should set it back to the Database's spec.", name, n)}
}
