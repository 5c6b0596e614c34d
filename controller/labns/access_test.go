package labns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// What the API server does with these kubeconfigs is tested against the
// real one in web/session (access_test.go) and web/e2e (kubeconfig_test.go);
// these are about reading oplab's own config.

func TestClusterOf(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte("PEM FROM FILE"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		cfg        rest.Config
		server     string
		wantServer string
		wantCA     string
	}{
		{"the admin config's server and CA", rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("PEM")}}, "", "https://127.0.0.1:6443", "PEM"},
		{"the flag's server, the admin config's CA", rest.Config{Host: "https://10.96.0.1:443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("PEM")}}, "https://k8s.example.com:6443", "https://k8s.example.com:6443", "PEM"},
		{"a CA file read into the kubeconfig (in-cluster configs name one)", rest.Config{Host: "https://10.96.0.1:443", TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}}, "", "https://10.96.0.1:443", "PEM FROM FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ClusterOf(&tt.cfg, tt.server)
			if err != nil {
				t.Fatal(err)
			}
			if c.Server != tt.wantServer || string(c.CAData) != tt.wantCA {
				t.Errorf("ClusterOf = %s with CA %q; want %s with %q", c.Server, c.CAData, tt.wantServer, tt.wantCA)
			}
		})
	}
	if _, err := ClusterOf(&rest.Config{Host: "https://x", TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}}, ""); err == nil || !strings.Contains(err.Error(), "/nonexistent/ca.crt") {
		t.Errorf("missing CA file: %v; want an error naming it", err)
	}
	if _, err := ClusterOf(&rest.Config{}, ""); err == nil || !strings.Contains(err.Error(), "--kubeconfig-server") {
		t.Errorf("no server: %v; want an error naming --kubeconfig-server", err)
	}
}

func TestRulesGrantNoWildcard(t *testing.T) {
	for _, r := range LearnerRules {
		for _, list := range [][]string{r.Verbs, r.Resources, r.APIGroups} {
			for _, v := range list {
				if v == "*" {
					t.Errorf("rule %+v has a wildcard", r)
				}
			}
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v names resources or URLs; want plain namespaced rules", r)
		}
	}
}
