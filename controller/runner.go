package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/permission"
)

// RecorderName is the reportingController of the Kubernetes Events the
// controller records on Databases.
const RecorderName = "db.oplab.dev/database-controller"

// Options configures a Runner.
type Options struct {
	// Sink receives the trace; nil means DiscardSink.
	Sink Sink
	// Clock stamps steps and conditions; nil means RealClock.
	Clock Clock
	// ResyncPeriod is how long after a successful reconcile the Database is
	// reconciled again without any event. Zero means 30 s.
	ResyncPeriod time.Duration
	// MaxConcurrentReconciles is the number of workers; zero means 1.
	MaxConcurrentReconciles int
	// QPS and Burst limit the client's requests to the API server; zero
	// means client-go's 5 and 10.
	QPS   float32
	Burst int
	// Logger receives the controller's logs; the zero value discards them.
	Logger logr.Logger
	// Namespaces restricts the controller to these namespaces; empty means
	// all. Tests and benchmarks use it to run controllers side by side.
	Namespaces []string
	// NamespaceSelector, when set, restricts the controller to the
	// Databases of the namespaces whose labels it matches (an oplab
	// instance's, oplab.dev/instance=<name>): another instance's Databases
	// are never reconciled, let alone finalized, by this one. Their
	// Secrets are then watched per namespace (NamespaceCaches), so the
	// controller needs no cluster-wide Secret permission. Nil means every
	// namespace, with a cluster-wide Secret informer (a personal cluster's
	// --all-namespaces).
	NamespaceSelector labels.Selector
	// ImageRegistry, when set, is the registry (and path) the engines'
	// images are pulled from, as "REGISTRY/postgres:16": a mirror for a
	// cluster that cannot reach Docker Hub. Empty means the short names
	// ("postgres:16"), as the node resolves them.
	ImageRegistry string
}

// DefaultOptions are the settings oplab ships: enough client throughput and
// workers that the API server, not the client's rate limiter, sets the pace.
//
// A reconcile of a new Database is a chain of about six sequential API
// writes, each waiting on a busy API server, so the workers spend most of
// their time waiting: enough of them keep the API server busy. More than
// that only adds reconciles that run ahead of the informer cache. The
// figures behind these numbers are in docs/BENCHMARKS.md (BenchmarkAllReady).
func DefaultOptions() Options {
	return Options{
		Sink:                    DiscardSink{},
		Clock:                   RealClock{},
		ResyncPeriod:            30 * time.Second,
		MaxConcurrentReconciles: 32,
		QPS:                     400,
		Burst:                   800,
	}
}

// StockOptions are controller-runtime's stock settings (client QPS 20, burst
// 30, one worker), for comparison in the benchmark.
func StockOptions() Options {
	o := DefaultOptions()
	o.MaxConcurrentReconciles = 1
	o.QPS = 20
	o.Burst = 30
	return o
}

func (o Options) withDefaults() Options {
	if o.Sink == nil {
		o.Sink = DiscardSink{}
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = 30 * time.Second
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 1
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return o
}

// Runner starts and stops the Database controller. Each Start builds a fresh
// manager, with its own cache and client, as a restarted controller process
// would: nothing survives a Stop but what is stored in the API server, and
// which namespaces are paused (PauseNamespace), which is the Runner's own.
type Runner struct {
	cfg  *rest.Config
	opts Options
	gate *pauseGate

	// cur is the manager started last, nil when stopped. Start and Stop
	// swap it with compare-and-swap rather than under a lock, so that
	// Running and the pause API answer at once while a Start waits for its
	// caches or a Stop for the workers to finish.
	cur atomic.Pointer[run]

	// admin is a plain client with oplab's identity, for GrantCode.
	adminOnce sync.Once
	admin     client.Client
	adminErr  error
}

// run is one started manager.
type run struct {
	cancel   context.CancelFunc
	synced   atomic.Bool   // the caches synced: Start succeeded
	stopping atomic.Bool   // Stop has cancelled it
	done     chan struct{} // closed when the manager has returned
	err      error         // the manager's error; read only after done is closed

	cache   cache.Cache
	resumed chan sweepEvent // Databases oplab reconciles of its own accord
	code    *codeClients    // the clients of namespaces handed to learner code
	meter   *queueMeter     // the work queue, counted per namespace
}

// sweep is a Database oplab queues of its own accord, no watch event
// bringing it, and why: its namespace resumed, handed to the learner's
// code, or taken back. The timeline says which.
type sweep struct {
	db  client.Object
	why string
}

type sweepEvent = event.TypedGenericEvent[sweep]

// What each sweep says on the event it brings.
const (
	whyResumed   = "namespace resumed: reconcile every Database in it"
	whyHanded    = "handed to your code: reconcile every Database in it"
	whyTakenBack = "taken back by oplab's controller: reconcile every Database in it"
)

// NewRunner returns a stopped Runner for the cluster cfg points at.
func NewRunner(cfg *rest.Config, opts Options) *Runner {
	return &Runner{cfg: cfg, opts: opts.withDefaults(), gate: newPauseGate()}
}

// Start builds a fresh manager and controller, starts them in a goroutine and
// returns once the caches are synced. ctx bounds only that wait: the
// controller runs until Stop. Start fails if the controller is running,
// starting or stopping.
func (r *Runner) Start(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	cur := &run{cancel: cancel, done: make(chan struct{}), resumed: make(chan sweepEvent, 64)}
	if prev := r.cur.Load(); prev != nil || !r.cur.CompareAndSwap(nil, cur) {
		cancel()
		if prev != nil && prev.stopping.Load() {
			return errors.New("database controller is stopping")
		}
		return errors.New("database controller already running")
	}
	// A child kind oplab may not list or watch would keep the caches from
	// syncing for ever; refusals says which.
	refusals := permission.NewRefusals(r.opts.Logger)
	cur.meter = newQueueMeter(time.Now, r.opts.ResyncPeriod)
	mgr, code, err := newManager(r.cfg, r.opts, r.gate, cur.resumed, cur.meter, refusals.WatchErrorHandler, runCtx.Done(), r.GrantCode)
	if err != nil {
		cancel()
		close(cur.done)
		r.cur.CompareAndSwap(cur, nil)
		return err
	}
	cur.cache, cur.code = mgr.GetCache(), code
	go func() {
		defer close(cur.done)
		if err := mgr.Start(runCtx); err != nil {
			cur.err = err
			r.opts.Logger.Error(err, "Stopped database controller with an error")
		}
	}()

	// Stop waiting for the caches if the manager gives up first (it never
	// starts them when, say, the API server is unreachable).
	syncCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	go func() {
		select {
		case <-cur.done:
			stopWaiting()
		case <-refusals.Refused():
			stopWaiting()
		case <-syncCtx.Done():
		}
	}()
	if !mgr.GetCache().(stoppableCache).Cache.WaitForCacheSync(syncCtx) {
		cancel()
		<-cur.done
		r.cur.CompareAndSwap(cur, nil)
		return fmt.Errorf("starting database controller: caches did not sync: %w", errors.Join(ctx.Err(), cur.err, refusals.Err()))
	}
	cur.synced.Store(true)
	r.emit("", "started", "started")
	r.opts.Logger.Info("Started database controller")
	return nil
}

// Stop cancels the controller and waits until it has fully stopped. It is a
// no-op when the controller is not running.
func (r *Runner) Stop() error {
	cur := r.cur.Load()
	if cur == nil {
		return nil
	}
	cur.stopping.Store(true)
	cur.cancel()
	<-cur.done
	if r.cur.CompareAndSwap(cur, nil) && cur.synced.Load() {
		r.emit("", "stopped", "stopped")
		r.opts.Logger.Info("Stopped database controller")
	}
	return cur.err
}

// Running reports whether the controller is running. It never waits.
func (r *Runner) Running() bool {
	cur := r.cur.Load()
	if cur == nil || !cur.synced.Load() {
		return false
	}
	select {
	case <-cur.done:
		return false
	default:
		return true
	}
}

// PauseNamespace holds reconciles of the Databases in ns: their requests are
// kept, not dropped. Watch events for them still reach the trace, marked
// held. A reconcile already running finishes.
func (r *Runner) PauseNamespace(ns string) {
	if !r.gate.pause(ns) {
		return
	}
	r.emit(ns, "paused", "reconciling paused in "+ns+": requests are held until it resumes")
	r.opts.Logger.Info("Paused namespace", "namespace", ns)
}

// ResumeNamespace releases ns: every Database in ns is reconciled
// (level-triggered: no replay of events).
func (r *Runner) ResumeNamespace(ns string) {
	held, ok := r.gate.resume(ns)
	if !ok {
		return
	}
	r.emit(ns, "resumed", "reconciling resumed in "+ns+": every Database in it is reconciled")
	r.opts.Logger.Info("Resumed namespace", "namespace", ns)
	if cur := r.cur.Load(); cur != nil && cur.synced.Load() {
		go cur.reconcileAll(ns, held, whyResumed, r.opts.Logger)
	}
}

// QueueSample is ns's share of the running controller's work queue and
// reconciles now (queue.go); false when the controller is not running.
func (r *Runner) QueueSample(ns string) (QueueSample, bool) {
	cur := r.cur.Load()
	if cur == nil || cur.meter == nil || !cur.synced.Load() {
		return QueueSample{}, false
	}
	return cur.meter.sample(ns), true
}

// EndNamespace stops reconciling ns for good: its session ended and the
// namespace is about to be deleted with everything in it. Its Databases
// are not finalized (their snapshots would go with the namespace); the
// caller removes the finalizer (labns.KubeNamespaces.ReleaseDatabases).
func (r *Runner) EndNamespace(ns string) { r.gate.end(ns, time.Now()) }

// NamespacePaused reports whether ns is paused.
func (r *Runner) NamespacePaused(ns string) bool { return r.gate.isPaused(ns) }

// reconcileAll queues every Database of ns, saying why, and the keys held
// while it was paused (a Database deleted meanwhile is reconciled too, and finds itself
// gone). It runs in its own goroutine and ends when all are queued or the
// manager stops.
func (cur *run) reconcileAll(ns string, held []types.NamespacedName, why string, log logr.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-cur.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var list dbv1.DatabaseList
	if err := cur.cache.List(ctx, &list, client.InNamespace(ns)); err != nil {
		log.Error(err, "Listed no Databases to resume", "namespace", ns)
	}
	seen := map[types.NamespacedName]bool{}
	objs := make([]client.Object, 0, len(list.Items)+len(held))
	for i := range list.Items {
		seen[client.ObjectKeyFromObject(&list.Items[i])] = true
		objs = append(objs, &list.Items[i])
	}
	for _, k := range held {
		if !seen[k] {
			objs = append(objs, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}})
		}
	}
	for _, obj := range objs {
		select {
		case cur.resumed <- sweepEvent{Object: sweep{db: obj, why: why}}:
		case <-ctx.Done():
			return
		}
	}
}

// emit reports the controller starting or stopping (ns empty: every viewer
// sees it), or one namespace paused or resumed (only that namespace's).
func (r *Runner) emit(ns, phase, msg string) {
	r.opts.Sink.Emit(Step{
		Time: r.opts.Clock.Now(), Type: StepController,
		Object: ObjectRef{Kind: "Controller", Namespace: ns, Name: "database"}, Phase: phase, Message: msg,
	})
}

// newManager builds a manager with nothing but the Database controller: no
// metrics server, no health probes, no leader election.
func newManager(base *rest.Config, opts Options, gate *pauseGate, resumed <-chan sweepEvent, meter *queueMeter, watchErr toolscache.WatchErrorHandlerWithContext, stopping <-chan struct{}, grant func(context.Context, string) error) (ctrl.Manager, *codeClients, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst

	scheme, err := newScheme()
	if err != nil {
		return nil, nil, err
	}
	// The cache holds only the children the controller labelled: not every
	// Secret in the cluster, and not an unlabelled object that happens to
	// have a child's name. The reconciler takes such an object for missing,
	// creates it, hears AlreadyExists, reads it live and adopts it.
	ours, err := labels.NewRequirement(LabelDatabase, selection.Exists, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("building child selector: %w", err)
	}
	labelled := cache.ByObject{Label: labels.NewSelector().Add(*ours)}
	// The Pods the controller watches are its Databases' (labelled by their
	// template), and the Events only the StatefulSets' warnings; neither
	// needs its managedFields in memory.
	pods := cache.ByObject{Label: labelled.Label, Transform: cache.TransformStripManagedFields()}
	warnings := cache.ByObject{
		Field:     fields.SelectorFromSet(fields.Set{"involvedObject.kind": "StatefulSet", "type": corev1.EventTypeWarning}),
		Transform: cache.TransformStripManagedFields(),
	}
	cacheOpts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: labelled, &corev1.Service{}: labelled, &appsv1.StatefulSet{}: labelled,
		&corev1.Pod{}: pods, &corev1.Event{}: warnings,
	}, DefaultWatchErrorHandler: watchErr}
	scoped := opts.NamespaceSelector != nil
	clientOpts := client.Options{}
	if scoped {
		// No cluster-wide Secret informer: the reconciler reads a Secret
		// live in its namespace, and watches come from per-namespace caches.
		for obj := range cacheOpts.ByObject {
			if _, ok := obj.(*corev1.Secret); ok {
				delete(cacheOpts.ByObject, obj)
			}
		}
		cacheOpts.ByObject[&corev1.Namespace{}] = InstanceNamespaces(opts.NamespaceSelector)
		clientOpts.Cache = &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}
	}
	if len(opts.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                 scheme,
		Logger:                 opts.Logger,
		Cache:                  cacheOpts,
		Client:                 clientOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// A restarted controller has the same name as the stopped one.
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(15 * time.Second),
		NewCache: func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, opts)
			return stoppableCache{Cache: c, stopping: stopping}, err
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}

	// The controller's wiring, with the trace, the pause gate and the
	// pitfalls around it, is in wiring.go.
	code, err := setupController(mgr, cfg, opts, gate, resumed, meter, labelled, grant)
	if err != nil {
		return nil, nil, fmt.Errorf("setting up database controller: %w", err)
	}
	informers := []client.Object{&dbv1.Database{}, &appsv1.StatefulSet{}, &corev1.Service{}, &corev1.Pod{}, &corev1.Event{}, &corev1.Secret{}}
	if scoped {
		informers[len(informers)-1] = &corev1.Namespace{}
	}
	// Register the informers now, so that WaitForCacheSync in Start covers
	// them rather than racing the controller's own registration.
	for _, obj := range informers {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return nil, nil, fmt.Errorf("registering informer for %T: %w", obj, err)
		}
	}
	return mgr, code, nil
}

// newScheme knows client-go's types and the Database.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	if err := dbv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	return scheme, nil
}

// stoppableCache is the manager's cache, reporting itself synced to the
// manager once the manager is stopping. controller-runtime v0.25.2's
// manager waits, before anything else runs, for its caches to sync, under
// a context that only its own shutdown cancels, and that shutdown waits
// for the wait: an informer refused its list (a missing RBAC rule) kept
// the manager, and so oplab's Ctrl-C, waiting for ever at full CPU
// (kubernetes-sigs/controller-runtime pull 3440). Told "synced" once
// stopping, the manager goes on to its shutdown. Start waits on the cache
// inside, which says the truth.
type stoppableCache struct {
	cache.Cache
	stopping <-chan struct{}
}

func (c stoppableCache) WaitForCacheSync(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	if c.Cache.WaitForCacheSync(ctx) {
		return true
	}
	select {
	case <-c.stopping:
		return true
	default:
		return false
	}
}
