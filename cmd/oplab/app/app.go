// Package app assembles oplab's web side on an API server: the scheme, the
// direct client, the informer cache and the lab's state watcher, the
// session table (restored from the cluster), the kubeconfig issuer and the
// namespace guard, and then the web server (web.New) on them. It is the one
// assembly: cmd/oplab's run calls it, and so do the end-to-end tests
// (web/e2e, env_test.go) and the benchmarks that run the real
// oplab (cmd/loadtest/class, cmd/loadtest/viewers), so what they test is what
// oplab runs.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/controller/trace"

	"github.com/oplab-dev/oplab/web"
	"github.com/oplab-dev/oplab/web/code"
	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/instructor"
	"github.com/oplab-dev/oplab/web/kubectl"
	"github.com/oplab-dev/oplab/web/lab"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/stream"
)

// Options configures the web side: the API server, the parts run built
// before it (recorder, hub, controller), the session table's settings, and
// the web server's own (passed to web.Options as they are).
type Options struct {
	// Config reaches the API server; Web builds its own cache and client
	// from it, so the lab keeps working while the controller is stopped.
	Config *rest.Config
	// Recorder is the trace recorder the controller emits to; the state
	// watcher publishes to it too.
	Recorder *trace.Recorder
	// Hub streams the Recorder to the browsers on /ws.
	Hub *stream.Hub
	// Controller is paused per namespace from the lab page, and stopped and
	// started for everyone from the instructor page.
	Controller web.Controller
	// LearnerCode hands a learner's namespace to their own reconciler
	// (the /code page); nil: no /code page.
	LearnerCode code.Controller

	// NoQuotaController says the cluster runs no ResourceQuota controller
	// (the embedded minimal mode), so a new namespace's quota status is
	// written by oplab at once (labns.KubeNamespaces).
	NoQuotaController bool
	// SessionIdleTimeout ends sessions without requests for this long and
	// deletes their namespaces; default 2h. At start, Web rebuilds the
	// sessions from the lab namespaces in the cluster (session.Manager.Restore),
	// then deletes the labelled lab namespaces older than this that no
	// session owns (session.Manager.Reclaim).
	SessionIdleTimeout time.Duration
	// SessionNewIdleTimeout ends sessions whose cookie never came back;
	// default 10m.
	SessionNewIdleTimeout time.Duration
	// MaxSessions caps the sessions, and so the lab namespaces; default 200.
	MaxSessions int
	// MaxCodeRuns caps the learners whose own code runs at once (a child
	// process each); zero means code.Options' default.
	MaxCodeRuns int
	// ImageRegistry is the engines' registry (--image-registry), which
	// the learner code's tests hold its images to.
	ImageRegistry string
	// MaxSessionsPerClient caps the sessions of one client address; 0 means
	// no separate cap.
	MaxSessionsPerClient int
	// NamespacePrefix starts the learner namespaces' names and decides
	// their instance label, so several oplab instances can share a cluster
	// (labns.ValidatePrefix); default labns.NamespacePrefix.
	NamespacePrefix string
	// InstanceOnly makes the lab's state watcher read only the namespaces
	// labelled with its instance (labns.InstanceLabel), and their
	// Secrets with one informer per namespace, so oplab needs no
	// cluster-wide Secret permission; oplab sets it unless
	// --all-namespaces. Off, it reads the namespaces named with its
	// prefix, Secrets with a cluster-wide informer (a personal cluster).
	InstanceOnly bool
	// NamespaceRoles are the ClusterRoles oplab binds to itself in each
	// learner namespace (labns.KubeNamespaces.Roles); empty: none.
	NamespaceRoles []string
	// PublicURL is where learners reach oplab (web.Options.PublicURL).
	PublicURL string
	// KeepEnded is how long an ended session's export and results are
	// kept (session.Options.KeepFor); zero: session.DefaultKeepFor.
	KeepEnded time.Duration
	// KubeconfigServer is the API server URL learners' kubeconfigs name;
	// empty means Config's host, the one the admin kubeconfig names.
	KubeconfigServer string

	// The web server's settings (web.Options); JoinCode and TrustedProxies
	// are the session table's too, Content the session table's and the
	// course pages'.
	InstructorToken          string
	JoinCode                 string
	DemoDwell                time.Duration
	ResetWait                time.Duration
	Content                  *learn.Content
	Demos                    []demo.Script
	Broadcaster              instructor.Broadcaster
	KubectlLine              string
	Ready                    func(ctx context.Context) error
	MaxDatabasesPerNamespace int
	TrustedProxies           []netip.Prefix
	AllowedHosts             []string

	Logger logr.Logger
}

// Web is the web server and the work behind the lab: the informer cache,
// the state watcher, the session table and its guard.
type Web struct {
	server   *web.Server
	sessions *session.Manager
	watcher  *dbview.Watcher
	logger   logr.Logger
	cacheErr chan error
}

// sweepInterval is how often idle sessions are looked for.
const sweepInterval = time.Minute

// NewWeb assembles the web side on the API server of opts.Config. It starts
// the informer cache and the goroutines that own the session table and the
// lab state (all ending with ctx), restores the sessions of an earlier
// run, and returns once the cache has synced, with the server built on
// those parts.
func NewWeb(ctx context.Context, opts Options) (*Web, error) {
	if err := check(opts); err != nil {
		return nil, err
	}
	if opts.MaxDatabasesPerNamespace == 0 {
		opts.MaxDatabasesPerNamespace = web.DefaultMaxDatabases
	}
	if opts.SessionIdleTimeout <= 0 {
		opts.SessionIdleTimeout = 2 * time.Hour
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	direct, err := client.New(opts.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create API client: %w", err)
	}
	// An informer oplab may not list would keep the cache from syncing for
	// ever; refusals says which, so NewWeb fails naming the permission.
	refusals := permission.NewRefusals(opts.Logger.WithName("cache"))
	if opts.NamespacePrefix == "" {
		opts.NamespacePrefix = labns.NamespacePrefix
	}
	if err := labns.ValidatePrefix(opts.NamespacePrefix); err != nil {
		return nil, err
	}
	cacheOpts := cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
		DefaultWatchErrorHandler: refusals.WatchErrorHandler}
	var secrets *controller.NamespaceCaches
	if opts.InstanceOnly {
		// Only this instance's namespaces: the Namespace informer selects
		// them, and Secrets are watched in each of them, not cluster-wide.
		sel := labels.SelectorFromSet(labels.Set{labns.InstanceLabel: labns.Instance(opts.NamespacePrefix)})
		cacheOpts.ByObject = map[client.Object]cache.ByObject{&corev1.Namespace{}: controller.InstanceNamespaces(sel)}
		if secrets, err = controller.NewNamespaceCaches(opts.Config, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()},
			dbview.SecretMeta(), opts.Logger.WithName("secrets")); err != nil {
			return nil, err
		}
	}
	c, err := cache.New(opts.Config, cacheOpts)
	if err != nil {
		return nil, fmt.Errorf("create informer cache: %w", err)
	}
	self, err := selfSubject(ctx, opts)
	if err != nil {
		return nil, err
	}
	issuer, err := newIssuer(opts)
	if err != nil {
		return nil, err
	}
	prefix := opts.NamespacePrefix
	w := &Web{logger: opts.Logger, cacheErr: make(chan error, 1)}
	watched := func(ns string) bool { return strings.HasPrefix(ns, prefix) }
	if secrets != nil {
		nsInformer, err := c.GetInformer(ctx, &corev1.Namespace{}, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("get informer for namespaces: %w", err)
		}
		if err := secrets.Follow(ctx, nsInformer); err != nil {
			return nil, err
		}
		// The watcher's informers start with this one: a Database of a
		// restored session listed before the namespaces are would be
		// dropped, so the first answers wait for them.
		watched = func(ns string) bool {
			if !nsInformer.HasSynced() {
				toolscache.WaitForCacheSync(ctx.Done(), nsInformer.HasSynced)
			}
			return c.Get(context.Background(), client.ObjectKey{Name: ns}, &corev1.Namespace{}) == nil
		}
	}
	w.watcher, err = dbview.NewWatcher(ctx, dbview.Options{
		Cache: c, Secrets: secrets, Publisher: opts.Recorder, Watched: watched, Render: lab.NewFragments(), YourCode: opts.Controller.HandedOver,
		Logger: opts.Logger.WithName("state"),
	})
	if err != nil {
		return nil, err
	}
	// An ended session's timeline goes, with the Databases the lab saw go
	// without a snapshot there, and, once the server is built, its
	// learner's code and the child process running it.
	var server atomic.Pointer[web.Server]
	ended := func(ns string) {
		opts.Recorder.Forget(ns)
		w.watcher.Forget(ns)
		if s := server.Load(); s != nil {
			s.Ended(ns)
		}
	}
	// What a learner did is kept when their session ends: the lab's
	// export (timeline and code) taken then, beside their results.
	exportOf := func(ns string) []byte {
		e := opts.Recorder.Export(ns)
		if s := server.Load(); s != nil {
			e.Code = s.CodeOf(ns)
		}
		b, err := json.Marshal(e)
		if err != nil {
			return nil
		}
		return b
	}
	kube := labns.KubeNamespaces{Client: direct, MaxDatabases: opts.MaxDatabasesPerNamespace, Prefix: prefix,
		NoQuotaController: opts.NoQuotaController, Roles: opts.NamespaceRoles, Self: self, Logger: opts.Logger.WithName("namespaces")}
	w.sessions, err = session.New(ctx, session.Options{
		Namespaces:      explainedNamespaces{kube},
		Keep:            explainedKeeper{kube},
		KeepFor:         opts.KeepEnded,
		ExportOf:        exportOf,
		Ending:          endingOf(opts.Controller),
		NamespacePrefix: prefix, Revoke: explainRevoke(issuer.Revoke),
		IdleTimeout: opts.SessionIdleTimeout, NewIdleTimeout: opts.SessionNewIdleTimeout,
		MaxSessions: opts.MaxSessions, MaxPerClient: opts.MaxSessionsPerClient, ClientOf: session.ClientAddress(opts.TrustedProxies),
		JoinCode: opts.JoinCode,
		OnExpire: ended, OnRestore: restartedStep(opts.Recorder), Logger: opts.Logger.WithName("session"),
	})
	if err != nil {
		return nil, err
	}
	// The learners of an earlier run find their namespaces again; what no
	// session owns is an orphan. Both are best effort: a failure must not
	// keep the lab down.
	if _, err := w.sessions.Restore(ctx); err != nil {
		opts.Logger.Error(err, "Failed to restore lab sessions from the cluster")
	}
	if n, err := w.sessions.Reclaim(ctx); err != nil {
		opts.Logger.Error(err, "Failed to delete orphaned lab namespaces", "deleted", n)
	} else if n > 0 {
		opts.Logger.Info("Deleted orphaned lab namespaces from an earlier run", "count", n)
	}
	startGuard(ctx, w.sessions, opts)
	go func() { w.cacheErr <- c.Start(ctx) }()
	go w.watcher.Run(ctx)
	syncCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	go func() {
		select {
		case <-refusals.Refused():
			stopWaiting()
		case <-syncCtx.Done():
		}
	}()
	if !c.WaitForCacheSync(syncCtx) {
		if err := refusals.Err(); err != nil {
			return nil, fmt.Errorf("informer cache did not sync: %w", err)
		}
		return nil, errors.New("informer cache did not sync: is the API server reachable and the Database CRD installed?")
	}
	// The lab's terminal runs kubectl as the learner's ServiceAccount, with
	// the token the issuer mints, over oplab's own route to the API server.
	own, err := labns.ClusterOf(opts.Config, "")
	if err != nil {
		return nil, err
	}
	w.server, err = web.New(ctx, web.Options{
		Client: direct, Sessions: w.sessions, States: w.watcher, Kubeconfigs: issuer,
		Kubectl:  &kubectl.Runner{Minter: issuer, Cluster: own},
		Recorder: opts.Recorder, Hub: opts.Hub, Controller: opts.Controller, LearnerCode: opts.LearnerCode,
		InstructorToken: opts.InstructorToken, JoinCode: opts.JoinCode, DemoDwell: opts.DemoDwell, ResetWait: opts.ResetWait, Demos: opts.Demos, Content: opts.Content,
		Broadcaster: opts.Broadcaster, KubectlLine: opts.KubectlLine, Ready: opts.Ready,
		MaxDatabasesPerNamespace: opts.MaxDatabasesPerNamespace, TrustedProxies: opts.TrustedProxies,
		AllowedHosts: opts.AllowedHosts, MaxCodeRuns: opts.MaxCodeRuns, KeepEnded: opts.KeepEnded, PublicURL: opts.PublicURL, Logger: opts.Logger,
		CodeTests: codeTests(opts, kube),
	})
	if err != nil {
		return nil, err
	}
	server.Store(w.server)
	return w, nil
}

func check(opts Options) error {
	switch {
	case opts.Config == nil:
		return errors.New("app options: Config is required")
	case opts.Recorder == nil:
		return errors.New("app options: Recorder is required")
	case opts.Hub == nil:
		return errors.New("app options: Hub is required")
	case opts.Controller == nil:
		return errors.New("app options: Controller is required")
	case opts.Content == nil:
		return errors.New("app options: Content is required")
	case opts.MaxDatabasesPerNamespace < 0:
		return fmt.Errorf("app options: MaxDatabasesPerNamespace %d is negative", opts.MaxDatabasesPerNamespace)
	}
	return nil
}

// Server is the web server: every route.
func (w *Web) Server() *web.Server { return w.server }

// Handler returns every route: /static/, /healthz, /readyz, /ws, /lab... and
// the course pages.
func (w *Web) Handler() http.Handler { return w.server.Handler() }

// Sessions is the session table.
func (w *Web) Sessions() *session.Manager { return w.sessions }

// States is the lab's state watcher.
func (w *Web) States() *dbview.Watcher { return w.watcher }

// Run ends idle sessions (deleting their namespaces) until ctx is done, and
// returns the cache's error if the cache stops early.
func (w *Web) Run(ctx context.Context) error {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.cacheErr:
			if err != nil {
				return fmt.Errorf("informer cache stopped: %w", err)
			}
			return nil
		case <-t.C:
			if _, err := w.sessions.Sweep(ctx); err != nil {
				w.logger.Error(err, "Failed to end idle lab sessions")
			}
			if err := w.sessions.Attend(ctx, w.server.PagesOpen); err != nil {
				w.logger.Error(err, "Failed to count the learners' time on task")
			}
		}
	}
}

// NewScheme registers the types oplab's clients read and write: the
// built-in ones and the Database.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register core types: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register Database types: %w", err)
	}
	return s, nil
}

// selfSubject is oplab's own identity as the API server knows it, the
// subject of the RoleBindings it makes itself in learner namespaces; only
// asked when there are roles to bind.
func selfSubject(ctx context.Context, opts Options) (rbacv1.Subject, error) {
	if len(opts.NamespaceRoles) == 0 {
		return rbacv1.Subject{}, nil
	}
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return rbacv1.Subject{}, fmt.Errorf("create API clientset: %w", err)
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return rbacv1.Subject{}, fmt.Errorf("ask the API server who oplab is (to bind --namespace-roles to it): %w", err)
	}
	name := r.Status.UserInfo.Username
	if rest, ok := strings.CutPrefix(name, "system:serviceaccount:"); ok {
		if ns, sa, ok := strings.Cut(rest, ":"); ok {
			return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}, nil
		}
	}
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}, nil
}

// newIssuer makes the learners' kubeconfigs: oplab's own client grants
// and mints them, and they name the API server as the admin kubeconfig
// does, or KubeconfigServer.
func newIssuer(opts Options) (*labns.Issuer, error) {
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("create API clientset: %w", err)
	}
	cl, err := labns.ClusterOf(opts.Config, opts.KubeconfigServer)
	if err != nil {
		return nil, err
	}
	return &labns.Issuer{Client: cs, Cluster: cl}, nil
}

// endingOf is the controller's EndNamespace, when it has one (the Runner
// does; a test's stand-in may not).
func endingOf(c web.Controller) func(string) {
	if e, ok := c.(interface{ EndNamespace(ns string) }); ok {
		return e.EndNamespace
	}
	return nil
}

// restartedStep tells the learner of a restored session, on their timeline,
// that oplab restarted: their namespace and Databases were kept, but what
// the timeline showed before lived in the old process.
func restartedStep(sink controller.Sink) func(namespace string) {
	return func(ns string) {
		sink.Emit(controller.Step{
			Type:    controller.StepController,
			Object:  controller.ObjectRef{Kind: "Controller", Namespace: ns, Name: "oplab"},
			Phase:   "restarted",
			Message: "oplab restarted: your namespace and its Databases were kept; what happened before the restart is not on this timeline",
		})
	}
}

// codeTests is Test my code on the learner code's controller, which grants
// a scratch namespace its identity and leaves it to the tester; none
// without learner code.
func codeTests(opts Options, namespaces labns.KubeNamespaces) code.TestOptions {
	id, ok := opts.LearnerCode.(code.CodeIdentity)
	if !ok {
		return code.TestOptions{}
	}
	return code.TestOptions{Config: opts.Config, Namespaces: namespaces, Identity: id, ImageRegistry: opts.ImageRegistry}
}
