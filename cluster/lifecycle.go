package cluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// nodePollInterval is how often Start checks whether the kwok Node is
// schedulable: short, since it directly adds to the time to ready.
const nodePollInterval = 50 * time.Millisecond

// podStages are oplab's own kwok stages, which give a Pod annotated
// db.oplab.dev/pods a slow start, an image pull error or a crash loop. They
// live in the source rather than in the provisioned assets folder, so a
// cache built before they existed needs no rebuild.
//
//go:embed kwok-pod-stages.yaml
var podStages []byte

// PodStagesFile is where a full-mode cluster writes podStages in its
// runtime dir, for kwok's second --config.
const PodStagesFile = "kwok-pod-stages.yaml"

// command is one child process to exec.
type command struct {
	name string
	path string
	args []string
	env  []string
}

// lifecycleCommands provisions a system:masters identity for each of kcm,
// the scheduler and kwok, writes their kubeconfigs into c.dir, and returns
// how to start them.
func (c *Cluster) lifecycleCommands(assets string) ([]command, error) {
	kubeconfigs := map[string]string{}
	for _, name := range []string{nameKCM, nameScheduler, nameKwok} {
		// Distinct user names show up in audit and managedFields, so a
		// learner can tell who changed an object.
		user, err := c.env.AddUser(envtest.User{Name: "system:" + name, Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, fmt.Errorf("provisioning the %s user: %w", name, err)
		}
		path := filepath.Join(c.dir, name+".kubeconfig")
		if err := writeKubeconfig(path, user.Config()); err != nil {
			return nil, err
		}
		kubeconfigs[name] = path
	}

	// The scheduler's client QPS is set through its config file, since the
	// flags for it are deprecated and ignored alongside --config.
	schedulerConfig := filepath.Join(c.dir, "kube-scheduler.yaml")
	if err := os.WriteFile(schedulerConfig, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
`, kubeconfigs[nameScheduler])), 0o600); err != nil {
		return nil, fmt.Errorf("writing the scheduler config: %w", err)
	}
	podStagesPath := filepath.Join(c.dir, PodStagesFile)
	if err := os.WriteFile(podStagesPath, podStages, 0o600); err != nil {
		return nil, fmt.Errorf("writing kwok's Pod stages: %w", err)
	}

	return []command{{
		name: nameKCM,
		path: filepath.Join(assets, nameKCM),
		args: []string{
			"--kubeconfig=" + kubeconfigs[nameKCM],
			// Only what oplab's lessons need. Without nodelifecycle the
			// Node keeps its not-ready taint and Pods stay Pending; without
			// resourcequota a learner's quota counts every Database ever
			// created, since the API server only adds to a quota's usage
			// and this controller is what gives it back on delete.
			"--controllers=garbagecollector,statefulset,namespace,endpointslice,nodelifecycle,resourcequota",
			"--leader-elect=false",
			"--secure-port=0", // serve nothing: no listener at all
			"--use-service-account-credentials=false",
			// A benchmark creating 1000 Databases waits on these.
			"--kube-api-qps=1000",
			"--kube-api-burst=2000",
			// Every Database waits on its StatefulSet's status twice
			// (Pod created, Pod ready); with 8 workers this queue set the
			// tail of the benchmark (1,000 Ready in ~35 s against ~30 s
			// with 16). 32 was slower again: more status-update churn and
			// CPU taken from the API server.
			"--concurrent-statefulset-syncs=16",
		},
	}, {
		name: nameScheduler,
		path: filepath.Join(assets, nameScheduler),
		args: []string{
			"--config=" + schedulerConfig,
			"--secure-port=0",
		},
	}, {
		name: nameKwok,
		path: filepath.Join(assets, nameKwok),
		args: []string{
			"--kubeconfig=" + kubeconfigs[nameKwok],
			// kwok reads every --config in turn: its own stages from the
			// assets folder, then oplab's, which win for the Pods they select.
			"--config=" + filepath.Join(assets, KwokStagesFile),
			"--config=" + podStagesPath,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--server-address=", // no kubelet API server: nothing listens
		},
		// kwok also loads ~/.kwok/kwok.yaml when it exists; a home of our
		// own keeps a learner's kwokctl setup out of oplab's cluster.
		env: []string{"HOME=" + c.dir},
	}}, nil
}

// createNode creates the Node kwok manages, with room for thousands of Pods.
func createNode(ctx context.Context, cs kubernetes.Interface) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   resource.MustParse("5000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
			},
		},
		// Unlike most objects, a Node's status is accepted on create, and
		// kwok's node-initialize stage keeps capacity already set.
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", NodeName, err)
	}
	return nil
}

// waitNodeSchedulable polls until kwok has marked the Node Ready and kcm's
// node lifecycle controller has lifted the not-ready taint the API server
// adds on create; before that, a new Pod would fail to schedule and show a
// confusing FailedScheduling event. It gives up early if a child exits.
func waitNodeSchedulable(ctx context.Context, cs kubernetes.Interface, children []*child, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ticker := time.NewTicker(nodePollInterval)
	defer ticker.Stop()
	var last error
	for {
		for _, ch := range children {
			if done, err := ch.exited(); done {
				return fmt.Errorf("waiting for node %s: %w", NodeName, err)
			}
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		switch {
		case err == nil:
			last = nodeSchedulable(node)
			if last == nil {
				return nil
			}
		case !apierrors.IsNotFound(err) && ctx.Err() == nil:
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				return fmt.Errorf("waiting for node %s: %w", NodeName, ctx.Err())
			}
			return fmt.Errorf("waiting for node %s: %w (last seen: %v)", NodeName, ctx.Err(), last)
		case <-ticker.C:
		}
	}
}

// nodeSchedulable returns nil when node is Ready without NoSchedule or
// NoExecute taints, or else says what is missing.
func nodeSchedulable(node *corev1.Node) error {
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return errors.New("node not Ready yet")
	}
	for _, taint := range node.Spec.Taints {
		if taint.Effect == corev1.TaintEffectNoSchedule || taint.Effect == corev1.TaintEffectNoExecute {
			return fmt.Errorf("node still tainted %s", taint.Key)
		}
	}
	return nil
}
