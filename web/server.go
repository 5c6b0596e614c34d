// Package web is oplab's HTTP server: the lab, the course pages, the trace
// stream and the static assets, all served from this process. The browser
// talks only to this server; it never reaches the Kubernetes API server.
package web

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
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
	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/challenges"
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
	// DemoDwell, when set, is the pause between a demo's steps; zero: each
	// step's narration sets it, at a speaking pace (demo.SpeakingDwell).
	DemoDwell time.Duration
	// Demos are the scripted demos the instructor may play (demo.Load);
	// nil means the embedded ones.
	Demos []demo.Script
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
	// InstanceOnly makes the lab's state watcher read only the namespaces
	// labelled with its instance (session.InstanceLabel), and their
	// Secrets with one informer per namespace, so oplab needs no
	// cluster-wide Secret permission; oplab sets it unless
	// --all-namespaces. Off, it reads the namespaces named with its
	// prefix, Secrets with a cluster-wide informer (a personal cluster).
	InstanceOnly bool
	// NamespaceRoles are the ClusterRoles oplab binds to itself in each
	// learner namespace (session.KubeNamespaces.Roles); empty: none.
	NamespaceRoles []string
	// KubeconfigServer is the API server URL learners' kubeconfigs name;
	// empty means Config's host, the one the admin kubeconfig names.
	KubeconfigServer string
	// TrustedProxies are the proxies (an Ingress, a load balancer) whose
	// X-Forwarded-For is believed: a request from one of them is counted,
	// for the per-client session cap and the join code and instructor token
	// throttles, against the right-most address in that header no trusted
	// proxy wrote (session.ClientAddress). Empty: the peer's address.
	TrustedProxies []netip.Prefix
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
	// presence counts each learner's open pages, following or not, for
	// the roster.
	presence classroom.Presence
	// codes is the code page, set once its route is mounted (after the
	// sessions, whose end it must hear of).
	codes atomic.Pointer[code.Handler]
}

// forget drops what an ended session leaves: its timeline, and its own
// code and the child process running it.
func (s *Server) forget(ns string) {
	s.opts.Recorder.Forget(ns)
	if codes := s.codes.Load(); codes != nil {
		codes.Forget(ns)
	}
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
	if opts.NamespacePrefix == "" {
		opts.NamespacePrefix = session.NamespacePrefix
	}
	if err := session.ValidatePrefix(opts.NamespacePrefix); err != nil {
		return nil, err
	}
	cacheOpts := cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
		DefaultWatchErrorHandler: refusals.WatchErrorHandler}
	var secrets *controller.NamespaceCaches
	if opts.InstanceOnly {
		// Only this instance's namespaces: the Namespace informer selects
		// them, and Secrets are watched in each of them, not cluster-wide.
		sel := labels.SelectorFromSet(labels.Set{session.InstanceLabel: session.Instance(opts.NamespacePrefix)})
		cacheOpts.ByObject = map[client.Object]cache.ByObject{&corev1.Namespace{}: controller.InstanceNamespaces(sel)}
		if secrets, err = controller.NewNamespaceCaches(opts.Config, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()},
			state.SecretMeta(), opts.Logger.WithName("secrets")); err != nil {
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
	// A learner's progress report is held to the challenges and quiz that
	// exist (issue 19 m).
	_, set, err := challenges.LoadContent()
	if err != nil {
		return nil, err
	}
	challengeTasks := func(id string) (int, bool) {
		if c, ok := set.Get(id); ok {
			return len(c.Tasks), true
		}
		return 0, false
	}
	bank, err := quiz.Load()
	if err != nil {
		return nil, fmt.Errorf("load the quiz: %w", err)
	}
	quizSize := len(bank.Questions)
	prefix := opts.NamespacePrefix
	s := &Server{opts: opts, cache: c, cacheErr: make(chan error, 1), issuer: issuer}
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
	s.watcher, err = state.NewWatcher(ctx, state.Options{
		Cache: c, Secrets: secrets, Publisher: opts.Recorder, Watched: watched, Render: lab.NewFragments(),
		Logger: opts.Logger.WithName("state"),
	})
	if err != nil {
		return nil, err
	}
	s.sessions, err = session.New(ctx, session.Options{
		Namespaces: explainedNamespaces{session.KubeNamespaces{Client: direct, MaxDatabases: opts.MaxDatabasesPerNamespace, Prefix: prefix,
			NoQuotaController: opts.NoQuotaController, Roles: opts.NamespaceRoles, Self: self, Logger: opts.Logger.WithName("namespaces")}},
		NamespacePrefix: prefix, Revoke: explainRevoke(issuer.Revoke),
		IdleTimeout: opts.SessionIdleTimeout, NewIdleTimeout: opts.SessionNewIdleTimeout,
		MaxSessions: opts.MaxSessions, MaxPerClient: opts.MaxSessionsPerClient, ClientOf: session.ClientAddress(opts.TrustedProxies),
		JoinCode: opts.JoinCode, KnownScenario: func(name string) bool { _, ok := lab.FindScenario(name); return ok },
		ChallengeTasks: challengeTasks, QuizSize: quizSize,
		OnExpire: s.forget, OnRestore: restartedStep(opts.Recorder), Logger: opts.Logger.WithName("session"),
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
	s.startGuard(ctx)
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
	mux.HandleFunc("GET /starting", ready)
	// The classroom: /ws?follow=presenter streams the presenter's namespace.
	s.classroom = classroom.New(s.opts.Recorder, classroom.Options{})
	context.AfterFunc(ctx, s.classroom.Close)
	mux.Handle("GET /ws", limitStreams(maxStreamsPerSession, s.streamOwner,
		trackStreams(&s.presence, s.sessions.NamespaceOf, s.classroom.Streams(s.opts.Hub.Handler, s.sessions.NamespaceOf))))
	labOpts := lab.Options{
		Store: lab.KubeStore{Client: direct}, Sessions: s.sessions, States: s.watcher,
		Controller: s.opts.Controller, Exporter: s.opts.Recorder, History: s.opts.Recorder, KubectlLine: s.opts.KubectlLine,
		KubeconfigPath: kubeconfig.Path, KubectlCommand: kubeconfig.Command,
		MaxDatabases: s.opts.MaxDatabasesPerNamespace, Classroom: s.classroom, Logger: s.opts.Logger.WithName("lab"),
	}
	// The code page comes first: the lab's export carries its code.
	if s.opts.LearnerCode != nil {
		codes := code.New(code.Options{Runner: s.opts.LearnerCode, Sessions: s.sessions, Logger: s.opts.Logger.WithName("code")})
		codes.Register(mux)
		s.codes.Store(codes)
		labOpts.Code = codes
	}
	labs := lab.New(labOpts)
	labs.Register(mux)
	s.sessions.Register(mux)
	kubeconfig.Handler{Sessions: s.sessions, Minter: s.issuer, Logger: s.opts.Logger.WithName("kubeconfig")}.Register(mux)
	// The scripted demos play in the instructor's own lab namespace and
	// narrate on its timeline and, through the classroom, to the room.
	scripts := s.opts.Demos
	if scripts == nil {
		var err error
		if scripts, err = demo.Load(""); err != nil {
			return nil, err
		}
	}
	demos := demo.New(demo.Options{Client: direct, Controller: s.opts.Controller, Sink: s.opts.Recorder, Narrator: s.classroom, Scripts: scripts, Dwell: s.opts.DemoDwell, Logger: s.opts.Logger.WithName("demo")})
	go demos.Run(ctx)
	// The looks' streams, capped per owner as /ws is: one limiter for all
	// of them. The route names the namespace, which the instructor
	// handler has checked is a learner's.
	lookStreams := limitStreams(maxStreamsPerSession, s.streamOwner, s.opts.Hub.Handler(func(r *http.Request) (string, error) {
		return r.PathValue("namespace"), nil
	}))
	instructor.New(ctx, instructor.Options{
		Token: s.opts.InstructorToken, Controller: s.opts.Controller, Logger: s.opts.Logger.WithName("instructor"),
		Throttle: session.NewThrottle(instructor.TokenGuesses, instructor.TokenGuessEvery, nil), ClientOf: session.ClientAddress(s.opts.TrustedProxies),
		Demo: instructor.Demo{Runner: demos, Labs: s.sessions},
		Roster: instructor.Roster{Learners: s.sessions, States: s.watcher, Pauses: s.opts.Controller, Deleter: direct,
			Broadcaster: cmp.Or[instructor.Broadcaster](s.opts.Broadcaster, s.classroom), JoinCode: s.opts.JoinCode,
			Presence: &s.presence, Self: s.sessions.NamespaceOf, Presenting: s.classroom.Presenting},
		Present: instructor.Presenting{Classroom: s.classroom, Sessions: s.sessions},
		Timer:   s.classroom,
		// Looking over a learner's shoulder: their lab read-only, and its
		// stream, behind the instructor's cookie.
		Look: instructor.Look{Page: labs.LookPage, Stream: func(string) http.Handler { return lookStreams }},
	}).Register(mux)
	if err := learn.Register(mux); err != nil {
		return nil, err
	}
	if err := s.registerChallenges(ctx, mux, direct); err != nil {
		return nil, err
	}
	return securityHeaders(bodyDeadline(checkHost(s.opts.AllowedHosts, protect(mux)))), nil
}

// bodyTimeout bounds reading a request's body. Forms and reports are a
// few KiB; the replay upload sets its own deadline, extended as the file
// arrives (lab.replay).
var bodyTimeout = 30 * time.Second // a variable for tests

// bodyDeadline gives every request but a websocket upgrade a read
// deadline, so a client sending its body a byte at a time cannot hold a
// handler for ever. (http.Server's ReadTimeout would do it too, but it
// would also stay on the connection a websocket takes over.)
func bodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
		}
		h.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy is sent with every response. Scripts and styles
// come only from oplab's own files (no inline script, no style attribute, no
// eval), so text from a cluster object or an uploaded file that reached a
// page as markup still could not run; connections go only back to oplab
// (its /ws included); no other site may frame a page (clickjacking the
// instructor's Stop).
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries: the
// Content-Security-Policy, nosniff (a file is only what its Content-Type
// says, so an export is never run as a script), and no Referer to other
// sites.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
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

// maxStreamsPerSession is how many /ws connections one session (or one
// address without a session) may hold: a learner's lab in a few tabs, with
// room to spare. Each costs a buffer of frames in oplab; 300 on one cookie
// was seen (issue 19 c).
const maxStreamsPerSession = 8

// streamOwner is whom a /ws connection counts against: the caller's own
// session (a follower's, not the presenter's it streams), else its address.
func (s *Server) streamOwner(r *http.Request) string {
	if ns, err := s.sessions.NamespaceOf(r); err == nil {
		return "ns:" + ns
	}
	return "addr:" + session.ClientAddress(s.opts.TrustedProxies)(r)
}

// limitStreams refuses (429) a websocket beyond max per owner. A stream
// outlives its handler (the hub keeps the connection), so the count is
// given back when the hijacked connection closes, not when the handler
// returns.
func limitStreams(max int, ownerOf func(*http.Request) string, next http.Handler) http.Handler {
	var mu sync.Mutex
	open := map[string]int{}
	release := func(owner string) {
		mu.Lock()
		defer mu.Unlock()
		if open[owner]--; open[owner] <= 0 {
			delete(open, owner)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := ownerOf(r)
		mu.Lock()
		full := open[owner] >= max
		if !full {
			open[owner]++
		}
		mu.Unlock()
		if full {
			w.Header().Set("Retry-After", "10")
			http.Error(w, fmt.Sprintf("too many live timelines open for this session (%d): close some lab tabs", max), http.StatusTooManyRequests)
			return
		}
		cw := &countedWriter{ResponseWriter: w, release: sync.OnceFunc(func() { release(owner) })}
		next.ServeHTTP(cw, r)
		if !cw.hijacked.Load() {
			cw.release() // refused before the upgrade: nothing stays open
		}
	})
}

// countedWriter hands out its connection wrapped, so that closing it gives
// the stream's place back.
type countedWriter struct {
	http.ResponseWriter
	release  func()
	hijacked atomic.Bool
}

func (c *countedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(c.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	c.hijacked.Store(true)
	return &countedConn{Conn: conn, release: c.release}, rw, nil
}

func (c *countedWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// trackStreams counts each open stream in presence against the caller's
// own namespace, as following when it streams the presenter's, until its
// connection closes: the roster says from it who follows and who is away.
func trackStreams(presence *classroom.Presence, namespaceOf func(*http.Request) (string, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceOf(r)
		if err != nil {
			next.ServeHTTP(w, r) // refused by the stream itself: nothing to count
			return
		}
		cw := &countedWriter{ResponseWriter: w, release: presence.Open(ns, r.URL.Query().Has("follow"))}
		next.ServeHTTP(cw, r)
		if !cw.hijacked.Load() {
			cw.release()
		}
	})
}

type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
