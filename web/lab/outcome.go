package lab

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/session"
)

// outcome is what a form action reports: a message on success, or err.
type outcome struct {
	message string
	err     error
	// scenario, when set, is where the redirect goes back to.
	scenario string
}

// action is a form handler: it gets the caller's namespace (created on
// first use) and the parsed form, and reports an outcome.
type action func(ctx context.Context, ns string, r *http.Request) outcome

// Result is the JSON answer to a form sent by lab/forms.js.
type Result struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	// Field names the input at fault, when the error is about one.
	Field string `json:"field,omitempty"`
	// ControllerRunning is whether the controller reconciles the caller's
	// namespace after the action (it runs and the namespace is not paused),
	// so the page can show it even before the stream reports it.
	ControllerRunning bool `json:"controllerRunning"`
	// Paused is whether the caller's namespace is paused.
	Paused bool `json:"paused"`
}

func (h *Handler) answer(w http.ResponseWriter, r *http.Request, out outcome) {
	res, code := describe(out)
	if ns, err := h.opts.Sessions.NamespaceOf(r); err == nil {
		res.ControllerRunning, res.Paused = h.reconciling(ns), h.opts.Controller.NamespacePaused(ns)
	}
	if out.err != nil {
		h.opts.Logger.V(1).Info("Refused lab action", "path", r.URL.Path, "error", out.err.Error())
	}
	if httpx.WantsJSON(r) {
		httpx.JSON(w, code, res)
		return
	}
	if errors.Is(out.err, session.ErrNoSession) {
		http.Error(w, res.Message, code)
		return
	}
	f := session.Flash{Error: !res.OK, Message: res.Message, Field: res.Field}
	if !res.OK && r.URL.Path == "/lab/databases" {
		f.Form = map[string]string{}
		for _, k := range []string{"name", "engine", "version", "replicas", "pitfall"} {
			f.Form[k] = r.PostForm.Get(k)
		}
	}
	h.opts.Sessions.SetFlash(r, f)
	target := "/lab"
	if out.scenario != "" {
		target += "?scenario=" + url.QueryEscape(out.scenario) + "&ready=1"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// describe turns an outcome into what the learner reads. API errors keep the
// API server's wording, which names the field ("spec.replicas: Invalid
// value: 7: ..."), because reading it is part of the lesson; only a
// permission oplab lacks is reworded, to name it and the fix.
func describe(out outcome) (Result, int) {
	if out.err == nil {
		return Result{OK: true, Message: out.message}, http.StatusOK
	}
	var fe *FieldError
	if errors.As(out.err, &fe) {
		return Result{Message: fe.Error(), Field: fe.Field}, http.StatusUnprocessableEntity
	}
	if errors.Is(out.err, session.ErrNoSession) {
		return Result{Message: out.err.Error()}, http.StatusForbidden
	}
	if timedOut(out.err) {
		return Result{Message: timeoutMessage}, http.StatusGatewayTimeout
	}
	var mbe *http.MaxBytesError
	if errors.As(out.err, &mbe) {
		return Result{Message: out.err.Error()}, http.StatusRequestEntityTooLarge
	}
	if apierrors.IsForbidden(out.err) && strings.Contains(out.err.Error(), quotaUncountedSign) {
		return Result{Message: quotaUncounted + " The API server said: " + out.err.Error()}, http.StatusServiceUnavailable
	}
	var status apierrors.APIStatus
	if errors.As(out.err, &status) {
		res := Result{Message: permission.Explain(out.err).Error()}
		if d := status.Status().Details; d != nil && len(d.Causes) > 0 {
			res.Field = strings.TrimPrefix(d.Causes[0].Field, "spec.")
		}
		code := int(status.Status().Code)
		if code < 400 {
			code = http.StatusBadGateway
		}
		return res, code
	}
	return Result{Message: out.err.Error()}, http.StatusInternalServerError
}

// The API server refuses every create a quota caps while the quota's status
// does not count it yet: on a cluster whose kube-controller-manager started
// before the Database CRD was installed, until its quota controller's next
// full recount (every 5 minutes by default). The learner did nothing wrong.
const (
	quotaUncountedSign = "status unknown for quota"
	quotaUncounted     = "The cluster has not counted the Databases in your namespace yet, so its quota refuses new ones for now: " +
		"the cluster's quota controller recounts within a few minutes of the Database kind being installed. Nothing was created; try again in a minute."
)
