package lab

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/oplab-dev/oplab/controller"
)

// The card's "Pods" switch sets controller.PodsAnnotation on a Database:
// the embedded cluster's fake node then starts its Pods slowly, fails to
// pull their image or crashes them in a loop, so Progressing, Degraded and
// the requeues show what they show on a real cluster. A real kubelet
// ignores the annotation.

// podsModes are the switch's choices besides the default.
func podsModes() []controller.PodsModeInfo { return controller.PodsModes }

// podsDefaultTitle is the switch's label for no annotation.
const podsDefaultTitle = "Ready at once (default)"

func (h *Handler) setPods(ctx context.Context, ns string, r *http.Request) outcome {
	name, err := pathName(r)
	if err != nil {
		return outcome{err: err}
	}
	mode := strings.TrimSpace(r.PostForm.Get("pods"))
	if err := controller.ValidatePodsMode(mode); err != nil {
		return outcome{err: &FieldError{Field: "pods", Message: err.Error()}}
	}
	if err := h.opts.Store.SetPods(ctx, ns, name, mode); err != nil {
		return outcome{err: err}
	}
	if mode == "" {
		return outcome{message: fmt.Sprintf("%s's Pods are made Ready at once again: the controller rolls its StatefulSet to a Pod template without %s.", name, controller.PodsAnnotation)}
	}
	return outcome{message: fmt.Sprintf("Set %s=%s on %s: the controller copies it onto the Pod template, and the StatefulSet replaces its Pods.", controller.PodsAnnotation, mode, name)}
}
