package class

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/oplab-dev/oplab/controller"
)

// TestKubeconfigHref checks that the worst learner finds the link a
// browser's download would follow: an anchor with the download attribute
// naming a kubeconfig, not the page's other downloads, and an error when
// there is none.
func TestKubeconfigHref(t *testing.T) {
	page := `<p><a href="/lab/export" download>Export timeline (JSON)</a> · <a href="/lab/replay">Open an export</a></p>
<span class="small">first <a href="/lab/kubeconfig?x=1&amp;y=2" download>download your kubeconfig</a>.</span>`
	got, err := kubeconfigHref([]byte(page))
	if err != nil || got != "/lab/kubeconfig?x=1&y=2" {
		t.Errorf("kubeconfigHref = %q, %v; want /lab/kubeconfig?x=1&y=2", got, err)
	}
	for _, page := range []string{
		`<a href="/lab/export" download>Export</a>`,
		`<a href="/lab/kubeconfig">a link that is not a download</a>`,
		`<a data-download="1" href="/lab/kubeconfig">an attribute merely ending in download</a>`,
	} {
		if got, err := kubeconfigHref([]byte(page)); err == nil {
			t.Errorf("kubeconfigHref(%s) = %q; want an error", page, got)
		}
	}
}

// TestLearnerConfig checks that a downloaded kubeconfig gives the client
// config of its current context and that context's namespace, and that one
// naming no namespace is refused with the context named.
func TestLearnerConfig(t *testing.T) {
	const kc = `apiVersion: v1
kind: Config
clusters:
- name: oplab
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: learner
  user: {token: abc}
contexts:
- name: lab
  context: {cluster: oplab, user: learner, namespace: lab-x1}
- name: other
  context: {cluster: oplab, user: learner}
current-context: %s
`
	cfg, ns, err := learnerConfig([]byte(strings.Replace(kc, "%s", "lab", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if ns != "lab-x1" || cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "abc" {
		t.Errorf("learnerConfig = host %q, token %q, namespace %q; want https://127.0.0.1:6443, abc, lab-x1", cfg.Host, cfg.BearerToken, ns)
	}
	if _, _, err := learnerConfig([]byte(strings.Replace(kc, "%s", "other", 1))); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("learnerConfig(no namespace) = %v; want an error naming the context", err)
	}
	if _, _, err := learnerConfig([]byte("not: [a kubeconfig")); err == nil {
		t.Error("learnerConfig accepted a file that is not YAML")
	}
}

// TestPodRoom checks the replicas that fill the Pod quota: the room added
// to the current count, none when full or when the quota does not count
// Pods.
func TestPodRoom(t *testing.T) {
	quota := func(hard, used string) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{}
		if hard != "" {
			q.Status.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(hard)}
			q.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(used)}
		}
		return q
	}
	for _, c := range []struct {
		hard, used string
		current    int32
		want       int32
	}{
		{"30", "25", 5, 10},
		{"30", "30", 5, 5},
		{"30", "31", 5, 5}, // over (counted before a delete): no room, never fewer
		{"", "", 4, 4},
	} {
		if got := podRoom(quota(c.hard, c.used), c.current); got != c.want {
			t.Errorf("podRoom(hard %s, used %s, current %d) = %d; want %d", c.hard, c.used, c.current, got, c.want)
		}
	}
}

// TestQuotaRefusedPods checks that only a StatefulSet's Pod creates the
// quota refused are summed, each event by its count.
func TestQuotaRefusedPods(t *testing.T) {
	ev := func(kind, reason, msg string, count int32) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind}, Reason: reason, Message: msg, Count: count}
	}
	refused := `create Pod worst-0-7 in StatefulSet worst-0 failed error: pods "worst-0-7" is forbidden: exceeded quota: databases, requested: pods=1, used: pods=30, limited: pods=30`
	events := []corev1.Event{
		ev("StatefulSet", "FailedCreate", refused, 12),
		ev("StatefulSet", "FailedCreate", refused, 0), // a new-style event without a count: once
		ev("StatefulSet", "FailedCreate", "create Pod worst-0-7 failed error: the server was unable to return a response", 3),
		ev("StatefulSet", "SuccessfulCreate", "create Pod worst-0-6 in StatefulSet worst-0 successful", 1),
		ev("Pod", "FailedCreate", refused, 5),
	}
	if got := quotaRefusedPods(events); got != 13 {
		t.Errorf("quotaRefusedPods = %d; want 13", got)
	}
}

// TestStatusBytes checks the fields read from /proc/self/status, in
// bytes, and 0 for a missing or unreadable one.
func TestStatusBytes(t *testing.T) {
	status := "Name:\tclass.test\nVmHWM:\t  140236 kB\nVmRSS:\t  111324 kB\nVmSwap:\tlots kB\n"
	for _, c := range []struct {
		field string
		want  uint64
	}{{"VmRSS", 111324 << 10}, {"VmHWM", 140236 << 10}, {"VmSwap", 0}, {"VmData", 0}, {"Vm", 0}} {
		if got := statusBytes(status, c.field); got != c.want {
			t.Errorf("statusBytes(%s) = %d; want %d", c.field, got, c.want)
		}
	}
}

// TestPerLearnerAndRatio checks the per-learner arithmetic and the ratio
// printed, which is not one when the baseline is nothing.
func TestPerLearnerAndRatio(t *testing.T) {
	if got := perLearner(100<<20, 150<<20, 10); got != 5 {
		t.Errorf("perLearner(100 MiB → 150 MiB, 10) = %v; want 5", got)
	}
	if got := perLearner(150<<20, 100<<20, 10); got != -5 {
		t.Errorf("perLearner(150 MiB → 100 MiB, 10) = %v; want -5", got)
	}
	if got := ratio(17, 2); got != "8.5×" {
		t.Errorf("ratio(17, 2) = %q; want 8.5×", got)
	}
	if got := ratio(17, 0); !strings.HasPrefix(got, "no ratio") {
		t.Errorf("ratio(17, 0) = %q; want no ratio", got)
	}
	for quota, want := range map[int]int{30: 3, 5: 1, 0: 1} {
		if got := podSlack(quota); got != want {
			t.Errorf("podSlack(%d) = %d; want %d", quota, got, want)
		}
	}
}

// TestReconcileCounter checks that reconciles are counted, by namespace,
// and that every step still reaches the recorder behind it.
func TestReconcileCounter(t *testing.T) {
	var got []controller.Step
	c := &reconcileCounter{next: sinkFunc(func(s controller.Step) { got = append(got, s) }), by: map[string]int{}}
	for _, s := range []controller.Step{
		{Type: controller.StepReconcileStart, Object: controller.ObjectRef{Namespace: "lab-a"}},
		{Type: controller.StepStatus, Object: controller.ObjectRef{Namespace: "lab-a"}},
		{Type: controller.StepReconcileStart, Object: controller.ObjectRef{Namespace: "lab-b"}},
		{Type: controller.StepReconcileStart, Object: controller.ObjectRef{Namespace: "lab-a"}},
	} {
		c.Emit(s)
	}
	if c.total() != 3 || c.by["lab-a"] != 2 || c.by["lab-b"] != 1 || len(got) != 4 {
		t.Errorf("counted %d (%v), passed on %d steps; want 3 (lab-a 2, lab-b 1) and all 4 passed on", c.total(), c.by, len(got))
	}
}

type sinkFunc func(controller.Step)

func (f sinkFunc) Emit(s controller.Step) { f(s) }

// TestQuotaPods checks the Pods a quota's status says are used and
// allowed, and -1 for what it does not say.
func TestQuotaPods(t *testing.T) {
	q := &corev1.ResourceQuota{Status: corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("30")},
		Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("28")},
	}}
	if used, hard := quotaPods(q); used != 28 || hard != 30 {
		t.Errorf("quotaPods = %d, %d; want 28, 30", used, hard)
	}
	if used, hard := quotaPods(&corev1.ResourceQuota{}); used != -1 || hard != -1 {
		t.Errorf("quotaPods(no status) = %d, %d; want -1, -1", used, hard)
	}
}

// TestWorstProblems checks that the benchmark fails when a bound is gone:
// a run where every bound held has no problem, and each bound broken on
// its own gives one problem that names it.
func TestWorstProblems(t *testing.T) {
	held := worstMeasurement{learners: 10, cfg: defaultWorst(time.Minute), reconciles: 400, worst: worstResult{
		StreamsOpen: 80, StreamRefusals: 80, Created: 50, CreateRefusals: 20,
		MaxWanted: 3000, MaxPods: 31, MaxQuotaPods: 30, QuotaPods: 30,
	}}
	if got := held.problems(); len(got) != 0 {
		t.Errorf("problems of a run where every bound held = %q; want none", got)
	}
	for _, c := range []struct {
		name    string
		breakIt func(*worstMeasurement)
		want    string
	}{
		{"no websocket cap", func(m *worstMeasurement) { m.worst.StreamsOpen, m.worst.StreamRefusals = 160, 0 }, "no websocket refused"},
		{"no Database quota", func(m *worstMeasurement) { m.worst.Created, m.worst.CreateRefusals = 70, 0 }, "Databases created"},
		{"a sixth Database", func(m *worstMeasurement) { m.worst.Created = 51 }, "Databases created"},
		{"no Pod quota", func(m *worstMeasurement) { m.worst.QuotaPods, m.worst.MaxPods = -1, 600 }, "StatefulSets asking"},
		{"Pods past the quota", func(m *worstMeasurement) { m.worst.MaxPods = 40 }, "StatefulSets asking"},
		{"never scaled past it", func(m *worstMeasurement) { m.worst.MaxWanted = 25 }, "StatefulSets asking"},
		{"no storm", func(m *worstMeasurement) { m.reconciles = 0 }, "no reconcile"},
	} {
		m := held
		c.breakIt(&m)
		got := m.problems()
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%s: problems = %q; want one saying %q", c.name, got, c.want)
		}
	}
}
