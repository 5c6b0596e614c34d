package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/stream"
)

// lines is every line oplab logs, from every logger it has: its own, the
// controller's (controller-runtime's) and client-go's (klog).
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.all = append(l.all, s)
	}
	return len(p), nil
}

func (l *lines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) { _, _ = fmt.Fprintln(l, prefix, args) }, funcr.Options{Verbosity: 0})
}

func (l *lines) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.all[n:]...)
}

func (l *lines) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

var cleanupCluster = clustertest.Full(controller.CRDs)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cleanupCluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// learnersForCleanup is how many learners TestEndingAClassLogsOneLineANamespace
// ends: OPLAB_CLEANUP_LEARNERS, default 20 (the class of 300 is
// run with OPLAB_CLEANUP_LEARNERS=300; it takes minutes on two cores).
func learnersForCleanup() int {
	if n, err := strconv.Atoi(os.Getenv("OPLAB_CLEANUP_LEARNERS")); err == nil && n > 0 {
		return n
	}
	return 20
}

// Ending every session of a class, each learner with a Database, logs at
// most one line a namespace, from every logger oplab has (its own, the
// controller's and client-go's), and keeps each learner's export. Before,
// a class of 307 expiring logged 2,116 ERROR lines: reconciles of
// Databases whose namespace was terminating, retried.
func TestEndingAClassLogsOneLineANamespace(t *testing.T) {
	cl := cleanupCluster.Get(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var log lines
	ctrllog.SetLogger(log.logger())
	klog.SetOutput(&log)
	klog.LogToStderr(false)
	defer klog.LogToStderr(true)

	rec := trace.NewRecorder(trace.RecorderOptions{})
	go rec.Run(ctx)
	hub := stream.NewHub(rec, stream.HubOptions{})
	go hub.Run(ctx)
	opts := controller.DefaultOptions()
	opts.Sink = rec
	runner := controller.NewRunner(cl.Config(), opts)
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = runner.Stop() }()
	content, err := learn.LoadContent()
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "clean-"
	w, err := NewWeb(ctx, Options{Config: cl.Config(), Recorder: rec, Hub: hub, Controller: runner, Content: content,
		NamespacePrefix: prefix, InstanceOnly: true, MaxSessions: 1000, MaxSessionsPerClient: 0, Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run(ctx) }()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	c, err := client.New(cl.Config(), client.Options{Scheme: mustScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	kube := labns.KubeNamespaces{Client: c, Prefix: prefix}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kube.ClassNamespace()}})
	})

	t.Log("oplab is up")
	n := learnersForCleanup()
	var namespaces []string
	began := time.Now()
	for i := range n {
		res, err := srv.Client().Get(srv.URL + "/lab")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		var cookie *http.Cookie
		for _, k := range res.Cookies() {
			cookie = k
		}
		// The browser comes back: a used session, whose work is kept.
		req, _ := http.NewRequest("GET", srv.URL+"/lab", nil)
		req.AddCookie(cookie)
		if res, err = srv.Client().Do(req); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		ns := sessionNamespace(t, w, len(namespaces))
		namespaces = append(namespaces, ns)
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop" + strconv.Itoa(i%3)},
			Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
		if err := c.Create(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d learners with a Database each in %s", n, time.Since(began).Round(time.Millisecond))
	// Every Database reconciled whole once (its finalizer on, its children
	// made, its status written) before the end.
	waitFor(t, &log, 3*time.Minute, func() bool {
		var list v1alpha1.DatabaseList
		if err := c.List(ctx, &list); err != nil {
			return false
		}
		ready := 0
		for _, d := range list.Items {
			if strings.HasPrefix(d.Namespace, prefix) && len(d.Finalizers) > 0 && d.Status.ObservedGeneration == d.Generation {
				ready++
			}
		}
		return ready >= n
	})

	mark := log.len()
	began = time.Now()
	ended, err := w.Sessions().EndClass(ctx)
	if err != nil || ended != n {
		t.Fatalf("EndClass = %d, %v; want %d ended", ended, err, n)
	}
	endTook := time.Since(began)
	waitFor(t, &log, 10*time.Minute, func() bool {
		var list corev1.NamespaceList
		if err := c.List(ctx, &list); err != nil {
			return false
		}
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, prefix) && ns.Name != kube.ClassNamespace() {
				return false
			}
		}
		return true
	})
	goneTook := time.Since(began)
	// A little longer for what would log late (a retry's backoff).
	time.Sleep(3 * time.Second)

	after := log.since(mark)
	per := map[string][]string{}
	errorLines := 0
	for _, l := range after {
		if strings.Contains(l, "ERROR") || strings.Contains(l, `"error"`) || regexp.MustCompile(`^E\d{4} `).MatchString(l) {
			errorLines++
		}
		for _, ns := range namespaces {
			if strings.Contains(l, ns) {
				per[ns] = append(per[ns], l)
			}
		}
	}
	worst := 0
	var offenders []string
	for _, ns := range namespaces {
		if len(per[ns]) > worst {
			worst = len(per[ns])
		}
		if len(per[ns]) > 1 {
			offenders = append(offenders, ns)
		}
	}
	sort.Strings(offenders)
	fmt.Printf("Ending a class of %d: EndClass took %s, every namespace gone after %s; %d lines logged in all, %d of them errors, at most %d naming one namespace\n",
		n, endTook.Round(time.Millisecond), goneTook.Round(time.Millisecond), len(after), errorLines, worst)
	for _, ns := range offenders[:min(len(offenders), 3)] {
		t.Errorf("namespace %s is named in %d log lines, want at most 1:\n%s", ns, len(per[ns]), strings.Join(per[ns], "\n"))
	}
	if errorLines > 0 {
		var errs []string
		for _, l := range after {
			if strings.Contains(l, "ERROR") || strings.Contains(l, `"error"`) || regexp.MustCompile(`^E\d{4} `).MatchString(l) {
				errs = append(errs, l)
			}
		}
		// The kinds, namespaces and IDs taken out, most frequent first.
		norm := regexp.MustCompile(prefix + `[a-z0-9]+|[0-9a-f]{8}-[0-9a-f-]{27}|"reconcileID"="[^"]*"`)
		kinds := map[string]int{}
		for _, l := range errs {
			kinds[norm.ReplaceAllString(l, "…")[:min(len(l), 220)]]++
		}
		var byCount []string
		for k, n := range kinds {
			byCount = append(byCount, fmt.Sprintf("%5d× %s", n, k))
		}
		sort.Sort(sort.Reverse(sort.StringSlice(byCount)))
		t.Errorf("%d error lines while a class ended cleanly, by kind:\n%s", errorLines, strings.Join(byCount[:min(10, len(byCount))], "\n"))
	}
	// Every learner's export was kept.
	kept, err := w.Sessions().ListEnded(ctx)
	if err != nil || len(kept) != n {
		t.Errorf("ListEnded = %d, %v; want the %d learners kept", len(kept), err, n)
	}
}

// sessionNamespace is the namespace of the session begun i-th (the table
// lists sessions oldest first).
func sessionNamespace(t *testing.T, w *Web, i int) string {
	t.Helper()
	list, err := w.Sessions().List(t.Context())
	if err != nil || len(list) <= i {
		t.Fatalf("List = %d sessions, %v; want at least %d", len(list), err, i+1)
	}
	return list[len(list)-1].Namespace
}

// waitFor is polltest.Until that shows the last lines logged when it fails.
func waitFor(t *testing.T, log *lines, limit time.Duration, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if polltest.Wait(ctx, ok) != nil {
		all := log.since(0)
		t.Fatalf("not done after %s; the last lines logged:\n%s", limit, strings.Join(all[max(0, len(all)-20):], "\n"))
	}
}

func mustScheme(t *testing.T) *runtimeScheme {
	t.Helper()
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type runtimeScheme = runtime.Scheme
