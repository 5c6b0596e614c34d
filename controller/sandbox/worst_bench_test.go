package sandbox

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

var (
	worstLearners = flag.Int("worst-learners", 6, "BenchmarkWorstCode: learners, each running one of the worst codes")
	worstFor      = flag.Duration("worst-for", 30*time.Second, "BenchmarkWorstCode: how long each phase runs")
)

// The worst a learner's own code can do to oplab and its cluster, one kind
// per learner in turn: flood the API server with creates, thrash its own
// Database with patches, or hold memory and return a 7 MiB error.
var worstCodes = []struct{ name, src string }{
	{"flood", learner("\tcorev1 \"k8s.io/api/core/v1\"\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\t\"strconv\"\n",
		"\tfor i := 0; ; i++ {\n\t\t_ = r.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: \"spam-\" + strconv.Itoa(i)}})\n\t}")},
	{"thrash", learner("\tdbv1 \"github.com/oplab-dev/oplab/controller/api/v1alpha1\"\n\t\"strconv\"\n",
		"\tvar db dbv1.Database\n\tif err := r.Get(ctx, req.NamespacedName, &db); err != nil {\n\t\treturn ctrl.Result{}, client.IgnoreNotFound(err)\n\t}\n"+
			"\tfor i := 0; ; i++ {\n\t\tbefore := db.DeepCopy()\n\t\tdb.Annotations = map[string]string{\"n\": strconv.Itoa(i)}\n\t\t_ = r.Patch(ctx, &db, client.MergeFrom(before))\n\t}")},
	{"hog", learner("\t\"errors\"\n\t\"strings\"\n",
		"\tkeep := make([]byte, 120<<20)\n\tfor i := range keep {\n\t\tkeep[i] = 1\n\t}\n\treturn ctrl.Result{}, errors.New(strings.Repeat(\"x\", 7<<20) + string(keep[:1]))")},
}

// BenchmarkWorstCode runs -worst-learners learners' code on the real
// cluster through oplab's controller, first oplab's own reconciler (calm),
// then the worst codes, each for -worst-for, and prints what the worst
// cost: oplab's RSS (the parent's), its children's memory, the API
// server's and etcd's CPU, and the writes that reached the cluster.
func BenchmarkWorstCode(b *testing.B) {
	cl := startCluster(b)
	ctx := context.Background()
	c, err := client.New(cl.Config(), client.Options{Scheme: newScheme()})
	if err != nil {
		b.Fatal(err)
	}
	n := *worstLearners
	var namespaces []string
	for range n {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbx-worst-", Labels: map[string]string{"oplab.dev/lab": "true"}}}
		if err := c.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		namespaces = append(namespaces, ns.Name)
	}
	opts := controller.DefaultOptions()
	writes := &writeCount{}
	opts.Sink, opts.Namespaces = writes, namespaces
	r := controller.NewRunner(cl.Config(), opts)
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Stop() })
	for _, ns := range namespaces {
		if err := r.GrantCode(ctx, ns); err != nil {
			b.Fatal(err)
		}
		if err := c.Create(ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}); err != nil {
			b.Fatal(err)
		}
	}
	apiserver, etcd := descendant("kube-apiserver"), descendant("etcd")

	type figures struct {
		rssPeak, childrenPeak int // KiB
		apiserverCPU, etcdCPU time.Duration
		configMaps            int
		writes, throttled     int // the code's writes sent, and those that waited their turn
	}
	phase := func(worst bool) figures {
		var sbs []*Sandbox
		for i, ns := range namespaces {
			src := starters.Source("oplab")
			if worst {
				src = worstCodes[i%len(worstCodes)].src
			}
			s := &Sandbox{Command: testSandboxCommand}
			if serr := s.Compile(ctx, src); serr != nil {
				b.Fatal(serr)
			}
			sbs = append(sbs, s)
			r.HandOver(ns, s)
		}
		w0, t0 := writes.get()
		api0, etcd0 := cpuOf(apiserver), cpuOf(etcd)
		var f figures
		stop := time.After(*worstFor)
		tick := time.NewTicker(200 * time.Millisecond)
	sample:
		for {
			select {
			case <-stop:
				break sample
			case <-tick.C:
				f.rssPeak = max(f.rssPeak, rssKiB())
				f.childrenPeak = max(f.childrenPeak, childrenAnonKiB())
			}
		}
		tick.Stop()
		f.apiserverCPU, f.etcdCPU = cpuOf(apiserver)-api0, cpuOf(etcd)-etcd0
		w1, t1 := writes.get()
		f.writes, f.throttled = w1-w0, t1-t0
		for i, ns := range namespaces {
			r.TakeBack(ns)
			sbs[i].Close()
			var cms corev1.ConfigMapList
			if err := c.List(ctx, &cms, client.InNamespace(ns)); err != nil {
				b.Fatal(err)
			}
			for _, cm := range cms.Items {
				if strings.HasPrefix(cm.Name, "spam-") {
					f.configMaps++
					_ = c.Delete(ctx, &cm)
				}
			}
		}
		return f
	}
	for b.Loop() {
		rss0 := rssKiB()
		calm := phase(false)
		worst := phase(true)
		secs := worstFor.Seconds()
		for _, p := range []struct {
			name string
			f    figures
		}{{"calm (oplab's reconciler)", calm}, {"worst", worst}} {
			fmt.Printf("%d learners, %s, %s: oplab RSS %d MiB at rest, peak %d MiB; children peak %d MiB in all; "+
				"kube-apiserver %.2f cores, etcd %.2f cores; the code's writes %d (%.1f a second a learner, at most %d), %d of them throttled; %d ConfigMaps made\n",
				n, p.name, *worstFor, rss0>>10, p.f.rssPeak>>10, p.f.childrenPeak>>10,
				p.f.apiserverCPU.Seconds()/secs, p.f.etcdCPU.Seconds()/secs,
				p.f.writes, float64(p.f.writes)/secs/float64(n), controller.CodeWriteRate, p.f.throttled, p.f.configMaps)
		}
		b.ReportMetric(float64(worst.rssPeak>>10), "oplab-rss-peak-MiB")
		b.ReportMetric(float64(worst.childrenPeak>>10), "children-peak-MiB")
		b.ReportMetric(worst.apiserverCPU.Seconds()/secs, "apiserver-cores-worst")
		b.ReportMetric(calm.apiserverCPU.Seconds()/secs, "apiserver-cores-calm")
	}
}

// writeCount counts the learner code's writes on the trace: those sent
// (action steps), and those that waited for the write rate first.
type writeCount struct {
	mu                sync.Mutex
	writes, throttled int
}

func (w *writeCount) Emit(s controller.Step) {
	if !s.YourCode {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case s.Type == controller.StepThrottled:
		w.throttled++
	case s.Type == controller.StepAction, s.Type == controller.StepFinalizer, s.Type == controller.StepStatus && !s.Skipped:
		w.writes++
	}
}

func (w *writeCount) get() (int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.throttled
}

// descendant is the pid of this process's descendant named name (the
// embedded cluster's kube-apiserver, its etcd), or 0.
func descendant(name string) int {
	parents := map[int]int{}
	names := map[int]string{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		open, shut := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || shut < open {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:open])))
		f := strings.Fields(string(b[shut+1:]))
		if len(f) < 2 {
			continue
		}
		names[pid] = string(b[open+1 : shut])
		parents[pid], _ = strconv.Atoi(f[1])
	}
	self := os.Getpid()
	for pid, n := range names {
		if n != name {
			continue
		}
		for p := parents[pid]; p > 1; p = parents[p] {
			if p == self {
				return pid
			}
		}
	}
	return 0
}

// cpuOf is pid's CPU time, zero for no process.
func cpuOf(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	d, _ := cpuTime(pid)
	return d
}

// childrenAnonKiB is the anonymous memory of this process's children (the
// sandboxes), in all: what they cost beyond the binary's shared pages.
func childrenAnonKiB() int {
	total := 0
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		var ppid string
		anon := 0
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				ppid = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
				anon, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
		if ppid == self && strings.Contains(string(b), "Name:\t"+filepath.Base(os.Args[0])) {
			total += anon
		}
	}
	return total
}
