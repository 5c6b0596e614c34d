package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cmd/oplab/app"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web"
	"github.com/oplab-dev/oplab/web/lab"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/starting"
	"github.com/oplab-dev/oplab/web/stream"
)

// run wires the cluster, the controller and the web server, serves until ctx
// is done, then stops them in reverse order. Progress lines go to out.
func run(ctx context.Context, c config, out io.Writer) (retErr error) {
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctrl.SetLogger(log)

	// 0. The course, loaded once and shared by every page that shows or
	// counts it. It is compiled in: a defect in it is a build defect.
	content, err := learn.LoadContent()
	if err != nil {
		return err
	}
	for _, p := range content.Course.Problems() {
		log.Info("Found a problem in the course", "problem", p)
	}

	// 1. The trace recorder, which the controller reports to, and the hub
	// that streams it to browsers; they run first so that viewers hear of
	// the control plane going down.
	rec := trace.NewRecorder(trace.RecorderOptions{Logger: log.WithName("recorder"), Card: lab.NewFragments().Redraw})
	hub := stream.NewHub(rec, stream.HubOptions{})
	recDone, hubDone := make(chan struct{}), make(chan struct{})
	recCtx, stopRec := context.WithCancel(context.Background())
	go func() { defer close(recDone); rec.Run(recCtx) }()
	go func() { defer close(hubDone); hub.Run(recCtx) }()
	defer func() { stopRec(); <-recDone; <-hubDone }()

	// 2. The front door: the course pages are served from here on, while
	// the cluster is built (a first run: minutes) and started (seconds);
	// the pages that need it say how far it is, until the full server
	// takes over the same listener (step 5).
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listening on --addr %s: %w", c.addr, err)
	}
	status := &startup{}
	status.set(starting.Status{Phase: starting.Connecting, Began: time.Now()})
	early, err := web.Starting(web.StartingOptions{Status: status.load, AllowedHosts: c.allowedHosts, Content: content, Logger: log.WithName("web")})
	if err != nil {
		ln.Close()
		return err
	}
	front := &frontDoor{}
	front.set(early)
	// Headers have 10 s and an idle keep-alive connection 2 minutes; a
	// body's deadline is set per request by the web server (ReadTimeout
	// would also cut the websockets, which take the connection over).
	httpSrv := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	httpErr := make(chan error, 1)
	go func() { httpErr <- httpSrv.Serve(ln) }()
	// serve shuts it down first, before the controller and the cluster
	// stop; this is for the ways out before serve.
	defer func() { _ = httpSrv.Close() }()
	fmt.Fprintf(out, "The course pages are up at http://%s (the lab follows when the cluster is)\n", ln.Addr())

	// 3. The API server: the embedded control plane, or the cluster of a
	// kubeconfig. A control plane that fails for good ends run with its
	// reason, through ctx.
	ctx, failed := context.WithCancelCause(ctx)
	defer failed(nil)
	var embedded *cluster.Cluster
	restCfg, kubectl, stopCluster, err := connect(ctx, c, out, rec, func(cl *cluster.Cluster) { embedded = cl }, status)
	if err != nil {
		return err
	}
	defer stopCluster()
	if embedded != nil {
		go func() {
			select {
			case <-embedded.Failed():
				failed(embedded.Err())
			case <-ctx.Done():
			}
		}()
	}
	defer func() {
		if cause := context.Cause(ctx); errors.Is(cause, cluster.ErrControlPlaneFailed) && retErr == nil {
			retErr = cause
		}
	}()

	// The CRD must be there before the controller starts, or its informer
	// fails with a discovery error that names neither the CRD nor the fix.
	checker, err := newReadiness(restCfg)
	if err != nil {
		return err
	}
	if embedded != nil {
		checker.cluster = embedded
	}
	if err := checker.checkCRD(ctx); err != nil {
		return fmt.Errorf("%w; install it (run without --install-crds=false, or %s)", err, crdApplyLine)
	}

	// 4. The controller. It runs in its own manager so the lab can really
	// stop it and start a fresh one.
	opts := controller.DefaultOptions()
	opts.Sink = rec
	opts.ResyncPeriod = c.resync
	opts.Logger = log.WithName("controller")
	opts.ImageRegistry = c.imageRegistry
	if !c.allNamespaces {
		opts.NamespaceSelector = labels.SelectorFromSet(labels.Set{labns.InstanceLabel: labns.Instance(c.namespacePrefix)})
	}
	runner := controller.NewRunner(restCfg, opts)
	if err := runner.Start(ctx); err != nil {
		return fmt.Errorf("starting the controller: %w", err)
	}
	defer func() {
		if err := runner.Stop(); err != nil {
			log.Error(err, "Stopping the controller failed")
		}
	}()

	// A CRD deleted while oplab runs is put back where oplab may, and
	// named (with what to run) where it may not.
	go keepCRD(ctx, restCfg, embedded != nil || c.installCRDs, rec, log.WithName("crd"))

	// 5. The web server and the lab's work behind it (cmd/oplab/app), which
	// take over the front door.
	srv, err := app.NewWeb(ctx, app.Options{
		Config:                   restCfg,
		Recorder:                 rec,
		Hub:                      hub,
		Controller:               runner,
		LearnerCode:              runner,
		Ready:                    checker.check,
		MaxDatabasesPerNamespace: c.maxDatabases,
		NoQuotaController:        embedded != nil && c.mode == cluster.ModeMinimal,
		SessionIdleTimeout:       c.sessionIdle,
		SessionNewIdleTimeout:    c.sessionIdleNew,
		MaxSessions:              c.maxSessions,
		MaxCodeRuns:              c.maxCodeRuns,
		ImageRegistry:            c.imageRegistry,
		MaxSessionsPerClient:     c.maxPerClient,
		AllowedHosts:             c.allowedHosts,
		TrustedProxies:           c.trustedProxies,
		InstructorToken:          c.instructorToken,
		JoinCode:                 c.joinCode,
		PublicURL:                c.publicURL,
		KeepEnded:                c.keepEnded,
		Content:                  content,
		Demos:                    c.demos,
		NamespacePrefix:          c.namespacePrefix,
		KubeconfigServer:         c.kubeconfigHost,
		InstanceOnly:             !c.allNamespaces,
		NamespaceRoles:           c.namespaceRoles,
		Logger:                   log.WithName("web"),
	})
	if err != nil {
		return fmt.Errorf("starting the web server: %w", err)
	}
	front.set(srv.Handler())
	return serve(ctx, c, ln.Addr(), httpSrv, httpErr, srv, adminKubectl(kubectl), out)
}

// frontDoor is the handler of oplab's one listener: the starting pages
// first, then the full server.
type frontDoor struct{ h atomic.Pointer[http.Handler] }

func (f *frontDoor) set(h http.Handler) { f.h.Store(&h) }

func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*f.h.Load()).ServeHTTP(w, r) }

// startup is where the cluster stands, for the starting pages. Only run's
// goroutine (and the build it runs) stores a status, always a new one;
// the pages read it.
type startup struct {
	p atomic.Pointer[starting.Status]
}

func (s *startup) load() starting.Status { return *s.p.Load() }

func (s *startup) set(st starting.Status) { s.p.Store(&st) }

// building publishes a provisioning report.
func (s *startup) building(p cluster.BuildProgress) {
	st := starting.Status{Phase: starting.Building, Building: p.Building(), Built: p.Built, Total: len(p.Names), Began: p.Began}
	for i, took := range p.Took {
		st.Done = append(st.Done, starting.Built{Name: p.Names[i], Took: took})
	}
	switch {
	case p.Err != nil:
		st.Phase, st.Err = starting.Failed, p.Err.Error()
	case p.Done:
		st.Phase, st.Began = starting.Starting, time.Now()
	}
	s.set(st)
}

// adminKubectl is the line printed in the terminal: every namespace.
func adminKubectl(kubectl string) string {
	if kubectl == "" {
		return ""
	}
	return kubectl + " get databases -A -w"
}

// serve announces the URLs, and runs the web server's background work
// beside the HTTP server until ctx is done or either fails; then it shuts
// the HTTP server down.
func serve(ctx context.Context, c config, addr net.Addr, httpSrv *http.Server, httpErr <-chan error, srv *app.Web, kubectlLine string, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- srv.Run(ctx) }()
	go func() { errc <- <-httpErr }()

	fmt.Fprintf(out, "oplab is serving on http://%s\n", addr)
	fmt.Fprintf(out, "Instructor page (present to the room, run demos, see the roster, stop the controller for everyone; keep the link to yourself): http://%s/instructor?token=%s\n", addr, url.QueryEscape(c.instructorToken))
	if c.joinCode != "" {
		fmt.Fprintf(out, "Learners join with the code %q, or this link: http://%s/lab?join=%s\n", c.joinCode, addr, url.QueryEscape(c.joinCode))
	}
	if kubectlLine != "" {
		fmt.Fprintf(out, "Watch it with kubectl: %s\n", kubectlLine)
	}

	var firstErr error
	select {
	case <-ctx.Done():
	case firstErr = <-errc:
	}
	cancel()
	shutCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := httpSrv.Shutdown(shutCtx); err != nil && firstErr == nil {
		firstErr = err
	}
	if errors.Is(firstErr, http.ErrServerClosed) || errors.Is(firstErr, context.Canceled) {
		firstErr = nil
	}
	return firstErr
}

// connect returns a config for the API server, the kubectl command that
// reaches it (binary and --kubeconfig; empty when there is no kubeconfig to
// name), and a function that stops whatever connect started. Which API
// server it is, chooseTarget decides; the progress output says which. An
// embedded cluster's process exits and restarts go to sink as global
// controller steps, and the cluster is handed to started for its health.
func connect(ctx context.Context, c config, out io.Writer, sink controller.Sink, started func(*cluster.Cluster), status *startup) (*rest.Config, string, func(), error) {
	t, err := chooseTarget(c, os.Getenv, serviceAccountDir)
	if err != nil {
		return nil, "", nil, err
	}
	fmt.Fprintf(out, "Chose the %s API server: %s\n", t.kind, t.why)
	if t.kind == targetEmbedded {
		return startEmbedded(ctx, c, out, sink, started, status)
	}
	if c.installCRDs {
		if err := controller.InstallCRDs(ctx, t.cfg); err != nil {
			return nil, "", nil, fmt.Errorf("installing the Database CRD: %w", err)
		}
		if err := controller.InstallLearnerPolicies(ctx, t.cfg); err != nil {
			return nil, "", nil, fmt.Errorf("installing the learner policies and the learner code's role (--install-crds=false leaves them to the manifests, controller/config/policy and rbac): %w", err)
		}
		fmt.Fprintln(out, "Installed the Database CRD (databases.db.oplab.dev), the learner policies (oplab-learner-statefulsets, oplab-learner-code) and the learner code's ClusterRole (oplab-code)")
	}
	line := ""
	if t.kind == targetKubeconfig {
		line = fmt.Sprintf("kubectl --kubeconfig %s", c.kubeconfig)
	}
	return t.cfg, line, func() {}, nil
}

// startEmbedded starts the embedded control plane and writes its kubeconfig.
func startEmbedded(ctx context.Context, c config, out io.Writer, sink controller.Sink, started func(*cluster.Cluster), status *startup) (*rest.Config, string, func(), error) {
	crds, err := controller.CRDs()
	if err != nil {
		return nil, "", nil, err
	}
	if err := provision(ctx, out, status); err != nil {
		return nil, "", nil, err
	}
	if st := status.load(); st.Phase != starting.Starting {
		status.set(starting.Status{Phase: starting.Starting, Began: time.Now()})
	}
	childLog, closeLog, err := openControlPlaneLog(c.controlPlaneLog, out)
	if err != nil {
		return nil, "", nil, err
	}
	// The cluster outlives ctx on purpose: a signal cancels ctx, and the
	// returned stop function, deferred by run, stops the cluster only after
	// the web server and the controller, so nothing talks to a dead API server.
	opts := cluster.Options{
		Mode: c.mode, Log: out, ChildLog: childLog, LogPath: c.controlPlaneLog, CRDs: crds,
		OnEvent: func(e cluster.Event) { sink.Emit(controlPlaneStep(e)) },
	}
	if !c.ephemeral {
		opts.DataDir = c.dataDir
		fmt.Fprintf(out, "Cluster data is kept in %s (--ephemeral to keep none)\n", c.dataDir)
	}
	cl, err := cluster.Start(context.WithoutCancel(ctx), opts)
	if err != nil {
		closeLog()
		return nil, "", nil, fmt.Errorf("starting the embedded cluster: %w", err)
	}
	started(cl)
	status.set(starting.Status{Phase: starting.Connecting, Began: time.Now()})
	// The learner policies let a learner's kubectl patch a StatefulSet's
	// metadata and nothing else (without it their Role's patch would
	// reach the Pod template), and hold a learner's own code to the
	// engines' images; the code's ClusterRole comes with them.
	if err := controller.InstallLearnerPolicies(ctx, cl.Config()); err != nil {
		_ = cl.Stop()
		closeLog()
		return nil, "", nil, fmt.Errorf("installing the learner policies on the embedded cluster: %w", err)
	}
	if from, to := cl.PortMoved(); from != 0 {
		// Learners' kubeconfigs from before the restart name the old port;
		// every viewer is told (the step stays in the catch-up) to fetch
		// a new one.
		msg := fmt.Sprintf("kube-apiserver's port %d was taken by another program, so it now serves on %d: download your kubeconfig again (the one from before this restart no longer connects)", from, to)
		fmt.Fprintln(out, msg)
		sink.Emit(controller.Step{
			Time: time.Now(), Type: controller.StepController,
			Object: controller.ObjectRef{Kind: "ControlPlane", Name: "kube-apiserver"},
			Phase:  "control-plane-moved", Message: msg,
		})
	}
	stop := func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "oplab: stopping the embedded cluster:", err)
		}
		closeLog()
	}
	line := ""
	if c.writeKubeconfig != "" {
		if err := cl.WriteKubeconfig(c.writeKubeconfig); err != nil {
			stop()
			return nil, "", nil, fmt.Errorf("writing --write-kubeconfig %s: %w", c.writeKubeconfig, err)
		}
		line = fmt.Sprintf("%s --kubeconfig %s", cl.KubectlPath(), c.writeKubeconfig)
	}
	return cl.Config(), line, stop, nil
}

// provision builds the control plane's missing binaries, if any (a first
// run on a machine), reporting each to status and out.
func provision(ctx context.Context, out io.Writer, status *startup) error {
	dir, err := cluster.AssetsDir()
	if err != nil {
		return err
	}
	if len(cluster.MissingBinaries(dir)) == 0 {
		return nil
	}
	fmt.Fprintf(out, "Building the Kubernetes v%s control plane from source into %s (a first run: about 11 minutes on 2 cores); the course pages are served meanwhile\n",
		cluster.KubernetesVersion, dir)
	err = cluster.Provision(ctx, cluster.ProvisionOptions{Dir: dir, Report: func(p cluster.BuildProgress) {
		status.building(p)
		if !p.Done {
			fmt.Fprintf(out, "[%d/%d] building %s\n", p.Built+1, len(p.Names), p.Building())
		}
	}})
	if err != nil {
		return fmt.Errorf("building the control plane (make controlplane runs the same build in a terminal): %w", err)
	}
	fmt.Fprintf(out, "Control plane built in %s\n", time.Since(status.load().Began).Round(time.Second))
	return nil
}

// controlPlaneStep turns a control-plane event into the global controller
// step every viewer receives: object {kind ControlPlane, name: the process},
// phase control-plane-down, -restarted or -failed, the sentence in message
// and the exit status in error.
func controlPlaneStep(e cluster.Event) controller.Step {
	return controller.Step{
		Time:    time.Now(),
		Type:    controller.StepController,
		Object:  controller.ObjectRef{Kind: "ControlPlane", Name: e.Process},
		Phase:   string(e.Phase),
		Message: e.Message,
		Error:   e.Status,
	}
}

// openControlPlaneLog opens (truncating) the file that receives the control
// plane's output; with no path, the output goes to out like the progress.
func openControlPlaneLog(path string, out io.Writer) (io.Writer, func(), error) {
	if path == "" {
		return out, func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating the folder of --control-plane-log %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening --control-plane-log: %w", err)
	}
	fmt.Fprintf(out, "Control-plane output goes to %s\n", path)
	return f, func() { f.Close() }, nil
}

// readyTimeout bounds a /readyz check: a frozen API server (SIGSTOP, or
// one swapping) must read as not ready at once, not after the client's
// own timeouts.
const readyTimeout = time.Second

// readiness answers /readyz: the API server answers and the CRD is
// established, so oplab can serve its pages. It says nothing about the
// controller: the instructor stops it on purpose, for everyone, and the
// pages say so; were it part of readiness, a Kubernetes readiness probe
// would take oplab out of its Service, site and all.
type readiness struct {
	rest    rest.Interface
	client  client.Reader
	cluster interface{ Healthy() error } // the embedded cluster; nil with --kubeconfig
}

func newReadiness(cfg *rest.Config) (*readiness, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return &readiness{rest: dc.RESTClient(), client: cl}, nil
}

func (r *readiness) check(ctx context.Context) error {
	if r.cluster != nil {
		if err := r.cluster.Healthy(); err != nil {
			return fmt.Errorf("control plane: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := r.rest.Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return fmt.Errorf("api server unreachable: %w", err)
	}
	return r.checkCRD(ctx)
}

// checkCRD reports whether the Database CRD is installed and established.
func (r *readiness) checkCRD(ctx context.Context) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := r.client.Get(ctx, client.ObjectKey{Name: databasesCRD}, &crd); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the Database CRD %s is not installed (oplab installs it again within seconds where it may; otherwise run %s)", databasesCRD, crdApplyLine)
		}
		return fmt.Errorf("reading the Database CRD %s: %w", databasesCRD, permission.Explain(err))
	}
	if !crdEstablished(&crd) {
		return fmt.Errorf("the Database CRD %s is not established yet", databasesCRD)
	}
	return nil
}

// databasesCRD is the name of oplab's CRD.
const databasesCRD = "databases.db.oplab.dev"

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
