package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Provisioning builds the pinned control plane (etcd, kube-apiserver,
// kubectl, kube-controller-manager, kube-scheduler, kwok) from the Go
// module proxy into the assets folder. Nothing is downloaded as a prebuilt
// binary: every executable is compiled from its module by the local Go
// toolchain, inside the separate module cluster/controlplane, which pins
// the versions. A binary already there is not built again, so a warm run
// takes no time. `make controlplane` (cmd/provision) runs it in a terminal;
// oplab runs it itself while it serves the course pages.

// ControlPlaneModule is the folder of the Go module that pins the
// control plane's versions, relative to the repository's root.
const ControlPlaneModule = "cluster/controlplane"

// provisionPackages maps each binary to the Go package whose main builds it.
var provisionPackages = map[string]string{
	"etcd":                    "go.etcd.io/etcd/server/v3",
	"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
	"kubectl":                 "k8s.io/kubernetes/cmd/kubectl",
	"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
	"kube-scheduler":          "k8s.io/kubernetes/cmd/kube-scheduler",
	"kwok":                    "sigs.k8s.io/kwok/cmd/kwok",
}

// kwokStages are kwok's own stage definitions, read from the kwok module
// at build time: a Node becomes Ready and keeps heartbeating, Pods bound
// to it become Ready, complete, and are removed when deleted.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat/node-heartbeat.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// BuildProgress is where a provisioning run stands. Each report is a new
// value; the run never changes one it has handed out.
type BuildProgress struct {
	// Names are the files this run makes, in order (the missing ones).
	Names []string
	// Built is how many of Names are done; Names[Built] is being made.
	Built int
	// Took is how long each done one took.
	Took []time.Duration
	// Began is when the run began, Current when Names[Built] did.
	Began, Current time.Time
	// Done says the run is over; Err, why it failed.
	Done bool
	Err  error
}

// Building is the file being made, "" when the run is over.
func (p BuildProgress) Building() string {
	if p.Done || p.Built >= len(p.Names) {
		return ""
	}
	return p.Names[p.Built]
}

// ProvisionOptions configures Provision.
type ProvisionOptions struct {
	// Dir is the assets folder to fill; it is created if missing.
	Dir string
	// Module is the folder of the module that pins the versions;
	// default ControlPlaneModule.
	Module string
	// Report hears of each step: the start, each file begun and done,
	// the end. It runs on Provision's goroutine.
	Report func(BuildProgress)
	// Make makes one file (a binary or the kwok stages) as dest; nil
	// builds it from Module with the Go toolchain. Tests put a fake here.
	Make func(ctx context.Context, module, name, dest string) error
}

// ErrNoControlPlaneModule says the module to build the control plane from
// is not there: oplab runs outside its repository.
var ErrNoControlPlaneModule = errors.New("the control-plane module is not here")

// Provision makes the files missing from the assets folder, one at a time,
// each written under a temporary name and renamed into place, so an
// interrupted build never leaves a half-written executable that a later
// run would take as provisioned.
func Provision(ctx context.Context, opts ProvisionOptions) error {
	if opts.Module == "" {
		opts.Module = ControlPlaneModule
	}
	if opts.Make == nil {
		opts.Make = makeFromModule
	}
	report := func(p BuildProgress) {
		if opts.Report != nil {
			p.Names = append([]string(nil), p.Names...)
			p.Took = append([]time.Duration(nil), p.Took...)
			opts.Report(p)
		}
	}
	p := BuildProgress{Names: MissingBinaries(opts.Dir), Began: time.Now()}
	if len(p.Names) == 0 {
		p.Done = true
		report(p)
		return nil
	}
	if fi, err := os.Stat(filepath.Join(opts.Module, "go.mod")); err != nil || fi.IsDir() {
		p.Done, p.Err = true, fmt.Errorf("%w: %s has no go.mod (run oplab from its repository, or point --kubeconfig at a cluster)", ErrNoControlPlaneModule, opts.Module)
		report(p)
		return p.Err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		p.Done, p.Err = true, fmt.Errorf("creating %s: %w", opts.Dir, err)
		report(p)
		return p.Err
	}
	for p.Built < len(p.Names) {
		name := p.Names[p.Built]
		p.Current = time.Now()
		report(p)
		if err := makeAtomically(ctx, opts, name); err != nil {
			p.Done, p.Err = true, fmt.Errorf("%s: %w", name, err)
			report(p)
			return p.Err
		}
		p.Took = append(p.Took, time.Since(p.Current))
		p.Built++
	}
	p.Done = true
	report(p)
	return nil
}

// makeAtomically makes name under a temporary name in opts.Dir, then
// renames it into place.
func makeAtomically(ctx context.Context, opts ProvisionOptions, name string) error {
	tmp := filepath.Join(opts.Dir, "."+name+".partial")
	defer os.Remove(tmp)
	if err := opts.Make(ctx, opts.Module, name, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(opts.Dir, name))
}

// makeFromModule builds a binary, or writes the kwok stages, from module.
func makeFromModule(ctx context.Context, module, name, dest string) error {
	if name == KwokStagesFile {
		return writeKwokStages(ctx, module, dest)
	}
	pkg, ok := provisionPackages[name]
	if !ok {
		return fmt.Errorf("no package known for binary %q", name)
	}
	ldflags := ""
	if strings.HasPrefix(pkg, "k8s.io/kubernetes/") {
		// Stamp the version the way Kubernetes' release build does, so
		// `kubectl version` and the API server's /version report it.
		v := "k8s.io/component-base/version"
		major, minor, _ := strings.Cut(KubernetesVersion, ".")
		minor, _, _ = strings.Cut(minor, ".")
		ldflags = fmt.Sprintf("-X %[1]s.gitVersion=v%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
			v, KubernetesVersion, major, minor)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", dest, pkg)
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	// go build runs the compiler and linker as its own children: on Ctrl-C
	// the whole group goes, not only go itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// writeKwokStages concatenates kwok's stage definitions, taken from the
// kwok module pinned in the control-plane module, into one kwok config.
func writeKwokStages(ctx context.Context, module, dest string) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	cmd.Dir = module
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
		}
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
	return os.WriteFile(dest, []byte(b.String()), 0o644)
}
