package app

import (
	"context"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/session"
)

// startGuard watches the learners' namespaces for deletes oplab did not
// make (session.Guard) and unblocks the ones it makes; a namespace made
// again is announced on its learner's timeline. A guard that cannot start
// is logged, not fatal: the lab works without it.
func startGuard(ctx context.Context, sessions *session.Manager, opts Options) {
	g, err := session.NewGuard(sessions, opts.Config, goneStep(opts.Recorder))
	if err != nil {
		opts.Logger.Error(err, "Could not watch the lab namespaces for deletes")
		return
	}
	sessions.SetGuard(g)
	go g.Run(ctx)
}

// goneStep tells the learner, on their timeline, that their namespace was
// deleted outside oplab and made again.
func goneStep(sink controller.Sink) func(namespace string) {
	return func(ns string) {
		sink.Emit(controller.Step{
			Time:    time.Now(),
			Type:    controller.StepController,
			Object:  controller.ObjectRef{Kind: "Controller", Namespace: ns, Name: "oplab"},
			Phase:   "namespace-recreated",
			Message: session.GoneMessage,
		})
	}
}
