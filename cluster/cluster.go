// Package cluster runs the embedded Kubernetes control plane oplab teaches
// against: etcd and kube-apiserver through controller-runtime's envtest and,
// in full mode, kube-controller-manager, kube-scheduler and kwok as child
// processes, with one fake Node that kwok keeps Ready.
//
// Every process it starts dies with oplab: Stop ends them in order, a
// parent-death signal ends them if oplab is killed outright, and Reclaim
// (run by every Start) removes whatever a killed oplab still left behind.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Mode selects which control-plane processes a Cluster runs.
type Mode string

const (
	// ModeFull runs etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok, plus one kwok-managed Node, so Pods get
	// scheduled, become Ready and are garbage-collected as in a real cluster.
	ModeFull Mode = "full"
	// ModeMinimal runs etcd and kube-apiserver only: enough for tests of API
	// behaviour (generation, status, finalizers), and fast to start.
	ModeMinimal Mode = "minimal"
)

// NodeName is the name of the kwok-managed Node a full-mode cluster creates.
const NodeName = "kwok-node-0"

// Options configures Start.
type Options struct {
	// Mode defaults to ModeFull.
	Mode Mode
	// AssetsDir holds the control-plane binaries; "" means FindAssets().
	AssetsDir string
	// Log receives progress lines and, unless ChildLog is set, the child
	// processes' output, each output line prefixed with the process name.
	// nil discards both.
	Log io.Writer
	// ChildLog, when set, receives the child processes' output instead of
	// Log, so a terminal can show progress while a file keeps the noise.
	ChildLog io.Writer
	// CRDs are installed (by envtest) before Start returns.
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// Cluster is a running embedded control plane. Its methods are safe for
// concurrent use.
type Cluster struct {
	mode    Mode
	dir     string // this cluster's temp dir; holds every file it writes
	kubectl string
	cfg     *rest.Config
	log     *logger

	env         *envtest.Environment
	envtestPIDs []procRef // etcd and kube-apiserver, found after envtest started them
	spawner     *spawner
	children    []*child // kcm, scheduler and kwok, in start order

	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{} // closed when Stop has finished
}

// The names by which the children appear in logs, the state file and tests.
const (
	nameEtcd       = "etcd"
	nameAPIServer  = "kube-apiserver"
	nameKCM        = "kube-controller-manager"
	nameScheduler  = "kube-scheduler"
	nameKwok       = "kwok"
	nodeReadyLimit = time.Minute // how long kwok and kcm get to make the Node schedulable
)

// Start starts a cluster and returns once the API server serves requests
// (with opts.CRDs established) and, in full mode, the kwok Node is Ready and
// untainted, so a Pod created next is scheduled at once. Cancelling ctx
// stops the cluster. During Start, envtest cannot be interrupted, so a
// cancelled Start returns once etcd and kube-apiserver are up, after
// stopping them again.
func Start(ctx context.Context, opts Options) (_ *Cluster, retErr error) {
	if opts.Mode == "" {
		opts.Mode = ModeFull
	}
	if opts.Mode != ModeFull && opts.Mode != ModeMinimal {
		return nil, fmt.Errorf("unknown cluster mode %q", opts.Mode)
	}
	assets := opts.AssetsDir
	if assets == "" {
		var err error
		if assets, err = FindAssets(); err != nil {
			return nil, err
		}
	} else if missing := MissingBinaries(assets); len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s missing %v", ErrNotProvisioned, assets, missing)
	}

	// envtest writes the created objects back into the CRDs it installs;
	// copies leave the caller's CRDs untouched, so clusters started at the
	// same time (by parallel tests, say) can share them without a data race.
	crds := make([]*apiextensionsv1.CustomResourceDefinition, len(opts.CRDs))
	for i, crd := range opts.CRDs {
		crds[i] = crd.DeepCopy()
	}
	opts.CRDs = crds

	log := newLogger(opts.Log, opts.ChildLog)
	if reclaimed, err := Reclaim(); err != nil {
		// A leftover we cannot remove is no reason not to start.
		log.printf("Could not reclaim every leftover cluster: %v", err)
	} else if len(reclaimed) > 0 {
		log.printf("Reclaimed %d cluster(s) left by an oplab that died", len(reclaimed))
	}

	dir, err := newStateDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		mode:    opts.Mode,
		dir:     dir,
		kubectl: filepath.Join(assets, "kubectl"),
		log:     log,
		spawner: newSpawner(),
		stopped: make(chan struct{}),
	}
	defer func() {
		if retErr != nil {
			_ = c.Stop()
		}
	}()

	began := time.Now()
	if err := c.startAPIServer(assets, opts); err != nil {
		return nil, err
	}
	log.printf("Started etcd and kube-apiserver in %s", since(began))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting the cluster: %w", err)
	}

	if opts.Mode == ModeFull {
		began := time.Now()
		if err := c.startLifecycle(ctx, assets, opts.CRDs); err != nil {
			return nil, err
		}
		log.printf("Started kube-controller-manager, kube-scheduler and kwok; node %s Ready in %s", NodeName, since(began))
	}

	// Stop on ctx cancellation, and let the goroutine end with the cluster.
	go func() {
		select {
		case <-ctx.Done():
			if err := c.Stop(); err != nil {
				c.log.printf("Stopping the cluster: %v", err)
			}
		case <-c.stopped:
		}
	}()
	return c, nil
}

// startAPIServer starts etcd and kube-apiserver through envtest, each behind
// a wrapper script that gives it a parent-death signal.
func (c *Cluster) startAPIServer(assets string, opts Options) error {
	etcdDir := filepath.Join(c.dir, "etcd")
	certDir := filepath.Join(c.dir, "apiserver")
	for _, d := range []string{etcdDir, certDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("creating cluster dir: %w", err)
		}
	}
	binDir := filepath.Join(c.dir, "bin")
	etcdPath, err := writeWrapper(binDir, filepath.Join(assets, "etcd"), childGOGC)
	if err != nil {
		return err
	}
	apiserverPath, err := writeWrapper(binDir, filepath.Join(assets, "kube-apiserver"), childGOGC)
	if err != nil {
		return err
	}

	// Our own data and cert dirs (rather than envtest's k8s_test_framework_*
	// temp dirs) keep every file under c.dir, which Stop and Reclaim remove,
	// and put c.dir on the children's command lines, which is how Reclaim
	// recognises them.
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		ControlPlane: envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:    etcdPath,
				DataDir: etcdDir,
				Out:     c.log.prefixed(nameEtcd),
				Err:     c.log.prefixed(nameEtcd),
			},
			APIServer: &envtest.APIServer{
				Path:    apiserverPath,
				CertDir: certDir,
				Out:     c.log.prefixed(nameAPIServer),
				Err:     c.log.prefixed(nameAPIServer),
			},
			KubectlPath: c.kubectl,
		},
		ControlPlaneStopTimeout: childStopGrace,
	}
	// API Priority and Fairness classifies every request and queues it by
	// flow: protection for a cluster shared by many tenants. This one has
	// a single user and a handful of clients, and the plain in-flight
	// limits (--max-requests-inflight, 400 and 200 mutating) still cap
	// overload. Off, the API server (the busiest process by far) spent
	// ~10% less CPU on 1,000 new Databases, and all were Ready in 29 s
	// rather than 31 s.
	c.env.ControlPlane.APIServer.Configure().Set("enable-priority-and-fairness", "false")
	if opts.Mode == ModeMinimal {
		// Full mode installs the CRDs itself, while kwok starts.
		c.env.CRDs = opts.CRDs
	}

	c.spawner.do(func() { c.cfg, err = c.env.Start() })
	// Record etcd's and kube-apiserver's pids even when Start failed: envtest
	// may have left one running.
	if serr := c.recordEnvtestChildren(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	return nil
}

// startLifecycle starts kcm, the scheduler and kwok, creates the kwok Node
// and installs the CRDs meanwhile, and waits until the Node is schedulable.
func (c *Cluster) startLifecycle(ctx context.Context, assets string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	cs, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	cmds, err := c.lifecycleCommands(assets)
	if err != nil {
		return err
	}

	// The Node goes in first so that kwok finds it in its first list.
	if err := createNode(ctx, cs); err != nil {
		return err
	}
	for _, cmd := range cmds {
		cmd.env = append(cmd.env, childGOGC)
		ch, err := c.spawner.start(cmd.name, cmd.path, cmd.args, cmd.env, c.log)
		if err != nil {
			return err
		}
		c.children = append(c.children, ch)
		if err := c.writeState(); err != nil {
			return err
		}
	}

	crdDone := make(chan error, 1)
	go func() {
		if len(crds) == 0 {
			crdDone <- nil
			return
		}
		_, err := envtest.InstallCRDs(c.cfg, envtest.CRDInstallOptions{CRDs: crds})
		crdDone <- err
	}()

	nodeErr := waitNodeSchedulable(ctx, cs, c.children, nodeReadyLimit)
	if err := <-crdDone; err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nodeErr
}

// Config returns a copy of the admin (system:masters) REST config.
func (c *Cluster) Config() *rest.Config {
	return rest.CopyConfig(c.cfg)
}

// KubectlPath is the kubectl binary matching the control-plane version.
func (c *Cluster) KubectlPath() string {
	return c.kubectl
}

// Mode reports which processes the cluster runs.
func (c *Cluster) Mode() Mode {
	return c.mode
}

// Stop stops every child process (SIGTERM, then SIGKILL after a grace
// period) and removes the cluster's temp dir. kcm, the scheduler and kwok
// stop first so they do not log errors about an API server going away, then
// kube-apiserver, then etcd.
// Calling Stop again returns the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		defer close(c.stopped)
		began := time.Now()
		// kcm, the scheduler and kwok depend on nothing but the API
		// server, so they stop side by side.
		errs := make([]error, len(c.children))
		var wg sync.WaitGroup
		for i, ch := range c.children {
			wg.Go(func() { errs[i] = ch.stop(childStopGrace) })
		}
		wg.Wait()
		if c.env != nil {
			if err := c.env.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping etcd and kube-apiserver: %w", err))
			}
		}
		// Ending the spawner's thread also delivers the parent-death signal
		// to anything the steps above failed to stop.
		c.spawner.close()
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing cluster dir: %w", err))
		}
		c.stopErr = errors.Join(errs...)
		if c.stopErr == nil {
			c.log.printf("Stopped the cluster in %s", since(began))
		}
		c.log.flush()
	})
	return c.stopErr
}

// GCPercent lets the heaps of oplab's processes, the control plane's and
// oplab's own (see TuneGC), grow to three times their live size before a
// collection (Go's default is twice): under load the processes share two
// cores, and collecting less often left more of them for the work.
//   - Control plane: 1,000 new Databases were Ready in 29 s rather than
//     31 s; kube-apiserver peaked at ~840 MB RSS rather than ~650 MB, the
//     whole control plane at ~1.4 GB rather than ~1.2 GB.
//   - oplab: its collector's CPU during 100 new Databases fell from about
//     1.0 s to 0.45 s, the Databases were Ready about 15% sooner, and 2,000
//     connected viewers no longer cost the collector more.
const GCPercent = 200

var childGOGC = fmt.Sprintf("GOGC=%d", GCPercent)

// TuneGC sets this process's collector to GCPercent, unless the GOGC
// environment variable chose otherwise; it says whether it did.
func TuneGC() bool {
	if os.Getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(GCPercent)
	return true
}

// since formats the time elapsed since t for progress lines.
func since(t time.Time) time.Duration {
	return time.Since(t).Round(10 * time.Millisecond)
}
