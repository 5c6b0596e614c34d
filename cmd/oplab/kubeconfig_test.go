package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// testLearnerKubeconfigFlags runs the binary against a cluster with
// --namespace-prefix and --kubeconfig-server: the learner's namespace
// carries the prefix and its instance label, and the kubeconfig the lab
// serves names the server the flag gave and works with kubectl.
func testLearnerKubeconfigFlags(t *testing.T) {
	cl, admin := externalCluster(t)
	// The learner policy as an earlier oplab on this cluster left it goes,
	// so that what the end finds is this oplab's doing.
	if out, err := exec.Command(cl.KubectlPath(), "--kubeconfig", admin, "delete", "--ignore-not-found",
		"validatingadmissionpolicybinding/oplab-learner-statefulsets", "validatingadmissionpolicy/oplab-learner-statefulsets").CombinedOutput(); err != nil {
		t.Fatalf("removing the learner policy: %v\n%s", err, out)
	}
	// The same API server by another name than oplab's own 127.0.0.1, as a
	// learner elsewhere would reach it.
	u, err := url.Parse(cl.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	server := "https://localhost:" + u.Port()
	p := startOplab(t, "--kubeconfig", admin, "--namespace-prefix", "cls-", "--kubeconfig-server", server)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) string {
		t.Helper()
		resp, err := c.Get(p.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	m := regexp.MustCompile(`data-namespace="([^"]+)"`).FindStringSubmatch(get("/lab"))
	if m == nil || !strings.HasPrefix(m[1], "cls-") {
		t.Fatalf("lab namespace %v; want one named cls-…", m)
	}
	ns := m[1]
	out, err := exec.Command(cl.KubectlPath(), "--kubeconfig", admin, "get", "namespace", ns, "-o", "jsonpath={.metadata.labels.oplab\\.dev/instance}").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "cls" {
		t.Errorf("namespace %s instance label = %q, %v; want cls", ns, out, err)
	}

	data := get("/lab/kubeconfig")
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(data))
	if err != nil {
		t.Fatalf("served kubeconfig does not load: %v", err)
	}
	if cfg.Host != server {
		t.Errorf("learner kubeconfig names %s; want --kubeconfig-server %s", cfg.Host, server)
	}
	path := filepath.Join(t.TempDir(), "learner.kubeconfig")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		// Output only: kubectl warns on stderr that namespaces are not
		// namespaced, which is beside the point.
		out, _ := exec.Command(cl.KubectlPath(), append([]string{"--kubeconfig", path}, args...)...).Output()
		return strings.TrimSpace(string(out))
	}
	if got := kubectl("auth", "can-i", "create", "databases"); got != "yes" {
		t.Errorf("learner kubectl auth can-i create databases (own namespace) = %q; want yes", got)
	}
	if got := kubectl("auth", "can-i", "list", "namespaces"); got != "no" {
		t.Errorf("learner kubectl auth can-i list namespaces = %q; want no", got)
	}
	// The learner may patch a StatefulSet; oplab (--install-crds, the
	// default) installed the policy that keeps its spec theirs not.
	if got := kubectl("auth", "can-i", "patch", "statefulsets"); got != "yes" {
		t.Errorf("learner kubectl auth can-i patch statefulsets = %q; want yes (owner-gc's first task)", got)
	}
	out, err = exec.Command(cl.KubectlPath(), "--kubeconfig", admin, "get", "validatingadmissionpolicybinding", "oplab-learner-statefulsets", "-o", "jsonpath={.spec.policyName}").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "oplab-learner-statefulsets" {
		t.Errorf("the learner policy's binding after oplab started: %q, %v; want it installed", out, err)
	}
}
