package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/session"
)

// config is everything the flags decide.
type config struct {
	addr            string
	kubeconfig      string
	installCRDs     bool
	mode            cluster.Mode
	writeKubeconfig string
	controlPlaneLog string
	dataDir         string
	ephemeral       bool
	resync          time.Duration
	maxDatabases    int
	sessionIdle     time.Duration
	sessionIdleNew  time.Duration
	maxSessions     int
	maxCodeRuns     int
	maxPerClient    int
	allowedHosts    []string
	// trustedProxies are the proxies whose X-Forwarded-For names the client.
	trustedProxies []netip.Prefix
	// instructorToken guards /instructor; parseFlags generates one when the
	// flag is not given, so the page is never open.
	instructorToken string
	// joinCode, when set, is what a visitor must give before getting a lab.
	joinCode string
	// publicURL is where learners reach oplab, for the join link and QR.
	publicURL string
	// keepEnded is how long an ended session's results and export stay.
	keepEnded       time.Duration
	namespacePrefix string
	kubeconfigHost  string
	// allNamespaces lets the controller and the lab's watcher act on every
	// namespace, not only the instance's (a personal cluster).
	allNamespaces bool
	// namespaceRoles are bound by oplab to itself in each learner namespace.
	namespaceRoles []string
	// imageRegistry is where the engines' images are pulled from.
	imageRegistry string
	// demosDir is an instructor's folder of demo files (--demos); demos are
	// the embedded demos and that folder's, loaded and validated.
	demosDir string
	demos    []demo.Script
}

// parseFlags reads the command line. Errors name the flag at fault; they and
// --help are printed to errOut.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	fs := flag.NewFlagSet("oplab", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = usage(fs, errOut)
	c, err := parseFlagsInto(fs, args)
	var bad invalidFlagError
	if errors.As(err, &bad) {
		// The flag package prints its own parse errors; ours are printed here.
		fmt.Fprintln(errOut, err)
	}
	return c, err
}

// invalidFlagError is a flag value that parsed but makes no sense.
type invalidFlagError struct{ error }

// parseFlagsInto defines every flag on fs, parses args and validates them.
func parseFlagsInto(fs *flag.FlagSet, args []string) (config, error) {
	var c config
	mode := string(cluster.ModeFull)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address the web UI listens on (host:port; port 0 picks a free one)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "run against the cluster in this kubeconfig instead of the embedded one (default $KUBECONFIG)")
	fs.BoolVar(&c.installCRDs, "install-crds", true, "with --kubeconfig, or in a Pod: install or update the Database CRD, the learner policies (controller/config/policy) and the learner code's ClusterRole (controller/config/rbac/code_role.yaml) in that cluster")
	fs.StringVar(&mode, "mode", mode, "embedded cluster mode: full (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok: Pods run and garbage collection works) or minimal (etcd and kube-apiserver only)")
	fs.StringVar(&c.writeKubeconfig, "write-kubeconfig", cluster.DefaultKubeconfigPath(), "embedded cluster: write the admin's kubeconfig (system:masters) for your kubectl here, never for learners (empty: don't)")
	fs.StringVar(&c.controlPlaneLog, "control-plane-log", defaultControlPlaneLog(), "embedded cluster: file that receives the control-plane processes' output (empty: the terminal)")
	fs.StringVar(&c.dataDir, "data-dir", defaultDataDir(), "embedded cluster: folder that keeps the cluster's data (etcd) between runs, so a restart finds every namespace and Database as it was")
	fs.BoolVar(&c.ephemeral, "ephemeral", false, "embedded cluster: keep the data in a fresh temp folder removed at stop instead of --data-dir (every start begins empty)")
	fs.DurationVar(&c.resync, "resync", 30*time.Second, "periodic resync: how long after a successful reconcile the controller looks again")
	fs.IntVar(&c.maxDatabases, "max-databases", 5, "the most Databases one learner's namespace may hold")
	fs.DurationVar(&c.sessionIdle, "session-idle", 2*time.Hour, "a learner's namespace is deleted after this long without a request")
	fs.DurationVar(&c.sessionIdleNew, "session-idle-new", 10*time.Minute, "a session whose browser never came back (no page, stream or form after the first page) is deleted with its namespace after this long")
	fs.IntVar(&c.maxSessions, "max-sessions", 200, "the most lab sessions, and so learner namespaces, at once; when full, the oldest session never used makes room, else the one idle longest once idle 5 minutes, else, once the newcomer's address has asked for 5 minutes, the one idle longest of another address")
	fs.IntVar(&c.maxCodeRuns, "max-code-runs", 40, "the most learners whose own code (the /code page) runs at once, each in a child process of at most 128 MiB beyond its start (about 12 MiB at rest); size it with oplab's memory limit: the shipped Deployment runs 6")
	fs.IntVar(&c.maxPerClient, "max-sessions-per-client", 20, "the most lab sessions one client IP address may hold (0: no limit besides --max-sessions)")
	fs.StringVar(&c.namespacePrefix, "namespace-prefix", labns.NamespacePrefix, "start learner namespaces' names with this (lowercase, ending in a dash); oplab touches only namespaces labelled with its prefix, so several classrooms can share a cluster, one prefix each")
	fs.StringVar(&c.kubeconfigHost, "kubeconfig-server", "", "API server URL the learners' own kubeconfigs name (default: the one oplab uses, as in the admin kubeconfig); set it when learners reach the API server by another address")
	fs.Func("allowed-hosts", "comma-separated host names the web UI answers to besides IP addresses and localhost (for a self-hosted oplab behind a name)", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.allowedHosts = append(c.allowedHosts, h)
			}
		}
		return nil
	})
	fs.Func("trusted-proxies", "comma-separated CIDRs (or IPs) of the proxies in front of oplab, such as the Ingress controller's Pods; only a request from one of them has its client address taken from X-Forwarded-For (the right-most hop not in these CIDRs; a chain that names none is one client of its own, never the proxy), for --max-sessions-per-client and the join code and instructor token throttles (default: none, the peer's address)", func(v string) error {
		p, err := session.ParseTrustedProxies(v)
		if err != nil {
			return err
		}
		c.trustedProxies = append(c.trustedProxies, p...)
		return nil
	})
	fs.BoolVar(&c.allNamespaces, "all-namespaces", false, "the controller reconciles Databases in every namespace and the lab watches every namespace, with a cluster-wide Secret informer (a personal cluster); default: only the namespaces labelled with this instance (--namespace-prefix)")
	fs.Func("namespace-roles", "comma-separated ClusterRoles oplab binds to itself in each learner namespace it creates, so its per-namespace powers (Secrets, tokens, the learner's Role) reach no other namespace (the manifests set oplab-controller,oplab-web); default: none", func(v string) error {
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				c.namespaceRoles = append(c.namespaceRoles, r)
			}
		}
		return nil
	})
	fs.StringVar(&c.imageRegistry, "image-registry", "", "registry (and path) the Databases' images are pulled from, as REGISTRY/postgres:17, for a cluster that pulls through a mirror (default: the short names postgres:17 and mysql:8.4)")
	fs.StringVar(&c.instructorToken, "instructor-token", "", "the token of the /instructor page, which stops and starts the controller for every learner (default: a random one, printed at start in the instructor URL)")
	fs.StringVar(&c.publicURL, "public-url", "", "where learners reach oplab, scheme and host (https://lab.example.com): the join link and its QR code on /instructor name it (default: the address the instructor's browser used)")
	fs.DurationVar(&c.keepEnded, "keep-ended", 24*time.Hour, "how long an ended session's results and lab export are kept (in the class namespace) for the learner and the class export")
	fs.StringVar(&c.joinCode, "join-code", "", "a code visitors must give (on the join form, or ?join=CODE on /lab) before they get a lab namespace; for a self-hosted class (default: none, anyone may start a lab)")
	fs.StringVar(&c.demosDir, "demos", "", "a folder of your own scripted demos (markdown files with front matter, as lessons/content/demos/*.md), offered on /instructor after the embedded ones; each is checked at start (default: the embedded demos only)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, invalidFlagError{fmt.Errorf("unexpected argument %q (oplab takes flags only; see --help)", fs.Arg(0))}
	}
	c.mode = cluster.Mode(mode)
	// A short --session-idle (a demo, a test) shortens the default life of
	// unused sessions with it; only an explicit --session-idle-new longer
	// than --session-idle is an error.
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "session-idle-new" })
	if !explicit && c.sessionIdleNew > c.sessionIdle {
		c.sessionIdleNew = c.sessionIdle
	}
	if err := c.validate(); err != nil {
		return c, invalidFlagError{err}
	}
	// The demos are read now, so a mistake in one stops oplab before it
	// starts a cluster, naming the file, the step and the field.
	demos, err := demo.Load(c.demosDir)
	if err != nil {
		if c.demosDir != "" {
			return c, invalidFlagError{fmt.Errorf("invalid --demos %s: %w", c.demosDir, err)}
		}
		return c, invalidFlagError{err}
	}
	c.demos = demos
	if c.instructorToken == "" {
		c.instructorToken = rand.Text()
	}
	return c, nil
}

func (c config) validate() error {
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		return fmt.Errorf("invalid --addr %q: %w", c.addr, err)
	}
	if c.mode != cluster.ModeFull && c.mode != cluster.ModeMinimal {
		return fmt.Errorf("invalid --mode %q: want %q or %q", c.mode, cluster.ModeFull, cluster.ModeMinimal)
	}
	if c.resync <= 0 {
		return fmt.Errorf("invalid --resync %s: must be positive", c.resync)
	}
	if c.maxDatabases < 1 {
		return fmt.Errorf("invalid --max-databases %d: must be at least 1", c.maxDatabases)
	}
	if t := c.instructorToken; t != "" && (len(t) < 16 || strings.ContainsFunc(t, unicode.IsSpace)) {
		return fmt.Errorf("invalid --instructor-token: want at least 16 characters and no spaces (or leave it out for a random one)")
	}
	if j := c.joinCode; j != "" && (len(j) > 200 || strings.TrimSpace(j) != j || strings.ContainsFunc(j, unicode.IsControl)) {
		return fmt.Errorf("invalid --join-code: want at most 200 characters, no control characters and no spaces at either end")
	}
	if u := c.publicURL; u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || (pu.Path != "" && pu.Path != "/") || pu.RawQuery != "" {
			return fmt.Errorf("invalid --public-url %q: want a scheme and host only, like https://lab.example.com or http://192.0.2.10:8080", u)
		}
	}
	if c.keepEnded < time.Minute {
		return fmt.Errorf("invalid --keep-ended %s: must be at least 1m", c.keepEnded)
	}
	if c.sessionIdle < time.Minute {
		return fmt.Errorf("invalid --session-idle %s: must be at least 1m", c.sessionIdle)
	}
	if c.kubeconfig == "" && !c.ephemeral && c.dataDir == "" {
		return errors.New("invalid --data-dir \"\": name a folder, or pass --ephemeral to keep no data")
	}
	if c.sessionIdleNew < time.Minute || c.sessionIdleNew > c.sessionIdle {
		return fmt.Errorf("invalid --session-idle-new %s: must be at least 1m and at most --session-idle (%s)", c.sessionIdleNew, c.sessionIdle)
	}
	if c.maxSessions < 1 {
		return fmt.Errorf("invalid --max-sessions %d: must be at least 1", c.maxSessions)
	}
	if c.maxCodeRuns < 1 {
		return fmt.Errorf("invalid --max-code-runs %d: must be at least 1", c.maxCodeRuns)
	}
	if c.maxPerClient < 0 || c.maxPerClient > c.maxSessions {
		return fmt.Errorf("invalid --max-sessions-per-client %d: must be 0 (no limit) to --max-sessions (%d)", c.maxPerClient, c.maxSessions)
	}
	if err := labns.ValidatePrefix(c.namespacePrefix); err != nil {
		return err
	}
	if c.kubeconfigHost != "" {
		u, err := url.Parse(c.kubeconfigHost)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("invalid --kubeconfig-server %q: want the API server's URL, such as https://k8s.example.com:6443", c.kubeconfigHost)
		}
	}
	if c.kubeconfig != "" {
		// Like KUBECONFIG, the value may list several files; at least one must exist.
		var firstErr error
		found := false
		for _, p := range filepath.SplitList(c.kubeconfig) {
			if _, err := os.Stat(p); err == nil {
				found = true
			} else if firstErr == nil {
				firstErr = err
			}
		}
		if !found {
			return fmt.Errorf("invalid --kubeconfig: %w", firstErr)
		}
	}
	return nil
}

// defaultDataDir is cluster.DefaultDataDir, or "" (which validate rejects
// unless --ephemeral) when the home folder is unknown.
func defaultDataDir() string {
	dir, err := cluster.DefaultDataDir()
	if err != nil {
		return ""
	}
	return dir
}

// defaultControlPlaneLog keeps the control plane's chatty output out of the
// terminal, next to the kubeconfig in the user's cache folder.
func defaultControlPlaneLog() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "oplab", "control-plane.log")
}
