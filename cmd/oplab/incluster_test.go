package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakePod writes the files Kubernetes mounts into a Pod's
// service-account folder, leaving out the ones named in omit.
func fakePod(t *testing.T, omit ...string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"token": "eyJhbGciOi.fake.token", "ca.crt": "-----BEGIN CERTIFICATE-----\n", "namespace": "oplab-system"}
	for name, body := range files {
		if slices.Contains(omit, name) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

var podEnv = map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}

func TestChooseTarget(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://kind.example:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		kubeconfig string
		env        map[string]string
		saDir      string
		want       targetKind
		wantHost   string
		wantWhy    string
	}{
		{name: "a laptop", env: nil, saDir: fakePod(t), want: targetEmbedded, wantWhy: "KUBERNETES_SERVICE_HOST"},
		{name: "a Pod", env: podEnv, saDir: fakePod(t), want: targetInCluster, wantHost: "https://10.96.0.1:443", wantWhy: "namespace oplab-system"},
		{name: "a Pod without a token", env: podEnv, saDir: fakePod(t, "token"), want: targetEmbedded, wantWhy: "token"},
		{name: "a Pod with --kubeconfig", kubeconfig: kubeconfig, env: podEnv, saDir: fakePod(t), want: targetKubeconfig, wantHost: "https://kind.example:6443", wantWhy: kubeconfig},
		{name: "an IPv6 service address", env: map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, saDir: fakePod(t), want: targetInCluster, wantHost: "https://[fd00::1]:443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseTarget(config{kubeconfig: tt.kubeconfig}, env(tt.env), tt.saDir)
			if err != nil {
				t.Fatal(err)
			}
			if got.kind != tt.want {
				t.Fatalf("chose %s (%s), want %s", got.kind, got.why, tt.want)
			}
			if !strings.Contains(got.why, tt.wantWhy) {
				t.Errorf("why = %q, want it to mention %q", got.why, tt.wantWhy)
			}
			if tt.want == targetEmbedded {
				if got.cfg != nil {
					t.Errorf("embedded target has a config for %s", got.cfg.Host)
				}
				return
			}
			if got.cfg.Host != tt.wantHost {
				t.Errorf("host = %q, want %q", got.cfg.Host, tt.wantHost)
			}
		})
	}
}

func TestInClusterConfigReadsTheMountedToken(t *testing.T) {
	dir := fakePod(t)
	cfg, ns, err := inClusterConfig(env(podEnv), dir)
	if err != nil {
		t.Fatal(err)
	}
	if ns != "oplab-system" {
		t.Errorf("namespace = %q", ns)
	}
	// The file, so that the kubelet's token rotation reaches the client.
	if cfg.BearerTokenFile != filepath.Join(dir, "token") || cfg.BearerToken != "eyJhbGciOi.fake.token" {
		t.Errorf("token = %q from %q", cfg.BearerToken, cfg.BearerTokenFile)
	}
	if cfg.TLSClientConfig.CAFile != filepath.Join(dir, "ca.crt") || cfg.TLSClientConfig.Insecure {
		t.Errorf("TLS = %+v, want the mounted CA", cfg.TLSClientConfig)
	}
}

func TestInClusterConfigRejectsABrokenMount(t *testing.T) {
	tests := []struct {
		name  string
		saDir string
		want  string
	}{
		{"no CA", fakePod(t, "ca.crt"), "CA"},
		{"no namespace", fakePod(t, "namespace"), "namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chooseTarget(config{}, env(podEnv), tt.saDir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("chooseTarget = %v, want an error naming the %s", err, tt.want)
			}
		})
	}
	empty := fakePod(t)
	if err := os.WriteFile(filepath.Join(empty, "token"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := chooseTarget(config{}, env(podEnv), empty); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty token gave %v, want an error saying it is empty", err)
	}
}
