package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/oplab-dev/oplab/web/kubeconfig"
)

// TestLabOffersAKubeconfigForTheLearnersNamespace is issue 11 §4 through
// the real server: the lab page links a kubeconfig and shows the line to
// paste, and the file it serves works in the learner's namespace and is
// refused in another's.
func TestLabOffersAKubeconfigForTheLearnersNamespace(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	_, other := e.learner(t)

	resp, err := c.Get(e.http.URL + "/lab")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `href="`+kubeconfig.Path+`"`) || !strings.Contains(string(page), kubeconfig.FileName(ns)) {
		t.Errorf("/lab has no kubeconfig link or no command naming %s", kubeconfig.FileName(ns))
	}

	resp, err = c.Get(e.http.URL + kubeconfig.Path)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s", kubeconfig.Path, resp.StatusCode, data)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatalf("the served kubeconfig does not load: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("list ConfigMaps in the learner's own namespace %s: %v", ns, err)
	}
	if _, err := cs.CoreV1().ConfigMaps(other).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list ConfigMaps in another learner's namespace %s: %v; want Forbidden", other, err)
	}
}

// TestKubeconfigLinkInTheBrowser checks what a learner sees: the link and
// the line under the lab's heading, and that the link, followed by the
// browser with its session cookie, serves a kubeconfig for their namespace.
func TestKubeconfigLinkInTheBrowser(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	tab := e.tab(t)
	fail := func(err error) {
		t.Helper()
		failedShot(t, tab)
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Navigate(e.http.URL+"/lab")); err != nil {
		fail(err)
	}
	if _, err := chromedp.Run(tab, chromedp.WaitVisible(chromedp.CSS("#kubectl a"))); err != nil {
		fail(err)
	}
	ns, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil {
		fail(err)
	}
	line, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("#kubectl")))
	if err != nil {
		fail(err)
	}
	served, err := chromedp.Run(tab, chromedp.Evaluate[string](`fetch(document.querySelector("#kubectl a").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		fail(err)
	}
	screenshot(t, tab, "lab-kubeconfig-link")
	if !strings.Contains(line, "download your kubeconfig") || !strings.Contains(line, kubeconfig.Command(ns)) {
		t.Errorf("the kubectl line reads %q; want the download link and %q", line, kubeconfig.Command(ns))
	}
	if !strings.Contains(served, "namespace: "+ns) || !strings.Contains(served, "token: ") {
		t.Errorf("the link served %q; want a kubeconfig with a token for namespace %s", served, ns)
	}
}
