package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
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
}

// DefaultOptions are the settings oplab ships: enough client throughput and
// workers that the API server, not the client's rate limiter, sets the pace.
//
// A reconcile of a new Database is a chain of ~6 sequential API writes, each
// waiting tens of milliseconds on a busy API server, so the workers spend
// most of their time waiting: with 8 of them, 1,000 new Databases got their
// children only ~38 s in, though the cluster still had idle CPU. 32 keep
// the API server busy (all children created ~25 s in); 64 made it slower,
// since the informer cache then lags our own writes and reconciles repeat
// them (a conflicting finalizer patch, status patches, AlreadyExists).
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
// would: nothing survives a Stop but what is stored in the API server.
type Runner struct {
	cfg  *rest.Config
	opts Options

	// mu serialises Start and Stop; it guards cur.
	mu  sync.Mutex
	cur *run // nil when stopped
}

// run is one started manager.
type run struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the manager has returned
	err    error         // the manager's error; read only after done is closed
}

// NewRunner returns a stopped Runner for the cluster cfg points at.
func NewRunner(cfg *rest.Config, opts Options) *Runner {
	return &Runner{cfg: cfg, opts: opts.withDefaults()}
}

// Start builds a fresh manager and controller, starts them in a goroutine and
// returns once the caches are synced. ctx bounds only that wait: the
// controller runs until Stop. Start fails if the controller is running.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runningLocked() {
		return errors.New("database controller already running")
	}
	mgr, err := newManager(r.cfg, r.opts)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	cur := &run{cancel: cancel, done: make(chan struct{})}
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
		case <-syncCtx.Done():
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		<-cur.done
		return fmt.Errorf("starting database controller: caches did not sync: %w", errors.Join(ctx.Err(), cur.err))
	}
	r.cur = cur
	r.emit("started")
	r.opts.Logger.Info("Started database controller")
	return nil
}

// Stop cancels the controller and waits until it has fully stopped. It is a
// no-op when the controller is not running.
func (r *Runner) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return nil
	}
	cur := r.cur
	r.cur = nil
	cur.cancel()
	<-cur.done
	r.emit("stopped")
	r.opts.Logger.Info("Stopped database controller")
	return cur.err
}

// Running reports whether the controller is running.
func (r *Runner) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runningLocked()
}

func (r *Runner) runningLocked() bool {
	if r.cur == nil {
		return false
	}
	select {
	case <-r.cur.done:
		return false
	default:
		return true
	}
}

// emit reports the controller starting or stopping; Phase and Message both
// carry "started" or "stopped".
func (r *Runner) emit(what string) {
	r.opts.Sink.Emit(Step{
		Time: r.opts.Clock.Now(), Type: StepController,
		Object: ObjectRef{Kind: "Controller", Name: "database"}, Phase: what, Message: what,
	})
}

// newManager builds a manager with nothing but the Database controller: no
// metrics server, no health probes, no leader election.
func newManager(base *rest.Config, opts Options) (ctrl.Manager, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	if err := dbv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	cacheOpts := cache.Options{}
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
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// A restarted controller has the same name as the stopped one.
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(15 * time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}

	r := &reconciler{
		client:    mgr.GetClient(),
		apiReader: mgr.GetAPIReader(),
		scheme:    scheme,
		recorder:  mgr.GetEventRecorder(RecorderName),
		tr:        tracer{sink: opts.Sink, clock: opts.Clock},
		book:      newTriggerBook(),
		thrash:    newThrashLimiter(),
		backoff:   workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](backoffBase, backoffMax),
		resync:    opts.ResyncPeriod,
	}
	if err := r.setupWithManager(mgr, opts.MaxConcurrentReconciles); err != nil {
		return nil, fmt.Errorf("setting up database controller: %w", err)
	}
	// Register the informers now, so that WaitForCacheSync in Start covers
	// them rather than racing the controller's own registration.
	for _, obj := range []client.Object{&dbv1.Database{}, &appsv1.StatefulSet{}, &corev1.Service{}, &corev1.Secret{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return nil, fmt.Errorf("registering informer for %T: %w", obj, err)
		}
	}
	return mgr, nil
}
