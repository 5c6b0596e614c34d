package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigName names the cluster, user and context in the kubeconfigs
// oplab writes, so `kubectl config current-context` says where you are.
const kubeconfigName = "oplab"

// DefaultKubeconfigPath is where oplab writes the learner's kubeconfig:
// $XDG_RUNTIME_DIR/oplab/kubeconfig when XDG_RUNTIME_DIR is set (a per-user
// tmpfs, which suits credentials for a cluster that lives only as long as
// oplab), otherwise <user cache dir>/oplab/kubeconfig (~/.cache on Linux),
// and <temp dir>/oplab-<uid>/kubeconfig if even that is unknown. It never
// points at ~/.kube/config, so a learner's own clusters stay untouched.
func DefaultKubeconfigPath() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, "oplab", "kubeconfig")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "oplab", "kubeconfig")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("oplab-%d", os.Getuid()), "kubeconfig")
}

// WriteKubeconfig writes a kubeconfig for the admin user (mode 0600,
// creating parent dirs) that kubectl can use as is. The file outlives Stop;
// it names a port nothing listens on once the cluster is gone.
func (c *Cluster) WriteKubeconfig(path string) error {
	return writeKubeconfig(path, c.cfg)
}

// writeKubeconfig writes cfg as a kubeconfig file. It writes a temp file and
// renames it, so a kubectl reading concurrently never sees half a file.
func writeKubeconfig(path string, cfg *rest.Config) error {
	data, err := clientcmd.Write(kubeconfigFromREST(cfg))
	if err != nil {
		return fmt.Errorf("encoding kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kubeconfig-*")
	if err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	// CreateTemp makes the file 0600, so the credentials are never readable
	// by others, not even briefly.
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// kubeconfigFromREST turns the client-certificate (or token) config envtest
// provisions into a kubeconfig with embedded credentials.
func kubeconfigFromREST(cfg *rest.Config) clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[kubeconfigName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[kubeconfigName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[kubeconfigName] = &clientcmdapi.Context{
		Cluster:  kubeconfigName,
		AuthInfo: kubeconfigName,
	}
	kc.CurrentContext = kubeconfigName
	return *kc
}
