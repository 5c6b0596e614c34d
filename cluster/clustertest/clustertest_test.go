package clustertest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/cluster"
)

// verdict is a testing.TB that records how a guard ended the test it was
// given: Fatalf and Skipf end the calling goroutine, as the real ones do.
type verdict struct {
	testing.TB
	how, msg string
}

func (v *verdict) Helper() {}
func (v *verdict) Fatalf(format string, args ...any) {
	v.how, v.msg = "failed", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (v *verdict) Skipf(format string, args ...any) {
	v.how, v.msg = "skipped", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a verdict in its own goroutine, as the testing package
// runs a test, and returns how it ended.
func run(t *testing.T, f func(testing.TB)) *verdict {
	v := &verdict{TB: t, how: "ran on"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(v)
	}()
	<-done
	return v
}

// No control plane: a skip on a desk, a failure in CI, never a test that
// runs on and fails obscurely.
func TestWithoutAControlPlaneSkipsOrFailsInCI(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	if _, err := cluster.FindAssets(); err == nil {
		t.Fatal("FindAssets found a control plane in an empty data home")
	}
	started := false
	s := &Shared{Options: func() (cluster.Options, error) { started = true; return cluster.Options{}, nil }}
	for _, c := range []struct{ ci, want string }{{"", "skipped"}, {"true", "failed"}} {
		t.Setenv("CI", c.ci)
		if v := run(t, func(tb testing.TB) { Assets(tb) }); v.how != c.want {
			t.Errorf("CI=%q: Assets %s, want %s", c.ci, v.how, c.want)
		}
		if v := run(t, func(tb testing.TB) { s.Get(tb) }); v.how != c.want {
			t.Errorf("CI=%q: Get %s, want %s", c.ci, v.how, c.want)
		}
	}
	if started {
		t.Error("Get asked for the cluster's options without a control plane to start")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop of a cluster never started: %v", err)
	}
}

// The options' error is the test's failure, named, and it is not retried
// by the next Get.
func TestOptionsErrorFailsEveryGet(t *testing.T) {
	dir := Assets(t) // needs the binaries, since Get checks for them first
	calls := 0
	s := &Shared{Options: func() (cluster.Options, error) {
		calls++
		return cluster.Options{}, errors.New("the CRD does not parse")
	}}
	for range 2 {
		v := run(t, func(tb testing.TB) { s.Get(tb) })
		if v.how != "failed" || !strings.Contains(v.msg, "the CRD does not parse") {
			t.Errorf("Get with %s: %s %q, want a failure naming the options' error", dir, v.how, v.msg)
		}
	}
	if calls != 1 {
		t.Errorf("Options called %d times, want once", calls)
	}
}
