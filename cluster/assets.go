package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// KubernetesVersion is the pinned control-plane version. It must match the
// k8s.io/kubernetes version in cluster/controlplane/go.mod and the client-go
// minor version in oplab's own go.mod.
const KubernetesVersion = "1.37.2"

// Binaries lists the executables a full-lifecycle cluster needs, in the order
// they are provisioned.
var Binaries = []string{"etcd", "kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler", "kwok"}

// KwokStagesFile is the kwok configuration (stage definitions) laid next to the binaries.
const KwokStagesFile = "kwok-stages.yaml"

// DefaultAssetsDir is where provisioning caches the binaries: outside any
// clone, versioned, and laid out as setup-envtest lays out its assets
// (<data dir>/k8s/<version>-<os>-<arch>), so every clone shares one build.
func DefaultAssetsDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the assets cache: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "oplab", "k8s", fmt.Sprintf("%s-%s-%s", KubernetesVersion, runtime.GOOS, runtime.GOARCH)), nil
}

// AssetsDir returns the folder holding the control-plane binaries: the one
// named by KUBEBUILDER_ASSETS when it already holds them all, otherwise the
// default cache. It does not check the default cache; see MissingBinaries.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" && len(MissingBinaries(dir)) == 0 {
		return dir, nil
	}
	return DefaultAssetsDir()
}

// MissingBinaries names the binaries (and the kwok stages file) absent from dir.
func MissingBinaries(dir string) []string {
	var missing []string
	for _, name := range append(append([]string{}, Binaries...), KwokStagesFile) {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() {
			missing = append(missing, name)
		}
	}
	return missing
}

// ErrNotProvisioned is returned when the control-plane binaries are missing.
var ErrNotProvisioned = errors.New("control plane not provisioned (run `make controlplane`)")

// FindAssets returns the provisioned assets folder, or an error naming what
// is missing and how to provision it.
func FindAssets() (string, error) {
	dir, err := AssetsDir()
	if err != nil {
		return "", err
	}
	if missing := MissingBinaries(dir); len(missing) > 0 {
		return "", fmt.Errorf("%w: %s missing %v", ErrNotProvisioned, dir, missing)
	}
	return dir, nil
}
