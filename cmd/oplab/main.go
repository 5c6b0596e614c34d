// Command oplab is the operator lab: it starts (or connects to) a Kubernetes
// API server, runs the Database controller against it, and serves the lab,
// where every reconcile streams live to the browser.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/web/kubectl"
)

func main() {
	// `oplab sandbox` is the child that runs a learner's reconciler
	// (controller/sandbox): oplab starts it itself, never a user.
	if len(os.Args) == 2 && os.Args[1] == sandbox.ChildArg {
		os.Exit(sandbox.RunChild(os.Stdin, os.Stdout))
	}
	// `oplab kubectl` runs one learner's command of the lab's terminal
	// (web/kubectl), and `oplab LIVE MERGED oplab-diff` is the diff its
	// kubectl diff starts: oplab starts both itself, never a user.
	if len(os.Args) == 2 && os.Args[1] == kubectl.ChildArg {
		os.Exit(kubectl.RunChild(os.Stdin, os.Stdout))
	}
	if len(os.Args) == 4 && os.Args[3] == kubectl.DiffArg {
		os.Exit(kubectl.RunDiff(os.Args[1], os.Args[2], os.Stdout))
	}
	cluster.TuneGC()
	os.Exit(runMain())
}

// runMain returns the exit code instead of calling os.Exit itself, so that
// every deferred cleanup in run (the control plane above all) has run first.
func runMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "oplab:", err)
		return 1
	}
	return 0
}

// usageHeader opens `oplab --help`.
const usageHeader = `oplab — the operator lab.

With no --kubeconfig, oplab starts the pinned control plane (etcd,
kube-apiserver and, in full mode, kube-controller-manager, kube-scheduler and
kwok) as child processes, which stop when oplab stops, and restarts any of
them that dies. Run from its repository on a machine where the control plane
is not built yet, it builds it first (as 'make controlplane' does), serving
the course pages meanwhile and saying on the lab page how far the build is. The
cluster's data stays in --data-dir between runs (--ephemeral: none kept).
With --kubeconfig (or KUBECONFIG) it runs against that cluster instead.

Flags:
`

func usage(fs *flag.FlagSet, w io.Writer) func() {
	return func() {
		fmt.Fprint(w, usageHeader)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
