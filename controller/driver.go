package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// A Driver runs one namespace's learner code outside any manager: one
// reconcile at a time, when asked, with a reason. It is how the reconciler
// tester chooses a schedule (which reconcile runs after which user action,
// with which fault), where a manager would choose by watch events and
// timers. Each reconcile is traced as the controller traces one (the same
// wrappers, the same steps), into DriverOptions.Sink; its reads go to the
// API server itself, as the code's own ServiceAccount, so that what a
// reconcile reads is what the schedule says, not what a cache has heard of.
type Driver struct {
	ns string
	t  *tracedReconciler
	ev *eventTracer
	n  atomic.Int64 // reconciles run, for their IDs
}

// DriverOptions configures a Driver.
type DriverOptions struct {
	// Sink receives the trace; nil discards it.
	Sink Sink
	// Clock stamps the steps; nil is the real clock.
	Clock Clock
	// WriteRate paces the code's writes; zero leaves them unpaced (the
	// tester has budgets of its own).
	WriteRate int
	// ImageRegistry is where the engines' images come from, as
	// Options.ImageRegistry.
	ImageRegistry string
	// Around wraps the code's client below the trace: where the tester's
	// faults go in (a crash after a write, a stale read, a conflict).
	Around func(client.Client) client.Client
	// Mapper maps kinds to resources; nil asks the API server once. A
	// tester running many drivers shares one (NewMapper).
	Mapper meta.RESTMapper
}

// NewMapper is a REST mapper for the kinds learner code writes, asking the
// API server cfg names lazily.
func NewMapper(cfg *rest.Config) (meta.RESTMapper, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return apiutil.NewDynamicRESTMapper(cfg, hc)
}

// NewDriver returns a Driver of rec in ns, whose learner-code identity must
// be granted already (Runner.GrantCode).
func NewDriver(cfg *rest.Config, ns string, rec NamespaceReconciler, opts DriverOptions) (*Driver, error) {
	if opts.Sink == nil {
		opts.Sink = DiscardSink{}
	}
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.Mapper == nil {
		m, err := NewMapper(cfg)
		if err != nil {
			return nil, fmt.Errorf("a REST mapper: %w", err)
		}
		opts.Mapper = m
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	reads, err := client.New(codeConfig(cfg, ns), client.Options{Scheme: scheme, Mapper: opts.Mapper})
	if err != nil {
		return nil, fmt.Errorf("a client for the learner code of %s: %w", ns, err)
	}
	gate := newPauseGate()
	gate.handovers.m.Store(ns, rec)
	t := &tracedReconciler{
		tr:      tracer{sink: opts.Sink, clock: opts.Clock},
		book:    newTriggerBook(),
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](backoffBase, backoffMax),
		resync:  30 * time.Second,
		gate:    gate,
	}
	t.code = &codeClients{cfg: cfg, scheme: scheme, mapper: opts.Mapper, reads: reads, book: t.book,
		registry: opts.ImageRegistry, grant: func(context.Context, string) error { return nil },
		rate: opts.WriteRate, around: opts.Around}
	return &Driver{ns: ns, t: t, ev: &eventTracer{book: t.book, tr: t.tr, gate: gate}}, nil
}

// Reconcile runs one reconcile of the Database name, saying why on the
// trace (as a generic event that came through no watch), and returns how
// it ended.
func (d *Driver) Reconcile(ctx context.Context, name, why string) (ctrl.Result, error) {
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: name}}
	d.ev.admit("generic", db, why)
	ctx = context.WithValue(ctx, driverIDKey{}, fmt.Sprintf("%s-%d", d.ns, d.n.Add(1)))
	return d.t.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.ns, Name: name}})
}

// Note puts a step on the driver's trace that no reconcile made: what the
// tester did (a Database created, a child deleted by hand) or found.
func (d *Driver) Note(s Step) { d.t.tr.emit(s) }

// Observe records obj as the tester saw it, for the trace's history.
func (d *Driver) Observe(event string, obj client.Object) {
	d.t.tr.observe(event, ObjectRef{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}, withoutSecretData(obj))
}

// ObserveGone records that the object of kind and name is gone.
func (d *Driver) ObserveGone(kind, name string) {
	d.t.tr.observe("delete", ObjectRef{Kind: kind, Namespace: d.ns, Name: name}, nil)
}
