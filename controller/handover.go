package controller

import (
	"context"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NamespaceReconciler reconciles the Databases of one namespace in place of
// oplab's own reconciler: a learner's code, run in a sandbox. It is given
// the client oplab's reconciler would use, so every call it makes is traced
// the same way, and it must keep to req.Namespace.
type NamespaceReconciler interface {
	Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error)
}

// handovers are the namespaces handed to another reconciler. Like the
// pause, they belong to the Runner and outlast a Stop and Start. The
// requests, their coalescing, the backoff on error and RequeueAfter stay
// the work queue's: only the function a worker calls changes.
type handovers struct {
	m sync.Map // namespace → NamespaceReconciler
}

func (o *handovers) get(ns string) NamespaceReconciler {
	if v, ok := o.m.Load(ns); ok {
		return v.(NamespaceReconciler)
	}
	return nil
}

// HandOver makes rec reconcile the Databases of ns instead of oplab's own
// reconciler, from the next reconcile on, and reconciles every Database of
// ns once, so the new code sees the namespace as it is. The timeline marks
// its reconciles "your code".
func (r *Runner) HandOver(ns string, rec NamespaceReconciler) {
	r.gate.handovers.m.Store(ns, rec)
	r.emit(ns, "handed-over", "your code now reconciles "+ns+"; oplab's controller stands aside")
	r.opts.Logger.Info("Handed namespace to learner code", "namespace", ns)
	r.reconcileNamespace(ns, whyHanded)
}

// TakeBack returns ns to oplab's own reconciler and reconciles every
// Database in it. It is a no-op when ns was not handed over.
func (r *Runner) TakeBack(ns string) {
	if _, ok := r.gate.handovers.m.LoadAndDelete(ns); !ok {
		return
	}
	if cur := r.cur.Load(); cur != nil && cur.code != nil {
		cur.code.forget(ns)
	}
	r.emit(ns, "taken-back", "oplab's controller reconciles "+ns+" again")
	r.opts.Logger.Info("Took namespace back from learner code", "namespace", ns)
	r.reconcileNamespace(ns, whyTakenBack)
}

// Ignore makes the controller leave ns alone for good, as EndNamespace
// does: no event of it traced or queued, no reconcile run. The reconciler
// tester's scratch namespaces are its own Driver's to reconcile, schedule
// by schedule; oplab's controller there would race it.
func (r *Runner) Ignore(ns string) { r.EndNamespace(ns) }

// HandedOver reports whether ns is reconciled by learner code.
func (r *Runner) HandedOver(ns string) bool { return r.gate.handovers.get(ns) != nil }

func (r *Runner) reconcileNamespace(ns, why string) {
	if r.gate.isPaused(ns) {
		return // resuming will
	}
	if cur := r.cur.Load(); cur != nil && cur.synced.Load() {
		go cur.reconcileAll(ns, nil, why, r.opts.Logger)
	}
}

// handedOverReconciler is a NamespaceReconciler bound to its namespace's
// client.
type handedOverReconciler struct {
	rec NamespaceReconciler
	c   client.Client
	err error // the client could not be made: every reconcile fails with it
}

func (o handedOverReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	if o.err != nil {
		return ctrl.Result{}, o.err
	}
	return o.rec.Reconcile(ctx, o.c, req)
}

// reconcilerFor is the reconciler that handles req: the learner's, when its
// namespace is handed over, else oplab's. The trace marks which. The
// learner's gets a client that writes as its own ServiceAccount, never as
// oplab.
func (t *tracedReconciler) reconcilerFor(ctx context.Context, req reconcile.Request, rt *reconcileTrace) reconcile.Reconciler {
	rec := t.gate.handovers.get(req.Namespace)
	if rec == nil {
		return t.inner
	}
	rt.yourCode = true
	if t.code == nil {
		return handedOverReconciler{rec: rec, c: t.client}
	}
	c, err := t.code.get(ctx, req.Namespace)
	return handedOverReconciler{rec: rec, c: c, err: err}
}
