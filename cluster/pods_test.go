package cluster

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/oplab-dev/oplab/internal/polltest"
)

// podsAnnotation is the annotation oplab's kwok stages select Pods by
// (kwok-pod-stages.yaml); the Database controller copies it onto its Pods.
const podsAnnotation = "db.oplab.dev/pods"

// TestKwokPodStages runs one bare Pod per mode of kwok-pod-stages.yaml on
// the shared cluster and follows each through the states a kubelet would
// report for it. A Pod without the annotation is still made Ready by kwok's
// own stage, and every one of them is removed when deleted.
func TestKwokPodStages(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	cs := clientset(t, c)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pod-stages"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	for _, mode := range []string{"", "slow-start", "image-pull-error", "crash-loop", "no-such-mode"} {
		createPod(t, cs, ns.Name, podName(mode), mode)
	}

	t.Run("default", func(t *testing.T) {
		waitPod(t, cs, ns.Name, podName(""), "Ready", podReady)
	})
	t.Run("unknown mode is the default", func(t *testing.T) {
		waitPod(t, cs, ns.Name, podName("no-such-mode"), "Ready", podReady)
	})
	t.Run("slow-start", func(t *testing.T) {
		// The first state kwok writes is Running but not Ready; a Pod seen
		// Ready without it would mean kwok's pod-ready stage won.
		first := waitPod(t, cs, ns.Name, podName("slow-start"), "Running", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning
		})
		if podReady(first) {
			t.Fatalf("slow-start Pod Ready as soon as Running; conditions %+v", first.Status.Conditions)
		}
		if cs := first.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Running == nil || cs[0].Ready {
			t.Errorf("slow-start Pod's container %+v, want running and not ready", cs)
		}
		waitPod(t, cs, ns.Name, podName("slow-start"), "Ready", podReady)
	})
	t.Run("image-pull-error", func(t *testing.T) {
		name := podName("image-pull-error")
		for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
			p := waitPod(t, cs, ns.Name, name, reason, func(p *corev1.Pod) bool { return waitingReason(p) == reason })
			if p.Status.Phase != corev1.PodPending || podReady(p) {
				t.Errorf("%s Pod in phase %s, ready %v; want Pending, not ready", reason, p.Status.Phase, podReady(p))
			}
		}
	})
	t.Run("crash-loop", func(t *testing.T) {
		name := podName("crash-loop")
		p := waitPod(t, cs, ns.Name, name, "CrashLoopBackOff", func(p *corev1.Pod) bool {
			return waitingReason(p) == "CrashLoopBackOff"
		})
		st := p.Status.ContainerStatuses[0]
		if st.RestartCount < 1 || st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 1 {
			t.Errorf("crash-loop container %+v, want a restart and a last exit code of 1", st)
		}
		if p.Status.Phase != corev1.PodRunning || podReady(p) {
			t.Errorf("crash-loop Pod in phase %s, ready %v; want Running, not ready", p.Status.Phase, podReady(p))
		}
		// The back-off ends in a restart, which crashes again: the count
		// keeps growing.
		waitPod(t, cs, ns.Name, name, "a second restart", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
		})
	})

	if err := cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deleting the Pods: %v", err)
	}
	polltest.Until(t, deadline, "every Pod removed", func() (bool, error) {
		pods, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
}

func podName(mode string) string {
	if mode == "" {
		return "default"
	}
	return mode
}

func createPod(t *testing.T, cs kubernetes.Interface, ns, name, mode string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "postgres", Image: "postgres:17"}},
		},
	}
	if mode != "" {
		pod.Annotations = map[string]string{podsAnnotation: mode}
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s: %v", name, err)
	}
}

// waitPod waits until the Pod satisfies cond and returns it as it was then.
func waitPod(t *testing.T, cs kubernetes.Interface, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	polltest.Until(t, deadline, fmt.Sprintf("Pod %s %s", name, what), func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, err
		}
		if err != nil {
			return false, err
		}
		got = p
		return cond(p), nil
	})
	return got
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitingReason(p *corev1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
		return ""
	}
	return p.Status.ContainerStatuses[0].State.Waiting.Reason
}
