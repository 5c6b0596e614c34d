// Command provision builds the pinned Kubernetes control plane (etcd,
// kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kwok)
// from the Go module proxy and caches it outside the repository.
//
// Nothing is downloaded as a prebuilt binary: every executable is compiled
// from its module by the local Go toolchain, inside the separate module
// cluster/controlplane, which pins the versions. A binary already in the
// cache is not built again, so a warm run takes seconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/oplab-dev/oplab/cluster"
)

// packages maps each binary to the Go package whose main builds it.
var packages = map[string]string{
	"etcd":                    "go.etcd.io/etcd/server/v3",
	"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
	"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
	"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
	"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
	"kwok":                    "sigs.k8s.io/kwok/cmd/kwok",
}

// kwokStages are kwok's own stage definitions, read from the kwok module at
// build time: a Node becomes Ready and keeps heartbeating, Pods bound to it
// become Ready, complete, and are removed when deleted.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat/node-heartbeat.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

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
	module := fs.String("module", "cluster/controlplane", "folder of the Go module that pins the control-plane versions")
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	missing := cluster.MissingBinaries(dir)
	if len(missing) == 0 {
		fmt.Printf("Control plane v%s ready in %s\n", cluster.KubernetesVersion, dir)
		return nil
	}
	fmt.Printf("Provisioning Kubernetes v%s into %s (first run builds from source: about 11 minutes on 2 cores)\n",
		cluster.KubernetesVersion, dir)
	start := time.Now()
	for i, name := range missing {
		t := time.Now()
		fmt.Printf("[%d/%d] %s ... ", i+1, len(missing), name)
		if name == cluster.KwokStagesFile {
			err = writeKwokStages(ctx, *module, filepath.Join(dir, name))
		} else {
			err = build(ctx, *module, name, dir)
		}
		if err != nil {
			fmt.Println("failed")
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("done in %s\n", time.Since(t).Round(time.Second))
	}
	fmt.Printf("Control plane v%s provisioned in %s\n", cluster.KubernetesVersion, time.Since(start).Round(time.Second))
	return nil
}

// build compiles one binary into a temporary name and renames it into place,
// so an interrupted build never leaves a half-written executable that a later
// run would take as provisioned.
func build(ctx context.Context, module, name, dir string) error {
	pkg, ok := packages[name]
	if !ok {
		return fmt.Errorf("no package known for binary %q", name)
	}
	tmp := filepath.Join(dir, "."+name+".partial")
	defer os.Remove(tmp)
	ldflags := ""
	if strings.HasPrefix(pkg, "k8s.io/kubernetes/") {
		// Stamp the version the way Kubernetes' release build does, so
		// `kubectl version` and the API server's /version report v1.37.2.
		v := "k8s.io/component-base/version"
		major, minor, _ := strings.Cut(cluster.KubernetesVersion, ".")
		minor, _, _ = strings.Cut(minor, ".")
		ldflags = fmt.Sprintf("-X %[1]s.gitVersion=v%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
			v, cluster.KubernetesVersion, major, minor)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", tmp, pkg)
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// writeKwokStages concatenates kwok's stage definitions, taken from the kwok
// module pinned in the control-plane module, into one kwok config file.
func writeKwokStages(ctx context.Context, module, dest string) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	cmd.Dir = module
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("locating the kwok module: %w", err)
	}
	root := strings.TrimSpace(string(out))
	var b strings.Builder
	for _, rel := range kwokStages {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return fmt.Errorf("reading kwok stage: %w", err)
		}
		b.WriteString("---\n")
		b.Write(data)
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	tmp := dest + ".partial"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}
