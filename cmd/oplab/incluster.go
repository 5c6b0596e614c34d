package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// serviceAccountDir is where Kubernetes mounts a Pod's service-account
// token, CA and namespace (the folder rest.InClusterConfig reads). A
// variable only so that a test can run oplab as if in a Pod.
var serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// target is the API server oplab runs against, chosen at start.
type target struct {
	kind targetKind
	// cfg is nil for the embedded cluster, which does not exist yet.
	cfg *rest.Config
	// why says, for the log, what decided it.
	why string
}

type targetKind string

const (
	targetKubeconfig targetKind = "kubeconfig"
	targetInCluster  targetKind = "in-cluster"
	targetEmbedded   targetKind = "embedded"
)

// chooseTarget decides which API server oplab uses: the cluster of
// --kubeconfig (or KUBECONFIG) when one is given; else, inside a Pod with a
// service-account token, the Pod's own cluster; else the embedded control
// plane. getenv and saDir stand for the process's environment and the
// token's folder, so that tests can fake a Pod.
func chooseTarget(c config, getenv func(string) string, saDir string) (target, error) {
	if c.kubeconfig != "" {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(c.kubeconfig)}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return target{}, fmt.Errorf("reading --kubeconfig %s: %w", c.kubeconfig, err)
		}
		return target{kind: targetKubeconfig, cfg: cfg, why: "the cluster of --kubeconfig " + c.kubeconfig}, nil
	}
	cfg, ns, err := inClusterConfig(getenv, saDir)
	if errors.Is(err, errNotInPod) {
		return target{kind: targetEmbedded, why: "no --kubeconfig and " + err.Error()}, nil
	}
	if err != nil {
		return target{}, err
	}
	return target{kind: targetInCluster, cfg: cfg, why: fmt.Sprintf("no --kubeconfig and a service-account token in %s (namespace %s)", saDir, ns)}, nil
}

// errNotInPod means oplab is not in a Pod that may talk to its cluster.
var errNotInPod = errors.New("not in a Pod with a service-account token")

// inClusterConfig is rest.InClusterConfig reading saDir rather than the
// fixed folder: the API server's address from the environment Kubernetes
// gives every Pod, the token and CA from saDir. Without the address or the
// token it returns errNotInPod (a Pod may opt out of its token with
// automountServiceAccountToken: false); a token without its CA is an error,
// since that mount is broken rather than absent.
func inClusterConfig(getenv func(string) string, saDir string) (*rest.Config, string, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, "", fmt.Errorf("%w (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)", errNotInPod)
	}
	tokenFile := filepath.Join(saDir, "token")
	token, err := os.ReadFile(tokenFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("%w (no %s)", errNotInPod, tokenFile)
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the service-account token: %w", err)
	}
	if len(strings.TrimSpace(string(token))) == 0 {
		return nil, "", fmt.Errorf("the service-account token %s is empty", tokenFile)
	}
	caFile := filepath.Join(saDir, "ca.crt")
	if _, err := os.Stat(caFile); err != nil {
		return nil, "", fmt.Errorf("a service-account token is mounted but its CA is not: %w", err)
	}
	ns, err := os.ReadFile(filepath.Join(saDir, "namespace"))
	if err != nil {
		return nil, "", fmt.Errorf("reading the service-account namespace: %w", err)
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile},
		// The file, not just its content: the kubelet rotates the token,
		// and client-go rereads the file.
		BearerToken:     string(token),
		BearerTokenFile: tokenFile,
	}, strings.TrimSpace(string(ns)), nil
}
