// Command provision builds the pinned Kubernetes control plane (etcd,
// kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kwok)
// from the Go module proxy and caches it outside the repository, printing
// each binary as it goes (cluster.Provision does the work; oplab runs the
// same while it serves the course pages). A binary already in the cache is
// not built again, so a warm run takes seconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oplab-dev/oplab/cluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "provision:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("provision", flag.ContinueOnError)
	module := fs.String("module", cluster.ControlPlaneModule, "folder of the Go module that pins the control-plane versions")
	printDir := fs.Bool("print-dir", false, "print the assets folder and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" && len(cluster.MissingBinaries(dir)) == 0 {
		fmt.Printf("Using KUBEBUILDER_ASSETS=%s as it is (all binaries present)\n", dir)
		return nil
	}
	dir, err := cluster.DefaultAssetsDir()
	if err != nil {
		return err
	}
	if *printDir {
		fmt.Println(dir)
		return nil
	}
	if len(cluster.MissingBinaries(dir)) == 0 {
		fmt.Printf("Control plane v%s ready in %s\n", cluster.KubernetesVersion, dir)
		return nil
	}
	fmt.Printf("Provisioning Kubernetes v%s into %s (first run builds from source: about 11 minutes on 2 cores)\n",
		cluster.KubernetesVersion, dir)
	return cluster.Provision(ctx, cluster.ProvisionOptions{Dir: dir, Module: *module, Report: printProgress()})
}

// printProgress prints each binary as it is begun and ended, on one line:
// "[2/7] kube-apiserver ... done in 4m12s".
func printProgress() func(cluster.BuildProgress) {
	shown := -1
	return func(p cluster.BuildProgress) {
		switch {
		case p.Done && p.Err == nil:
			if shown >= 0 && shown < p.Built {
				fmt.Printf("done in %s\n", p.Took[shown].Round(time.Second))
			}
			fmt.Printf("Control plane v%s provisioned in %s\n", cluster.KubernetesVersion, time.Since(p.Began).Round(time.Second))
		case p.Done:
			if shown == p.Built {
				fmt.Println("failed")
			}
		default:
			if shown >= 0 && shown < p.Built {
				fmt.Printf("done in %s\n", p.Took[shown].Round(time.Second))
			}
			if shown != p.Built {
				shown = p.Built
				fmt.Printf("[%d/%d] %s ... ", p.Built+1, len(p.Names), p.Names[p.Built])
			}
		}
	}
}
