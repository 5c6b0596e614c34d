package config_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// deadline bounds every wait: generous, because the tests check that things
// happen, never how fast.
const deadline = 3 * time.Minute

// ns is the namespace the manifests install oplab into.
const ns = "oplab-system"

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if shared.cl != nil {
		if err := shared.cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the cluster:", err)
			code = 1
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := dbv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// assets returns the control-plane folder, whose kubectl renders and
// applies the manifests. Without it the tests skip, unless CI is set.
func assets(t *testing.T) string {
	t.Helper()
	return clustertest.Assets(t)
}

// kubectl runs the provisioned kubectl and returns its standard output.
func kubectl(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(assets(t), "kubectl"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %q: %v\n%s", args, err, stderr.String())
	}
	return out
}

// render returns the objects `kubectl kustomize dir` renders: exactly what
// `kubectl apply -k dir` would send.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, kubectl(t, "kustomize", dir))
}

func decode(t *testing.T, y []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(y), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := d.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding rendered YAML: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	if len(objs) == 0 {
		t.Fatal("rendered no objects")
	}
	return objs
}

// find returns the one rendered object of kind and name, converted to out.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, out any) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
				t.Fatalf("converting %s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("rendered no %s %s", kind, name)
}

// shared is the embedded cluster the manifests are applied to, started on
// first use; TestMain stops it.
var shared struct {
	once       sync.Once
	err        error
	cl         *cluster.Cluster
	dir        string
	kubeconfig string
	admin      client.Client
}

// installed starts the cluster on first use, applies controller/config/default
// to it with kubectl, and returns an admin client and the kubeconfig kubectl used.
func installed(t *testing.T) (client.Client, string) {
	t.Helper()
	assets(t)
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "oplab-config-test-")
		if shared.err != nil {
			return
		}
		// The CRD is installed before kube-controller-manager starts, as
		// `make run` does, so its quota controller counts Databases from
		// the start; kubectl apply -k below then finds it in place. (On a
		// cluster whose kcm predates the CRD, a new quota reads "status
		// unknown" until the quota controller's next full resync.)
		crds, err := controller.CRDs()
		if err != nil {
			shared.err = err
			return
		}
		opts := cluster.Options{Mode: cluster.ModeFull, CRDs: crds}
		if os.Getenv("OPLAB_CLUSTER_LOG") != "" {
			opts.Log = os.Stderr
		}
		if shared.cl, shared.err = cluster.Start(context.Background(), opts); shared.err != nil {
			return
		}
		shared.kubeconfig = filepath.Join(shared.dir, "kubeconfig")
		if shared.err = shared.cl.WriteKubeconfig(shared.kubeconfig); shared.err != nil {
			return
		}
		if shared.admin, shared.err = client.New(shared.cl.Config(), client.Options{Scheme: scheme}); shared.err != nil {
			return
		}
		out, err := exec.Command(shared.cl.KubectlPath(), "--kubeconfig", shared.kubeconfig, "apply", "-k", "default").CombinedOutput()
		if err != nil {
			shared.err = fmt.Errorf("kubectl apply -k default: %w\n%s", err, out)
			return
		}
		shared.err = instancePolicyEnforced()
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.admin, shared.kubeconfig
}

// instancePolicyEnforced waits until the API server enforces the instance
// policy the manifests applied: a ValidatingAdmissionPolicy takes effect a
// moment after it is created, and a test run at once found every request
// of oplab's ServiceAccount allowed. The probe, as that ServiceAccount
// (impersonated by the admin), is a dry run of a namespace without
// oplab's labels.
func instancePolicyEnforced() error {
	as := rest.CopyConfig(shared.cl.Config())
	as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":oplab"}
	c, err := client.New(as, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err = polltest.Wait(ctx, func(ctx context.Context) error {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "policy-probe-"}}, client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "oplab-instance-namespaces") {
			return nil
		}
		return fmt.Errorf("got %v", err)
	})
	if err != nil {
		return fmt.Errorf("the instance policy is not enforced %s after kubectl apply: a namespace without labels, as oplab, %v", deadline, err)
	}
	return nil
}

// turn is held by the test running in its turn (inTurn).
var turn sync.Mutex

// inTurn makes t take turns with the package's other tests but
// TestEachRuleIsNeeded: they act on what the default instance and the
// manifests hold (its namespace and Deployment, the second instance's
// objects, the ingress), one at a time as before. The rules test keeps to
// its own identity, roles, prefixes and namespaces and installs nothing
// cluster-wide (its oplab runs with --install-crds=false), so it runs
// beside them: it is most of the package's time, and most of that is
// waiting on the oplab instances it starts and on its orphans' age.
func inTurn(t *testing.T) {
	t.Parallel()
	turn.Lock()
	t.Cleanup(turn.Unlock)
}
