package class

// The worst learners of BenchmarkClass -worst (issue 19 §4): each starts a
// session as a browser does, downloads its kubeconfig through the lab
// page's link, and with a client-go client built from that file alone does
// the worst its Role allows, while holding as many live timelines open as
// the server lets one session have.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
)

// worstConfig is what each worst learner does, and for how long.
type worstConfig struct {
	// For is how long the learners act, from their first create.
	For time.Duration `json:"for"`
	// Streams is how many websockets each learner tries to open on its
	// own session; beyond the server's cap they are refused.
	Streams int `json:"streams"`
	// Databases is how many Databases each learner tries to create, of
	// Replicas replicas each; beyond the quota they are refused.
	Databases int   `json:"databases"`
	Replicas  int32 `json:"replicas"`
	// Scale is the replica count tried beyond the Pod quota through the
	// scale subresource (issue 19 c's 600).
	Scale int32 `json:"scale"`
	// The loops' pace and bounds: a patch of a Database (its spec and an
	// annotation) every PatchEvery, at most MaxPatches; a scale every
	// ScaleEvery, at most MaxScales; a Pod deleted every DeleteEvery, at
	// most MaxDeletes.
	PatchEvery  time.Duration `json:"patchEvery"`
	MaxPatches  int           `json:"maxPatches"`
	ScaleEvery  time.Duration `json:"scaleEvery"`
	MaxScales   int           `json:"maxScales"`
	DeleteEvery time.Duration `json:"deleteEvery"`
	MaxDeletes  int           `json:"maxDeletes"`
	// QPS and Burst are the learners' client-go rate limits: kubectl's.
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
}

// defaultWorst is what BenchmarkClass -worst has each learner do: about
// ten patches, one scale and two Pod deletes a second for act, paused
// (the lab's own button) for the second half so that the scale to 600
// stays and only the quota holds it.
func defaultWorst(act time.Duration) worstConfig {
	return worstConfig{
		For: act, Streams: 16, Databases: 7, Replicas: 5, Scale: 600,
		PatchEvery: 100 * time.Millisecond, MaxPatches: 1000,
		ScaleEvery: time.Second, MaxScales: 120,
		DeleteEvery: 500 * time.Millisecond, MaxDeletes: 240,
		QPS: 50, Burst: 300,
	}
}

// worstResult is what the worst learners did and what was refused them.
type worstResult struct {
	Learners   int      `json:"learners"`
	Namespaces []string `json:"namespaces"`
	// Websockets opened on the learners' own sessions, refused (429), and
	// frames received on the open ones.
	StreamsOpen    int   `json:"streamsOpen"`
	StreamRefusals int   `json:"streamRefusals"`
	Frames         int64 `json:"frames"`
	// Databases created, and creates the quota refused.
	Created        int `json:"created"`
	CreateRefusals int `json:"createRefusals"`
	Patches        int `json:"patches"`
	Scales         int `json:"scales"`
	PodDeletes     int `json:"podDeletes"`
	// PodsRefused sums the quota's refusals of the StatefulSets' Pod
	// creates, from the events the learner may read: a lower bound, as
	// kube-controller-manager drops an object's events beyond a burst.
	// MaxWanted is the most replicas one namespace's StatefulSets asked
	// for at the end; MaxPods the most Pods one namespace listed, those
	// being deleted included; MaxQuotaPods the most its quota counted, of
	// QuotaPods allowed.
	PodsRefused int `json:"podsRefused"`
	MaxWanted   int `json:"maxWanted"`
	// HeldBack sums, over the namespaces, the replicas their StatefulSets
	// asked for at the end beyond the Pods there: what the quota keeps out.
	HeldBack     int `json:"heldBack"`
	MaxPods      int `json:"maxPods"`
	MaxQuotaPods int `json:"maxQuotaPods"`
	QuotaPods    int `json:"quotaPods"`
	// Conflicts counts scales and patches that lost a race with the
	// controller (expected, not errors).
	Conflicts  int           `json:"conflicts"`
	Errors     int           `json:"errors"`
	FirstError string        `json:"firstError,omitempty"`
	Active     time.Duration `json:"active"`
	CPU        time.Duration `json:"cpu"`
}

// worstLearner is one learner: a browser and a client of the API server
// built from the kubeconfig that browser downloaded.
type worstLearner struct {
	b              *browser
	ns             string
	kube           kubernetes.Interface
	dyn            dynamic.ResourceInterface
	streams        []*websocket.Conn
	streamRefusals int
	frames         atomic.Int64
	readers        sync.WaitGroup
	// Owned by the learner's goroutines while acting, read after.
	created                                           []string
	createRefusals, patches, scales, deletes, clashes atomic.Int64
}

// databases is the Database resource, as a dynamic client names it.
var databases = dbv1.GroupVersion.WithResource("databases")

// kubeconfigHref finds the lab page's "download your kubeconfig" link:
// the href of an anchor with the download attribute whose target names a
// kubeconfig. A page without one is an error naming what is missing.
func kubeconfigHref(page []byte) (string, error) {
	for _, m := range anchor.FindAllSubmatch(page, -1) {
		attrs := string(m[1])
		if !downloadAttr.MatchString(attrs) {
			continue
		}
		href := hrefAttr.FindStringSubmatch(attrs)
		if href != nil && strings.Contains(href[1], "kubeconfig") {
			return strings.ReplaceAll(href[1], "&amp;", "&"), nil
		}
	}
	return "", errors.New("the lab page has no download link to a kubeconfig (an <a download> whose href names kubeconfig)")
}

var (
	anchor       = regexp.MustCompile(`(?is)<a\s([^>]*)>`)
	downloadAttr = regexp.MustCompile(`(?i)(^|\s)download(\s|=|$)`)
	hrefAttr     = regexp.MustCompile(`(?i)(?:^|\s)href="([^"]*)"`)
)

// learnerConfig reads a downloaded kubeconfig: the client config of its
// current context and that context's namespace, which the learner's
// commands default to. A kubeconfig naming no namespace is an error: the
// learner's Role reaches no other.
func learnerConfig(raw []byte) (*rest.Config, string, error) {
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return nil, "", fmt.Errorf("read the kubeconfig: %w", err)
	}
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok || ctx.Namespace == "" {
		return nil, "", fmt.Errorf("the kubeconfig's current context %q names no namespace", kc.CurrentContext)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("the kubeconfig's client config: %w", err)
	}
	return cfg, ctx.Namespace, nil
}

// podRoom is how many replicas a StatefulSet now at current may have for
// the namespace's Pods to fill its quota exactly: current plus the Pods the
// quota has room for (none when it is full or says nothing of Pods).
func podRoom(q *corev1.ResourceQuota, current int32) int32 {
	hard, okHard := q.Status.Hard[corev1.ResourcePods]
	used, okUsed := q.Status.Used[corev1.ResourcePods]
	if !okHard || !okUsed {
		return current
	}
	return current + int32(max(0, hard.Value()-used.Value()))
}

// quotaRefusedPods sums, over the namespace's events, the Pod creates a
// ResourceQuota refused: a StatefulSet's FailedCreate events whose message
// says so, each counting the times it was seen.
func quotaRefusedPods(events []corev1.Event) int {
	n := 0
	for _, e := range events {
		if e.InvolvedObject.Kind != "StatefulSet" || e.Reason != "FailedCreate" || !strings.Contains(e.Message, "exceeded quota") {
			continue
		}
		n += int(max(1, e.Count))
	}
	return n
}

// overQuotaAPI says whether err is the API server's quota refusal.
func overQuotaAPI(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// worstClass is the child's class of worst learners.
type worstClass struct {
	cfg      classConfig
	learners []*worstLearner
}

// joinWorst starts each learner's session, downloads its kubeconfig from
// the link on its lab page and opens its websockets, cfg.Worst.Streams
// tries each.
func joinWorst(ctx context.Context, cfg classConfig) (*worstClass, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	c := &worstClass{cfg: cfg}
	for range cfg.Learners {
		c.learners = append(c.learners, &worstLearner{b: newBrowser(cfg.URL, transport)})
	}
	err := parallel(4, c.learners, func(l *worstLearner) error { return l.join(ctx, *cfg.Worst) })
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (l *worstLearner) join(ctx context.Context, w worstConfig) error {
	page, err := l.b.fetch(ctx, "/lab", 4<<20)
	if err != nil {
		return fmt.Errorf("start a session: %w", err)
	}
	href, err := kubeconfigHref(page)
	if err != nil {
		return err
	}
	link, err := url.Parse(href)
	if err != nil {
		return fmt.Errorf("the kubeconfig link %q: %w", href, err)
	}
	raw, err := l.b.fetch(ctx, link.RequestURI(), 1<<20)
	if err != nil {
		return fmt.Errorf("download the kubeconfig: %w", err)
	}
	cfg, ns, err := learnerConfig(raw)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = w.QPS, w.Burst
	l.ns = ns
	if l.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("a client from the learner's kubeconfig: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("a dynamic client from the learner's kubeconfig: %w", err)
	}
	l.dyn = dyn.Resource(databases).Namespace(ns)
	for range w.Streams {
		conn, code, err := l.b.dialStatus(ctx, "/ws")
		if code == http.StatusTooManyRequests {
			l.streamRefusals++
			continue
		}
		if err != nil {
			return err
		}
		l.streams = append(l.streams, conn)
		l.readers.Go(func() {
			// An open lab tab: it reads every frame, so the server never
			// drops it for falling behind.
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
				l.frames.Add(1)
			}
		})
	}
	return nil
}

// close closes every learner's websockets and waits for their readers.
func (c *worstClass) close() {
	for _, l := range c.learners {
		for _, conn := range l.streams {
			_ = conn.Close()
		}
		l.readers.Wait()
	}
}

// run has every learner act for cfg.Worst.For and reports what they did.
func (c *worstClass) run(ctx context.Context) worstResult {
	w := *c.cfg.Worst
	began, cpu0 := time.Now(), cpuTime()
	var mu sync.Mutex
	res := worstResult{Learners: len(c.learners)}
	note := func(l *worstLearner, err error) {
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = l.ns + ": " + err.Error()
		}
	}
	var wg sync.WaitGroup
	for _, l := range c.learners {
		wg.Go(func() { l.act(ctx, w, func(err error) { note(l, err) }) })
	}
	wg.Wait()
	res.Active = time.Since(began)
	for i, l := range c.learners {
		res.Namespaces = append(res.Namespaces, l.ns)
		res.StreamsOpen += len(l.streams)
		res.StreamRefusals += l.streamRefusals
		res.Created += len(l.created)
		res.CreateRefusals += int(l.createRefusals.Load())
		res.Patches += int(l.patches.Load())
		res.Scales += int(l.scales.Load())
		res.PodDeletes += int(l.deletes.Load())
		res.Conflicts += int(l.clashes.Load())
		t, err := l.tally(ctx)
		note(l, err)
		res.PodsRefused += t.refused
		res.MaxWanted = max(res.MaxWanted, t.wanted)
		res.HeldBack += max(0, t.wanted-t.listed)
		res.MaxPods = max(res.MaxPods, t.listed)
		res.MaxQuotaPods = max(res.MaxQuotaPods, t.used)
		// Every namespace has the same quota: -1 says one differed or
		// did not say.
		if i == 0 {
			res.QuotaPods = t.hard
		} else if t.hard != res.QuotaPods {
			res.QuotaPods = -1
		}
	}
	for _, l := range c.learners {
		res.Frames += l.frames.Load()
	}
	res.CPU = cpuTime() - cpu0
	return res
}

// act is one learner's worst: Databases up to the quota and past it, then
// until w.For is up, patches, scales and Pod deletes at their pace, with
// its namespace paused from half-time on.
func (l *worstLearner) act(ctx context.Context, w worstConfig, note func(error)) {
	// The loops stop when the time is up; a call under way finishes, so
	// that none is cut short and miscounted.
	loops, cancel := context.WithTimeout(ctx, w.For)
	defer cancel()
	for i := range w.Databases {
		db := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": dbv1.GroupVersion.String(), "kind": "Database",
			"metadata": map[string]any{"name": fmt.Sprintf("worst-%d", i)},
			"spec":     map[string]any{"engine": "postgres", "replicas": int64(w.Replicas)},
		}}
		_, err := l.dyn.Create(ctx, db, metav1.CreateOptions{})
		switch {
		case overQuotaAPI(err):
			l.createRefusals.Add(1)
		case err != nil:
			note(fmt.Errorf("create Database %s: %w", db.GetName(), err))
		default:
			l.created = append(l.created, db.GetName())
		}
	}
	if len(l.created) == 0 {
		note(errors.New("no Database created"))
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { l.pauseAt(loops, ctx, w.For/2, note) })
	wg.Go(func() { every(loops, w.PatchEvery, w.MaxPatches, func(k int) { note(l.patch(ctx, k, w.Replicas)) }) })
	wg.Go(func() { every(loops, w.ScaleEvery, w.MaxScales, func(k int) { note(l.scale(ctx, k, w.Scale)) }) })
	wg.Go(func() { every(loops, w.DeleteEvery, w.MaxDeletes, func(k int) { note(l.deletePod(ctx, k)) }) })
	wg.Wait()
}

// every calls do(0), do(1), … once per period until limit calls or ctx
// ends. A call that takes longer than period delays the next one: the pace
// is at most one per period.
func every(ctx context.Context, period time.Duration, limit int, do func(k int)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for k := 0; k < limit; k++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		do(k)
	}
}

// pauseAt presses the lab's "pause the controller" button after d,
// unless loops has ended, so that the learner's drift is no longer undone.
func (l *worstLearner) pauseAt(loops, ctx context.Context, d time.Duration, note func(error)) {
	select {
	case <-loops.Done():
		return
	case <-time.After(d):
	}
	note(l.b.post(ctx, "/lab/controller/stop", nil))
}

// patch changes Database k's spec (replicas one less, then back) and an
// annotation: a new generation each time, so a reconcile each time.
func (l *worstLearner) patch(ctx context.Context, k int, replicas int32) error {
	name := l.created[k%len(l.created)]
	r := replicas
	if (k/len(l.created))%2 == 0 {
		r--
	}
	body := fmt.Sprintf(`{"metadata":{"annotations":{"bench.oplab.dev/storm":"%d"}},"spec":{"replicas":%d}}`, k, max(1, r))
	_, err := l.dyn.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch Database %s: %w", name, err)
	}
	l.patches.Add(1)
	return nil
}

// scale sets StatefulSet k's replicas through the scale subresource: on
// even turns to what the Pod quota has room for, on odd ones to beyond,
// which the quota refuses Pod by Pod.
func (l *worstLearner) scale(ctx context.Context, k int, beyond int32) error {
	name := l.created[(k/2)%len(l.created)]
	sts := l.kube.AppsV1().StatefulSets(l.ns)
	s, err := sts.GetScale(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // the controller has not made it yet
	}
	if err != nil {
		return fmt.Errorf("get the scale of StatefulSet %s: %w", name, err)
	}
	s.Spec.Replicas = beyond
	if k%2 == 0 {
		q, err := l.kube.CoreV1().ResourceQuotas(l.ns).Get(ctx, labns.QuotaName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read the quota: %w", err)
		}
		s.Spec.Replicas = podRoom(q, s.Status.Replicas)
	}
	_, err = sts.UpdateScale(ctx, name, s, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		l.clashes.Add(1)
		return nil
	}
	if err != nil {
		return fmt.Errorf("scale StatefulSet %s to %d: %w", name, s.Spec.Replicas, err)
	}
	l.scales.Add(1)
	return nil
}

// deletePod deletes one of the namespace's Pods, a different one each
// turn: churn the StatefulSets make up for.
func (l *worstLearner) deletePod(ctx context.Context, k int) error {
	pods, err := l.kube.CoreV1().Pods(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list Pods: %w", err)
	}
	if len(pods.Items) == 0 {
		return nil
	}
	name := pods.Items[k%len(pods.Items)].Name
	err = l.kube.CoreV1().Pods(l.ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete Pod %s: %w", name, err)
	}
	l.deletes.Add(1)
	return nil
}

// tally reads, with the learner's own client, what the quota refused of
// the StatefulSets' Pods as their events tell it, the replicas the
// StatefulSets ask for, how many Pods the namespace lists and what its
// quota counts of them.
func (l *worstLearner) tally(ctx context.Context) (t podTally, err error) {
	evs, err := l.kube.CoreV1().Events(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return t, fmt.Errorf("list events: %w", err)
	}
	t.refused = quotaRefusedPods(evs.Items)
	sets, err := l.kube.AppsV1().StatefulSets(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return t, fmt.Errorf("list StatefulSets: %w", err)
	}
	for _, s := range sets.Items {
		if s.Spec.Replicas != nil {
			t.wanted += int(*s.Spec.Replicas)
		}
	}
	list, err := l.kube.CoreV1().Pods(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return t, fmt.Errorf("list Pods: %w", err)
	}
	t.listed = len(list.Items)
	q, err := l.kube.CoreV1().ResourceQuotas(l.ns).Get(ctx, labns.QuotaName, metav1.GetOptions{})
	if err != nil {
		return t, fmt.Errorf("read the quota: %w", err)
	}
	t.used, t.hard = quotaPods(q)
	return t, nil
}

// podTally is what tally read of one namespace.
type podTally struct{ refused, wanted, listed, used, hard int }

// quotaPods returns the Pods a quota counts as used and allows; -1 for
// what its status does not say.
func quotaPods(q *corev1.ResourceQuota) (used, hard int) {
	used, hard = -1, -1
	if v, ok := q.Status.Used[corev1.ResourcePods]; ok {
		used = int(v.Value())
	}
	if v, ok := q.Status.Hard[corev1.ResourcePods]; ok {
		hard = int(v.Value())
	}
	return used, hard
}

// runWorstChild is TestClassChild for a worst class: join, say
// connected, act on go, say done with the result, and keep the streams
// open until stdin closes, so that the parent measures oplab with the
// learners still there.
func runWorstChild(ctx context.Context, cfg classConfig, say func(string, ...any), wait func() (string, bool)) {
	c, err := joinWorst(ctx, cfg)
	if err != nil {
		say("error %v", err)
		return
	}
	defer c.close()
	say("connected")
	if line, ok := wait(); !ok || line != "go" {
		say("error want go on stdin, got %q", line)
		return
	}
	res := c.run(ctx)
	out, err := json.Marshal(res)
	if err != nil {
		say("error %v", err)
		return
	}
	say("done %s", out)
	for {
		if _, ok := wait(); !ok {
			return
		}
	}
}
