// Package cluster runs the embedded Kubernetes control plane oplab teaches
// against: etcd and kube-apiserver through controller-runtime's envtest and,
// in full mode, kube-controller-manager, kube-scheduler and kwok as child
// processes, with one fake Node that kwok keeps Ready.
//
// Every process it starts dies with oplab: Stop ends them in order, a
// parent-death signal ends them if oplab is killed outright, and Reclaim
// (run by every Start) removes whatever a killed oplab still left behind.
// While the cluster runs, a supervisor notices any process that exits, says
// so (Options.OnEvent) and starts it again on the same data and ports.
//
// The data (etcd's) lives in Options.DataDir, kept between runs and locked
// against a second cluster, or, when that is empty, in the runtime dir
// removed at Stop. etcd accepts only kube-apiserver, by client certificate.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// LogPath names where ChildLog writes, for the messages that point a
	// reader at a dead process's output ("" when it goes to Log).
	LogPath string
	// CRDs are installed (by envtest) before Start returns.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// DataDir keeps the cluster's data (etcd's above all) between runs:
	// a cluster started again on the same DataDir has every object the
	// last one had. One cluster at a time may use it (Start fails with
	// ErrDataDirInUse otherwise). "" means ephemeral: the data lives in
	// the runtime dir and is removed by Stop. See DefaultDataDir.
	DataDir string
	// OnEvent, when set, is told (from the supervisor's goroutine; it must
	// not block) when a process exits after Start, is restarted, or cannot
	// be, so that a viewer can be told the control plane is down.
	OnEvent func(Event)

	// ports hands out the ports a start tries; its zero value hands out
	// free ones. The package's tests set it to hand out a taken port, each
	// for its own start, so that they can run side by side.
	ports portSource
}

// portSource picks the ports a start tries, and says how many sets of
// ports it tries before giving up.
type portSource struct {
	etcd, apiserver func() (int, error)
	attempts        int
}

// orFree fills what p leaves unset: free ports, three tries.
func (p portSource) orFree() portSource {
	if p.etcd == nil {
		p.etcd = freePort
	}
	if p.apiserver == nil {
		p.apiserver = freePort
	}
	if p.attempts == 0 {
		p.attempts = 3
	}
	return p
}

// Cluster is a running embedded control plane. Its methods are safe for
// concurrent use.
type Cluster struct {
	mode    Mode
	dir     string // this cluster's runtime dir; holds every file it writes but the data
	data    string // the data folder: DataDir, or a folder in dir when ephemeral
	lock    *os.File
	kubectl string
	cfg     *rest.Config
	log     *logger
	logPath string
	onEvent func(Event)

	env      *envtest.Environment
	etcdTLS  etcdTLS
	etcdURL  string // etcd's client port (TLS with client certificates)
	serving  *servingState
	spawner  *spawner
	commands map[string]command // how to start kcm, the scheduler and kwok again

	// mu guards the process lists, which the supervisor changes when it
	// restarts a process.
	mu          sync.Mutex
	envtestPIDs []procRef // etcd and kube-apiserver, found after envtest started them
	children    []*child  // the scheduler, kwok and kcm, in start order
	down        string    // the process being restarted, if any

	quit      chan struct{} // closed by Stop: the supervisor returns
	superDone chan struct{} // closed when the supervisor has returned; nil until it runs
	failed    chan struct{} // closed when a process died and could not be restarted
	failErr   error         // why, set before failed is closed

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
		data:    opts.DataDir,
		kubectl: filepath.Join(assets, "kubectl"),
		log:     log,
		logPath: opts.LogPath,
		onEvent: opts.OnEvent,
		spawner: newSpawner(),
		quit:    make(chan struct{}),
		failed:  make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if c.data == "" {
		c.data = filepath.Join(dir, "data")
	}
	defer func() {
		if retErr != nil {
			_ = c.Stop()
		}
	}()
	if c.lock, err = lockDataDir(c.data); err != nil {
		return nil, err
	}

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

	c.superviseAll()

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
// a wrapper script that gives it a parent-death signal and records how it
// exits. etcd serves its client and peer ports over TLS and accepts only
// certificates of the cluster's own CA, which kube-apiserver presents.
func (c *Cluster) startAPIServer(assets string, opts Options) error {
	etcdDir := filepath.Join(c.data, etcdDataDir)
	certDir := filepath.Join(c.dir, "apiserver")
	for _, d := range []string{etcdDir, certDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating cluster dir: %w", err)
		}
	}
	var err error
	if c.etcdTLS, err = newEtcdTLS(filepath.Join(c.dir, "etcd-tls")); err != nil {
		return err
	}
	saKey, saPub, err := serviceAccountKeys(c.data)
	if err != nil {
		return err
	}
	picks := opts.ports.orFree()
	serving, err := loadServing(c.data, picks.apiserver)
	if err != nil {
		return err
	}
	if err := serving.writeServingCert(certDir); err != nil {
		return err
	}
	c.serving = serving
	binDir := filepath.Join(c.dir, "bin")
	etcdPath, err := writeWrapper(binDir, filepath.Join(assets, nameEtcd), c.exitFile(nameEtcd), childGOGC)
	if err != nil {
		return err
	}
	apiserverPath, err := writeWrapper(binDir, filepath.Join(assets, nameAPIServer), c.exitFile(nameAPIServer), childGOGC)
	if err != nil {
		return err
	}
	// etcd's ports, and kube-apiserver's on a new data folder, are found
	// free and then closed before the process binds them; meanwhile a busy
	// machine's outgoing connections, which take their local ports from the
	// same range, or another cluster starting, can take one (a CI run saw
	// every one of envtest's five tries fail, as each reuses the ports). So
	// a start whose etcd or kube-apiserver could not bind is tried again on
	// new ports.
	//
	// etcd binds its metrics port only after it has written its new member
	// to an empty data folder; a try that fails there leaves a member that,
	// restarted on other ports, may never elect itself (RAFT NO LEADER until
	// envtest gives up). So a folder that was empty at this start is
	// emptied again before the next try; one that held a cluster before
	// holds a whole member, which restarts on any ports.
	fresh, err := isEmptyDir(etcdDir)
	if err != nil {
		return err
	}
	var etcdSaid, apiSaid tailWriter
	etcdOut := etcdSaid.teeTo(c.log.prefixed(nameEtcd))
	apiOut := apiSaid.teeTo(c.log.prefixed(nameAPIServer))
	for attempt := 1; ; attempt++ {
		etcdSaid.Reset()
		apiSaid.Reset()
		var ports [3]int
		for i := range ports {
			if ports[i], err = picks.etcd(); err != nil {
				return err
			}
		}
		clientURL := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		c.etcdURL = clientURL
		peerURL := fmt.Sprintf("https://127.0.0.1:%d", ports[1])

		// Our own cert dir (rather than envtest's k8s_test_framework_* temp
		// dirs) keeps every file under c.dir, which Stop and Reclaim remove,
		// and puts c.dir on the children's command lines (etcd's through its
		// certificates, even when its data lives elsewhere), which is how
		// Reclaim recognises them.
		etcd := &envtest.Etcd{
			Path:    etcdPath,
			DataDir: etcdDir,
			// envtest waits for etcd with a plain HTTP GET of URL/health, and
			// passes URL to kube-apiserver by default. So URL names etcd's
			// metrics listener, which serves health and metrics but no keys,
			// and the flags below move the client port to TLS.
			URL: &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2])},
			Out: etcdOut,
			Err: etcdOut,
		}
		etcd.Configure().
			Set("listen-metrics-urls", etcd.URL.String()).
			Set("listen-client-urls", clientURL).
			Set("advertise-client-urls", clientURL).
			Set("client-cert-auth", "true").
			Set("trusted-ca-file", c.etcdTLS.CA).
			Set("cert-file", c.etcdTLS.ServerCert).
			Set("key-file", c.etcdTLS.ServerKey).
			// A single member needs no peers, but etcd always listens for
			// them: that port is closed the same way.
			Set("listen-peer-urls", peerURL).
			Set("initial-advertise-peer-urls", peerURL).
			Set("initial-cluster", "default="+peerURL).
			Set("peer-client-cert-auth", "true").
			Set("peer-trusted-ca-file", c.etcdTLS.CA).
			Set("peer-cert-file", c.etcdTLS.ServerCert).
			Set("peer-key-file", c.etcdTLS.ServerKey)
		if opts.DataDir != "" {
			// envtest turns fsync off, which is fine for data removed at
			// Stop; data meant to outlive a power cut needs it on.
			etcd.Configure().Set("unsafe-no-fsync", "false")
		}

		c.env = &envtest.Environment{
			BinaryAssetsDirectory: assets,
			// envtest's 20 s per try is too short on a loaded 2-core machine
			// (load 20: kube-apiserver missed it five times in a row, and every
			// cluster test of a package failed); a try that works is as quick.
			ControlPlaneStartTimeout: time.Minute,
			ControlPlane: envtest.ControlPlane{
				Etcd: etcd,
				APIServer: &envtest.APIServer{
					Path:    apiserverPath,
					CertDir: certDir,
					// The port and both CAs come from the data folder, so
					// kubeconfigs written before a restart still work.
					SecureServing: envtest.SecureServing{
						ListenAddr: envtest.ListenAddr{Address: "127.0.0.1", Port: strconv.Itoa(serving.Port)},
						CA:         serving.servingCA.certPEM,
						Authn:      &keptAuthn{ca: serving.clientCA},
					},
					Out: apiOut,
					Err: apiOut,
				},
				KubectlPath: c.kubectl,
			},
			ControlPlaneStopTimeout: childStopGrace,
		}
		api := c.env.ControlPlane.APIServer.Configure()
		api.Set("etcd-servers", clientURL).
			Set("etcd-cafile", c.etcdTLS.CA).
			Set("etcd-certfile", c.etcdTLS.ClientCert).
			Set("etcd-keyfile", c.etcdTLS.ClientKey).
			// The signing key and a fixed issuer live in the data folder, so
			// a token issued before a restart is still accepted after it.
			Set("service-account-key-file", saPub).
			Set("service-account-signing-key-file", saKey).
			Set("service-account-issuer", saIssuer)
		// API Priority and Fairness classifies every request and queues it by
		// flow: protection for a cluster shared by many tenants. This one has
		// a single user and a handful of clients, and the plain in-flight
		// limits (--max-requests-inflight, 400 and 200 mutating) still cap
		// overload. Off, the API server (the busiest process by far) spent
		// ~10% less CPU on 1,000 new Databases, and all were Ready in 29 s
		// rather than 31 s.
		api.Set("enable-priority-and-fairness", "false")
		if opts.Mode == ModeMinimal {
			// Full mode installs the CRDs itself, while kwok starts.
			c.env.CRDs = opts.CRDs
		}

		c.spawner.do(func() { c.cfg, err = c.env.Start() })
		// envtest writes a webhook serving certificate into a new folder in
		// the system's temporary folder at every Start, and removes it only
		// at Stop: every killed oplab left one. oplab serves no webhook, so
		// the folder goes at once (Stop then finds nothing to remove).
		_ = os.RemoveAll(c.env.WebhookInstallOptions.LocalServingCertDir)
		// Record etcd's and kube-apiserver's pids even when Start failed:
		// envtest may have left one running.
		if serr := c.recordEnvtestChildren(); serr != nil && err == nil {
			err = serr
		}
		if err == nil {
			if serving.MovedFrom != 0 {
				c.log.printf("kube-apiserver's port %d is taken; it serves on %d now, so kubeconfigs written before must be downloaded again", serving.MovedFrom, serving.Port)
			}
			return nil
		}
		said := etcdSaid.String()
		if attempt < picks.attempts && strings.Contains(said, "address already in use") {
			c.log.printf("etcd could not bind its ports (try %d of %d); trying others", attempt, picks.attempts)
			_ = c.env.Stop()
			if fresh {
				if err := emptyDir(etcdDir); err != nil {
					return err
				}
			}
			continue
		}
		if apiSays := apiSaid.String(); strings.Contains(apiSays, "address already in use") {
			if attempt < picks.attempts {
				c.log.printf("kube-apiserver could not bind port %d (try %d of %d); trying another", serving.Port, attempt, picks.attempts)
				_ = c.env.Stop()
				if err := serving.takeFreePort(); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("starting etcd and kube-apiserver: %w; kube-apiserver said: %s", err, lastLineWith(apiSays, "address already in use"))
		}
		if said != "" {
			return fmt.Errorf("starting etcd and kube-apiserver: %w; etcd said: %s", err, worstLine(said))
		}
		return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
}

// isEmptyDir reports whether dir has no entries.
func isEmptyDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("reading etcd's data folder: %w", err)
	}
	return len(entries) == 0, nil
}

// emptyDir removes what dir holds and keeps dir.
func emptyDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("emptying etcd's data folder: %w", err)
	}
	return os.MkdirAll(dir, 0o700)
}

// lastLineWith is the last of s's lines that contains sub.
func lastLineWith(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

// worstLine is the last of etcd's lines logged at level fatal, panic or
// error (its reason for exiting) as "msg: error", or its last line.
func worstLine(s string) string {
	lines := strings.Split(s, "\n")
	for _, level := range []string{"fatal", "panic", "error"} {
		for i := len(lines) - 1; i >= 0; i-- {
			var l struct{ Level, Msg, Error string }
			if json.Unmarshal([]byte(lines[i]), &l) == nil && l.Level == level {
				return strings.TrimSuffix(l.Msg+": "+l.Error, ": ")
			}
		}
	}
	return lines[len(lines)-1]
}

// exitFile is where name's wrapper writes how name exited.
func (c *Cluster) exitFile(name string) string {
	return filepath.Join(c.dir, name+".exit")
}

// startLifecycle creates the kwok Node, installs the CRDs while the
// scheduler and kwok start, then starts kcm, and waits until the Node is
// schedulable.
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
	if err := createNode(ctx, cs); err != nil && !apierrors.IsAlreadyExists(err) {
		// A cluster started again on its data finds the Node it made.
		return err
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

	c.commands = map[string]command{}
	for _, cmd := range cmds {
		if cmd.name == nameKCM {
			// kcm's quota controller learns the resources it can count
			// when it starts, and rediscovers only every 30 s; started
			// before the Database CRD exists, it would count a learner's
			// Databases as 0 meanwhile, and their quota would let a sixth
			// one in. The scheduler and kwok need no CRD and start first.
			continue
		}
		if err := c.spawn(cmd); err != nil {
			return err
		}
	}
	if err := <-crdDone; err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	for _, cmd := range cmds {
		if cmd.name != nameKCM {
			continue
		}
		if err := c.spawn(cmd); err != nil {
			return err
		}
	}
	return waitNodeSchedulable(ctx, cs, c.children, nodeReadyLimit)
}

// spawn starts one lifecycle process, remembering how, so the supervisor
// can start it again.
func (c *Cluster) spawn(cmd command) error {
	cmd.env = append(cmd.env, childGOGC)
	c.commands[cmd.name] = cmd
	ch, err := c.spawner.start(cmd.name, cmd.path, cmd.args, cmd.env, c.log)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.children = append(c.children, ch)
	c.mu.Unlock()
	return c.writeState()
}

// Config returns a copy of the admin (system:masters) REST config.
func (c *Cluster) Config() *rest.Config {
	return rest.CopyConfig(c.cfg)
}

// PortMoved reports, when the data folder's API server served on another
// port before this start and something else holds that port now, the old
// port and the new: every kubeconfig written before names the old one and
// must be written (or downloaded) again. It returns 0, 0 otherwise.
func (c *Cluster) PortMoved() (from, to int) {
	if c.serving == nil || c.serving.MovedFrom == 0 {
		return 0, 0
	}
	return c.serving.MovedFrom, c.serving.Port
}

// DataDir is the folder holding the cluster's data: Options.DataDir, or
// one inside the runtime dir (removed by Stop) when that was "".
func (c *Cluster) DataDir() string {
	return c.data
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
// period), removes the cluster's runtime dir (and so an ephemeral cluster's
// data) and releases the data folder. kcm, the scheduler and kwok
// stop first so they do not log errors about an API server going away, then
// kube-apiserver, then etcd.
// Calling Stop again returns the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		defer close(c.stopped)
		began := time.Now()
		// The supervisor goes first, so that nothing restarts what Stop
		// is stopping, and no exit below reads as a surprise.
		close(c.quit)
		if c.superDone != nil {
			<-c.superDone
		}
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
		// Only once etcd has stopped may another cluster open the data.
		if c.lock != nil {
			c.lock.Close()
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
