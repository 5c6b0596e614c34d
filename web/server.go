// Package web is oplab's HTTP server: the lab, the course pages, the trace
// stream and the static assets, all served from this process. The browser
// talks only to this server; it never reaches the Kubernetes API server.
package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/web/classroom"
	"github.com/oplab-dev/oplab/web/code"
	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/instructor"
	"github.com/oplab-dev/oplab/web/kubeconfig"
	"github.com/oplab-dev/oplab/web/lab"
	"github.com/oplab-dev/oplab/web/lab/state"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/static"
	"github.com/oplab-dev/oplab/web/stream"
)

// Controller is what the server needs of controller.Runner: the whole
// controller's switch, for the instructor, and the per-namespace pause, for
// each learner's Stop and Start.
type Controller interface {
	instructor.Switch
	lab.Controller
}

// Options configures the server.
type Options struct {
	// Config reaches the API server; the server builds its own cache and
	// client from it, so the lab keeps working while the controller is
	// stopped.
	Config *rest.Config
	// Recorder is the trace recorder the controller emits to.
	Recorder *stream.Recorder
	// Hub streams the Recorder to the browsers on /ws.
	Hub *stream.Hub
	// Controller is paused per namespace from the lab page, and stopped and
	// started for everyone from the instructor page.
	Controller Controller
	// InstructorToken guards /instructor; empty turns that page off.
	InstructorToken string
	// JoinCode, when set, must be given before a visitor gets a lab
	// session (session.Options.JoinCode).
	JoinCode string
	// Broadcaster is how the instructor's roster sends every learner to a
	// scenario or lesson; nil means the server's own classroom (tests put
	// a recorder here).
	Broadcaster instructor.Broadcaster
	// KubectlLine is the kubectl command the lab page offers to paste; the
	// page adds the learner's "-n NAMESPACE". Empty: none is shown.
	KubectlLine string
	// Ready is an extra readiness check for /readyz (API reachable, CRD
	// established, controller running); nil means none.
	Ready func(ctx context.Context) error
	// MaxDatabasesPerNamespace caps each learner's Databases; default 5.
	MaxDatabasesPerNamespace int
	// NoQuotaController says the cluster runs no ResourceQuota controller
	// (the embedded minimal mode), so a new namespace's quota status is
	// written by oplab at once (session.KubeNamespaces).
	NoQuotaController bool
	// SessionIdleTimeout ends sessions without requests for this long and
	// deletes their namespaces; default 2h. At start, New rebuilds the
	// sessions from the lab namespaces in the cluster (session.Manager.Restore),
	// then deletes the labelled lab namespaces older than this that no
	// session owns (session.Manager.Reclaim).
	SessionIdleTimeout time.Duration
	// SessionNewIdleTimeout ends sessions whose cookie never came back;
	// default 10m.
	SessionNewIdleTimeout time.Duration
	// MaxSessions caps the sessions, and so the lab namespaces; default 200.
	MaxSessions int
	// MaxSessionsPerClient caps the sessions of one client address; 0 means
	// no separate cap.
	MaxSessionsPerClient int
	// NamespacePrefix starts the learner namespaces' names and decides
	// their instance label, so several oplab instances can share a cluster
	// (session.ValidatePrefix); default session.NamespacePrefix.
	NamespacePrefix string
	// KubeconfigServer is the API server URL learners' kubeconfigs name;
	// empty means Config's host, the one the admin kubeconfig names.
	KubeconfigServer string
	// AllowedHosts are the host names (without port) the server answers to
	// besides IP literals and localhost; see checkHost.
	AllowedHosts []string
	// LearnerCode hands a learner's namespace to their own reconciler
	// (the /code page); nil: no /code page.
	LearnerCode code.Runner
	Logger      logr.Logger
}

// Server is oplab's HTTP server and the background work behind the lab.
type Server struct {
	opts     Options
	cache    cache.Cache
	watcher  *state.Watcher
	sessions *session.Manager
	issuer   *kubeconfig.Issuer
	handler  http.Handler
	cacheErr chan error

	// classroom is who presents and what followers see (web/classroom).
	classroom *classroom.Classroom
}

// sweepInterval is how often idle sessions are looked for.
const sweepInterval = time.Minute

// New builds the server. It starts the informer cache and the goroutines
// that own the session table and the lab state (all ending with ctx), and
// returns once the cache has synced.
func New(ctx context.Context, opts Options) (*Server, error) {
	if err := check(opts); err != nil {
		return nil, err
	}
	if opts.MaxDatabasesPerNamespace <= 0 {
		opts.MaxDatabasesPerNamespace = 5
	}
	if opts.SessionIdleTimeout <= 0 {
		opts.SessionIdleTimeout = 2 * time.Hour
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	direct, err := client.New(opts.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create API client: %w", err)
	}
	// An informer oplab may not list would keep the cache from syncing for
	// ever; refusals says which, so New fails naming the permission.
	refusals := permission.NewRefusals(opts.Logger.WithName("cache"))
	c, err := cache.New(opts.Config, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
		DefaultWatchErrorHandler: refusals.WatchErrorHandler})
	if err != nil {
		return nil, fmt.Errorf("create informer cache: %w", err)
	}
	if opts.NamespacePrefix == "" {
		opts.NamespacePrefix = session.NamespacePrefix
	}
	if err := session.ValidatePrefix(opts.NamespacePrefix); err != nil {
		return nil, err
	}
	issuer, err := newIssuer(opts)
	if err != nil {
		return nil, err
	}
	prefix := opts.NamespacePrefix
	s := &Server{opts: opts, cache: c, cacheErr: make(chan error, 1), issuer: issuer}
	s.watcher, err = state.NewWatcher(ctx, state.Options{
		Cache: c, Publisher: opts.Recorder, Watched: func(ns string) bool { return strings.HasPrefix(ns, prefix) }, Render: lab.NewFragments(),
		Logger: opts.Logger.WithName("state"),
	})
	if err != nil {
		return nil, err
	}
	s.sessions, err = session.New(ctx, session.Options{
		Namespaces:      explainedNamespaces{session.KubeNamespaces{Client: direct, MaxDatabases: opts.MaxDatabasesPerNamespace, Prefix: prefix, NoQuotaController: opts.NoQuotaController}},
		NamespacePrefix: prefix, Revoke: explainRevoke(issuer.Revoke),
		IdleTimeout: opts.SessionIdleTimeout, NewIdleTimeout: opts.SessionNewIdleTimeout,
		MaxSessions: opts.MaxSessions, MaxPerClient: opts.MaxSessionsPerClient,
		JoinCode: opts.JoinCode, KnownScenario: func(name string) bool { _, ok := lab.FindScenario(name); return ok },
		OnExpire: opts.Recorder.Forget, OnRestore: restartedStep(opts.Recorder), Logger: opts.Logger.WithName("session"),
	})
	if err != nil {
		return nil, err
	}
	// The learners of an earlier run find their namespaces again; what no
	// session owns is an orphan. Both are best effort: a failure must not
	// keep the lab down.
	if _, err := s.sessions.Restore(ctx); err != nil {
		opts.Logger.Error(err, "Failed to restore lab sessions from the cluster")
	}
	if n, err := s.sessions.Reclaim(ctx); err != nil {
		opts.Logger.Error(err, "Failed to delete orphaned lab namespaces", "deleted", n)
	} else if n > 0 {
		opts.Logger.Info("Deleted orphaned lab namespaces from an earlier run", "count", n)
	}
	go func() { s.cacheErr <- c.Start(ctx) }()
	go s.watcher.Run(ctx)
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
	if s.handler, err = s.routes(ctx, direct); err != nil {
		return nil, err
	}
	return s, nil
}

// newIssuer makes the learners' kubeconfigs: oplab's own client grants
// and mints them, and they name the API server as the admin kubeconfig
// does, or KubeconfigServer.
func newIssuer(opts Options) (*kubeconfig.Issuer, error) {
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("create API clientset: %w", err)
	}
	cl, err := kubeconfig.ClusterOf(opts.Config, opts.KubeconfigServer)
	if err != nil {
		return nil, err
	}
	return &kubeconfig.Issuer{Client: cs, Cluster: cl}, nil
}

func check(opts Options) error {
	switch {
	case opts.Config == nil:
		return errors.New("web options: Config is required")
	case opts.Recorder == nil:
		return errors.New("web options: Recorder is required")
	case opts.Hub == nil:
		return errors.New("web options: Hub is required")
	case opts.Controller == nil:
		return errors.New("web options: Controller is required")
	case opts.MaxDatabasesPerNamespace < 0:
		return fmt.Errorf("web options: MaxDatabasesPerNamespace %d is negative", opts.MaxDatabasesPerNamespace)
	}
	return nil
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register core types: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register Database types: %w", err)
	}
	return s, nil
}

func (s *Server) routes(ctx context.Context, direct client.Client) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles()))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	// The classroom: /ws?follow=presenter streams the presenter's namespace.
	s.classroom = classroom.New(s.opts.Recorder, classroom.Options{})
	context.AfterFunc(ctx, s.classroom.Close)
	mux.Handle("GET /ws", s.classroom.Streams(s.opts.Hub.Handler, s.sessions.NamespaceOf))
	lab.New(lab.Options{
		Store: lab.KubeStore{Client: direct}, Sessions: s.sessions, States: s.watcher,
		Controller: s.opts.Controller, Exporter: s.opts.Recorder, KubectlLine: s.opts.KubectlLine,
		KubeconfigPath: kubeconfig.Path, KubectlCommand: kubeconfig.Command,
		MaxDatabases: s.opts.MaxDatabasesPerNamespace, Classroom: s.classroom, Logger: s.opts.Logger.WithName("lab"),
	}).Register(mux)
	s.sessions.Register(mux)
	kubeconfig.Handler{Sessions: s.sessions, Minter: s.issuer, Logger: s.opts.Logger.WithName("kubeconfig")}.Register(mux)
	// The scripted demos play in the instructor's own lab namespace and
	// narrate on its timeline and, through the classroom, to the room.
	demos := demo.New(demo.Options{Client: direct, Controller: s.opts.Controller, Sink: s.opts.Recorder, Narrator: s.classroom, Logger: s.opts.Logger.WithName("demo")})
	go demos.Run(ctx)
	instructor.New(ctx, instructor.Options{
		Token: s.opts.InstructorToken, Controller: s.opts.Controller, Logger: s.opts.Logger.WithName("instructor"),
		Demo: instructor.Demo{Runner: demos, Labs: s.sessions},
		Roster: instructor.Roster{Learners: s.sessions, States: s.watcher, Pauses: s.opts.Controller, Deleter: direct,
			Broadcaster: cmp.Or[instructor.Broadcaster](s.opts.Broadcaster, s.classroom), JoinCode: s.opts.JoinCode},
		Present: instructor.Presenting{Classroom: s.classroom, Sessions: s.sessions},
	}).Register(mux)
	if s.opts.LearnerCode != nil {
		code.New(code.Options{Runner: s.opts.LearnerCode, Sessions: s.sessions, Logger: s.opts.Logger.WithName("code")}).Register(mux)
	}
	if err := learn.Register(mux); err != nil {
		return nil, err
	}
	if err := s.registerChallenges(ctx, mux, direct); err != nil {
		return nil, err
	}
	return checkHost(s.opts.AllowedHosts, protect(mux)), nil
}

// checkHost refuses requests whose Host header names a host oplab was not
// told about. Without it, a site whose DNS name is re-pointed at 127.0.0.1
// (DNS rebinding) would be same-origin with the lab and could drive it.
// IP literals and localhost are always accepted.
func checkHost(allowed []string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") || slices.ContainsFunc(allowed, func(a string) bool {
			return strings.EqualFold(a, host)
		}) {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("host %q is not served here (start oplab with --allowed-hosts %s to allow it)", host, host), http.StatusMisdirectedRequest)
	})
}

// protect rejects cross-origin state-changing requests: a page on another
// site must not be able to make a learner's browser delete their Databases
// or stop the controller.
func protect(h http.Handler) http.Handler {
	return http.NewCrossOriginProtection().Handler(h)
}

// staticFiles serves the embedded assets. They change only with the binary,
// but a short cache lifetime keeps a development rebuild visible.
func staticFiles() http.Handler {
	files := http.FileServerFS(static.FS)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := fs.Stat(static.FS, strings.TrimPrefix(r.URL.Path, "/")); err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=60")
		files.ServeHTTP(w, r)
	})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok"))
}

// Classroom is the presenter state every viewer shares: the scripted demo
// narrates through it, the roster sends everyone somewhere with it.
func (s *Server) Classroom() *classroom.Classroom { return s.classroom }

// Handler returns every route: /static/, /healthz, /readyz, /ws, /lab... and
// the course pages.
func (s *Server) Handler() http.Handler { return s.handler }

// Run ends idle sessions (deleting their namespaces) until ctx is done, and
// returns the cache's error if the cache stops early.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-s.cacheErr:
			if err != nil {
				return fmt.Errorf("informer cache stopped: %w", err)
			}
			return nil
		case <-t.C:
			if _, err := s.sessions.Sweep(ctx); err != nil {
				s.opts.Logger.Error(err, "Failed to end idle lab sessions")
			}
		}
	}
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
