package sandbox

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

// percentiles reports p50 and p99 of d as metrics and prints them.
func percentiles(b *testing.B, name string, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p50, p99 := d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
	b.ReportMetric(float64(p50.Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, name+"-p99-ms")
	fmt.Printf("%s: n=%d p50=%s p99=%s\n", name, len(d), p50.Round(time.Millisecond), p99.Round(time.Millisecond))
}

// BenchmarkCompile: a fresh child started and oplab's reconciler compiled
// in it, what Run my code costs before any reconcile.
func BenchmarkCompile(b *testing.B) {
	src := starters.Source("oplab")
	var d []time.Duration
	for b.Loop() {
		s := &Sandbox{Command: testSandboxCommand}
		began := time.Now()
		if serr := s.Compile(context.Background(), src); serr != nil {
			b.Fatal(serr)
		}
		d = append(d, time.Since(began))
		s.Close()
	}
	percentiles(b, "compile", d)
}

// BenchmarkReconcileRoundTrip: one reconcile of oplab's reconciler in the
// child against a fake client (a found Database, children present), so the
// figure is the sandbox's own cost: the pipe, the JSON, the interpreter.
func BenchmarkReconcileRoundTrip(b *testing.B) {
	s := &Sandbox{Command: testSandboxCommand}
	b.Cleanup(s.Close)
	if serr := s.Compile(context.Background(), starters.Source("oplab")); serr != nil {
		b.Fatal(serr)
	}
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "learner", Name: "shop", UID: "0123456789", Finalizers: []string{controller.Finalizer}}}
	c := fakeClient(db)
	if _, err := s.Reconcile(context.Background(), c, req); err != nil {
		b.Fatal(err)
	}
	var d []time.Duration
	for b.Loop() {
		began := time.Now()
		if _, err := s.Reconcile(context.Background(), c, req); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(began))
	}
	percentiles(b, "reconcile", d)
}
