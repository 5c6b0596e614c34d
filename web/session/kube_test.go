package session_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/session"
)

// These tests are about what the API server does with a lab namespace (its
// quota, its annotations, a second Manager reading them), so they run
// against the real embedded cluster, one for the package. They drive
// labns.KubeNamespaces through the Manager that uses it, so the cluster
// side of a session is tested here, on the one cluster, rather than on a
// second one in controller/labns.

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if err := shared.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// shared is the package's full-mode cluster, with the Database CRD.
var shared = clustertest.Full(controller.CRDs)

// kubeClient returns a client of the package's cluster, started on first
// use.
func kubeClient(t testing.TB) client.Client {
	t.Helper()
	cl := shared.Get(t)
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cl.Config(), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// begin starts a session on m as a browser's first visit would and returns
// its cookie.
func begin(t *testing.T, m *session.Manager) (session.Session, *http.Cookie) {
	t.Helper()
	w := httptest.NewRecorder()
	s, err := m.Begin(w, httptest.NewRequest("GET", "/lab", nil))
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return s, w.Result().Cookies()[0]
}

func withCookie(c *http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", "/lab", nil)
	r.AddCookie(c)
	return r
}

// newManager is a Manager of the default instance (prefix lab-), which
// restores and sweeps every namespace of that instance on the shared
// cluster: the tests that use it run one at a time, not in parallel, or
// each would restore and sweep the others' sessions. A test that can run
// beside them gives its Manager a prefix of its own.
func newManager(t *testing.T, ctx context.Context, c client.Client, now func() time.Time) *session.Manager {
	t.Helper()
	m, err := session.New(ctx, session.Options{
		Namespaces: labns.KubeNamespaces{Client: c, MaxDatabases: 5}, IdleTimeout: time.Hour, Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func deleteLater(t *testing.T, c client.Client, ns string) {
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
}

func database(ns, name string) *v1alpha1.Database {
	return &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1},
	}
}

func TestNamespaceAndQuotaExistWhenTheSessionStarts(t *testing.T) {
	c := kubeClient(t)
	m := newManager(t, t.Context(), c, nil)
	s, _ := begin(t, m)
	deleteLater(t, c, s.Namespace)
	counts := watchDatabaseCount(t, s.Namespace)
	// Right away, as kubectl apply would be, before anything else happens:
	// five Databases are created and the sixth is refused by the API server.
	for i := range 5 {
		if err := c.Create(t.Context(), database(s.Namespace, fmt.Sprint("db-", i))); err != nil {
			t.Fatalf("create Database %d right after the session started: %v", i, err)
		}
	}
	// The API server adds one to the quota's count for each create it
	// admits. The quota controller recounts from its own cache, and a recount
	// during the burst (a retry of its first count, say) reads a cache that
	// lags the creates and writes a lower count: Kubernetes lets that many
	// more in, a known limit of its quota, not of oplab's. So the sixth must
	// be refused unless the count dropped, and then within as many creates
	// as it dropped by; a count that never dropped with a sixth let in is a
	// quota that does not hold.
	var err error
	admitted := 5
	for ; ; admitted++ {
		err = c.Create(t.Context(), database(s.Namespace, fmt.Sprint("db-", admitted)))
		if err != nil {
			break
		}
		if seen, dropped, ok := counts(int64(admitted + 1 - 5)); !ok {
			t.Fatalf("Database %d was let in with a cap of 5, and the quota's count dropped by %d in all (counts seen: %v)", admitted+1, dropped, seen)
		}
	}
	if seen, dropped, _ := counts(0); dropped > 0 {
		t.Logf("the quota controller recounted from a lagging cache during the creates (counts seen: %v): %d Databases let in over the cap, refused after", seen, admitted-5)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: "+labns.QuotaName) ||
		!strings.Contains(err.Error(), string(labns.DatabaseQuotaResource)) {
		t.Fatalf("create %d: %v; want 403 exceeded quota %s naming %s", admitted+1, err, labns.QuotaName, labns.DatabaseQuotaResource)
	}
	if labns.DatabaseQuotaResource != corev1.ResourceName("count/databases."+v1alpha1.GroupVersion.Group) {
		t.Errorf("quota resource %s does not name the Database CRD's group %s", labns.DatabaseQuotaResource, v1alpha1.GroupVersion.Group)
	}
}

// watchDatabaseCount watches ns's quota from now on. The function it
// returns gives the quota's Database counts so far, each value as written,
// and by how much in all they went down; asked for a drop of at least n, it
// waits a few seconds for one, since a watch event can come after the
// answer to a create that the write it carries preceded.
func watchDatabaseCount(t *testing.T, ns string) func(n int64) (seen []int64, dropped int64, ok bool) {
	t.Helper()
	wc, err := client.NewWithWatch(shared.Get(t).Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var q corev1.ResourceQuota
	if err := wc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: labns.QuotaName}, &q); err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), &corev1.ResourceQuotaList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": labns.QuotaName}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: q.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	count := q.Status.Used[labns.DatabaseQuotaResource]
	seen, dropped := []int64{count.Value()}, int64(0)
	go func() {
		for ev := range w.ResultChan() {
			q, ok := ev.Object.(*corev1.ResourceQuota)
			if !ok {
				continue
			}
			n := q.Status.Used[labns.DatabaseQuotaResource]
			mu.Lock()
			if last := seen[len(seen)-1]; n.Value() != last {
				dropped += max(0, last-n.Value())
				seen = append(seen, n.Value())
			}
			mu.Unlock()
		}
	}()
	read := func() ([]int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), seen...), dropped
	}
	return func(n int64) ([]int64, int64, bool) {
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			seen, dropped := read()
			if dropped >= n || time.Now().After(end) {
				return seen, dropped, dropped >= n
			}
		}
	}
}

func TestSessionsSurviveARestart(t *testing.T) {
	c := kubeClient(t)
	firstCtx, stopFirst := context.WithCancel(t.Context())
	first := newManager(t, firstCtx, c, nil)
	s, cookie := begin(t, first)
	deleteLater(t, c, s.Namespace)
	unused, _ := begin(t, first)
	deleteLater(t, c, unused.Namespace)
	if _, err := first.Lookup(withCookie(cookie)); err != nil {
		t.Fatal(err)
	}
	var ns corev1.Namespace
	if err := c.Get(t.Context(), types.NamespacedName{Name: s.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	if got := ns.Annotations[labns.CookieHashAnnotation]; got != session.HashCookie(cookie.Value) || strings.Contains(got, cookie.Value) {
		t.Errorf("namespace records %q; want the SHA-256 of the cookie, never the cookie", got)
	}
	stopFirst() // oplab stops; the cluster keeps its namespaces

	// The next oplab starts three hours later: its idle cleanup and its
	// reclaim of old namespaces must spare the sessions it restored.
	var skew atomic.Int64
	skew.Store(int64(3 * time.Hour))
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	second := newManager(t, t.Context(), c, now)
	if n, err := second.Restore(t.Context()); err != nil || n < 2 {
		t.Fatalf("Restore = %d, %v; want at least the first oplab's 2 sessions", n, err)
	}
	got, err := second.Lookup(withCookie(cookie))
	if err != nil || got != s {
		t.Fatalf("after the restart the cookie finds %v, %v; want %v", got, err, s)
	}
	if _, err := second.Reclaim(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	alive := func(name string) bool {
		var ns corev1.Namespace
		err := c.Get(t.Context(), types.NamespacedName{Name: name}, &ns)
		return err == nil && ns.DeletionTimestamp == nil
	}
	if !alive(s.Namespace) || !alive(unused.Namespace) {
		t.Errorf("after Reclaim and Sweep: used %s alive %v, unused %s alive %v; want both kept", s.Namespace, alive(s.Namespace), unused.Namespace, alive(unused.Namespace))
	}
	// A quarter of an hour on, the restored unused session has ended with
	// its namespace (it keeps the short timeout), the used one has not.
	skew.Add(int64(15 * time.Minute))
	if _, err := second.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if alive(unused.Namespace) || !alive(s.Namespace) {
		t.Errorf("15 minutes on: unused %s alive %v, used %s alive %v; want only the used one kept", unused.Namespace, alive(unused.Namespace), s.Namespace, alive(s.Namespace))
	}
}

// With no quota controller (the minimal cluster: no kube-controller-manager),
// oplab writes the new quota's empty count itself, at once: the API server
// enforces a quota only once its status lists the resource, so without it a
// first create would be refused as "status unknown". (With a controller,
// oplab waits for its count: TestNamespaceAndQuotaExistWhenTheSessionStarts.)
func TestQuotaCountedWithoutAController(t *testing.T) {
	t.Parallel() // on a cluster of its own

	kubeClient(t) // skips, or fails under CI, without the control plane
	crds, err := controller.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	minimal, err := cluster.Start(t.Context(), cluster.Options{Mode: cluster.ModeMinimal, CRDs: crds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = minimal.Stop() })
	c, err := client.New(minimal.Config(), client.Options{Scheme: kubeClient(t).Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := session.New(t.Context(), session.Options{
		Namespaces: labns.KubeNamespaces{Client: c, MaxDatabases: 5, NoQuotaController: true}, IdleTimeout: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := begin(t, m)
	var q corev1.ResourceQuota
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: s.Namespace, Name: labns.QuotaName}, &q); err != nil {
		t.Fatal(err)
	}
	if used, ok := q.Status.Used[labns.DatabaseQuotaResource]; !ok || !used.IsZero() {
		t.Fatalf("quota status right after the session began = %+v, want %s used 0, written by oplab", q.Status, labns.DatabaseQuotaResource)
	}
	if err := c.Create(t.Context(), database(s.Namespace, "first")); err != nil {
		t.Errorf("the first Database in a fresh namespace: %v, want it admitted", err)
	}
}

// TestANewNamespaceIsASandbox checks what the API server holds for a new
// session's namespace: Pod Security "restricted" enforced (a privileged
// Pod is refused), a LimitRange that fills in a Pod's missing requests,
// and a quota on Pods and their requests (MaxPods Pods, then refused).
func TestANewNamespaceIsASandbox(t *testing.T) {
	c := kubeClient(t)
	m := newManager(t, t.Context(), c, nil)
	s, _ := begin(t, m)
	deleteLater(t, c, s.Namespace)
	var ns corev1.Namespace
	if err := c.Get(t.Context(), client.ObjectKey{Name: s.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	for l, want := range labns.PodSecurityLabels() {
		if ns.Labels[l] != want {
			t.Errorf("namespace label %s = %q, want %s", l, ns.Labels[l], want)
		}
	}
	pod := func(name string, sc *corev1.SecurityContext) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name},
			Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](999),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{Name: "x", Image: "postgres:17", SecurityContext: sc}},
			}}
	}
	restricted := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	if err := c.Create(t.Context(), pod("privileged", &corev1.SecurityContext{Privileged: ptr.To(true)})); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("a privileged Pod: %v, want Forbidden by PodSecurity", err)
	}
	// A compliant Pod without requests gets the LimitRange's.
	first := pod("p-0", restricted)
	if err := c.Create(t.Context(), first); err != nil {
		t.Fatalf("a restricted Pod without requests: %v", err)
	}
	if r := first.Spec.Containers[0].Resources.Requests; r.Cpu().IsZero() || r.Memory().IsZero() {
		t.Errorf("the Pod's requests after admission: %v, want the LimitRange's defaults", r)
	}
	maxPods := labns.MaxPods(5)
	created := 1
	var refusal error
	for i := 1; i <= maxPods+5; i++ {
		if err := c.Create(t.Context(), pod(fmt.Sprint("p-", i), restricted)); err != nil {
			refusal = err
			break
		}
		created++
	}
	if created > maxPods || !apierrors.IsForbidden(refusal) || !strings.Contains(refusal.Error(), "exceeded quota") {
		t.Errorf("created %d Pods, then %v; want at most %d, then exceeded quota", created, refusal, maxPods)
	}
	t.Logf("%d Pods admitted, then: %v", created, refusal)
}

// An older oplab's lab namespace, one without Pod Security labels, a
// LimitRange or a quota on Pods, is made the sandbox a new one is when a
// restart restores its session: its learner's kubectl cannot run a
// privileged Pod there any more, and cannot scale past the new caps.
func TestARestoredOlderNamespaceBecomesASandbox(t *testing.T) {
	c := kubeClient(t)
	cookie := "an-older-sandbox-cookie"
	name := labns.NamespacePrefix + "oldsandb"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{labns.LabLabel: "true", labns.InstanceLabel: labns.Instance(labns.NamespacePrefix)},
		Annotations: map[string]string{labns.CookieHashAnnotation: session.HashCookie(cookie)},
	}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	deleteLater(t, c, name)
	// The quota of an oplab before the sandbox counted Databases only.
	old := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: labns.QuotaName},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{labns.DatabaseQuotaResource: resource.MustParse("5")}}}
	if err := c.Create(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	privileged := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "privileged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "postgres:17",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}
	if err := c.Create(t.Context(), privileged.DeepCopy()); err != nil {
		t.Fatalf("before the restore, the older namespace admits a privileged Pod (the hole this closes); got %v", err)
	}

	m := newManager(t, t.Context(), c, nil)
	if _, err := m.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s, err := m.Lookup(withCookie(&http.Cookie{Name: session.CookieName, Value: cookie})); err != nil || s.Namespace != name {
		t.Fatalf("the older namespace's learner finds %v, %v; want %s", s, err, name)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatal(err)
	}
	for l, want := range labns.PodSecurityLabels() {
		if ns.Labels[l] != want {
			t.Errorf("after the restore, namespace label %s = %q, want %s", l, ns.Labels[l], want)
		}
	}
	var lr corev1.LimitRange
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: name, Name: labns.LimitRangeName}, &lr); err != nil {
		t.Errorf("after the restore, the LimitRange: %v", err)
	}
	var q corev1.ResourceQuota
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: name, Name: labns.QuotaName}, &q); err != nil {
		t.Fatal(err)
	}
	if got, want := q.Spec.Hard[corev1.ResourcePods], labns.MaxPods(5); got.Value() != int64(want) {
		t.Errorf("after the restore, the quota's pods = %v, want %d", q.Spec.Hard, want)
	}
	privileged.Name = "privileged-2"
	if err := c.Create(t.Context(), privileged); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("after the restore, a privileged Pod: %v; want Forbidden by PodSecurity", err)
	}

	// A second restart finds nothing to bring up to date: no write.
	before := ns.ResourceVersion
	m2 := newManager(t, t.Context(), c, nil)
	if _, err := m2.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatal(err)
	}
	if ns.ResourceVersion != before {
		t.Errorf("a second restore rewrote the namespace (resourceVersion %s → %s); want it left alone", before, ns.ResourceVersion)
	}
}
