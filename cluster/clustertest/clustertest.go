// Package clustertest gives tests the embedded control plane: the guard
// every test that needs it starts with, and one cluster a package's tests
// share.
//
// Without the provisioned binaries a test skips, so that `go test ./...`
// on a machine that never ran `make controlplane` still says something;
// with CI set, the same absence fails the test, so that CI can never pass
// by skipping what it exists to run.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"

	"github.com/oplab-dev/oplab/cluster"
)

// Assets returns the directory of the provisioned control plane. Without
// one it skips tb, or fails it when CI is set.
func Assets(tb testing.TB) string {
	tb.Helper()
	dir, err := cluster.FindAssets()
	if err != nil {
		if ci := os.Getenv("CI"); ci != "" {
			tb.Fatalf("CI=%s and %v", ci, err)
		}
		tb.Skipf("skipping: %v (with CI set, a failure)", err)
	}
	return dir
}

// Shared is the cluster a package's tests share: the first Get starts it,
// later ones return it (or the error it failed with), and the package's
// TestMain calls Stop. One cluster per package: the suite pays one
// control-plane start for each package, not one for each test.
type Shared struct {
	// Options returns how to start the cluster; the first Get calls it.
	// OPLAB_CLUSTER_LOG set, and Options' Log nil, the control plane's
	// logs go to standard error.
	Options func() (cluster.Options, error)
	// Setup, when set, runs once the cluster has started, before the
	// first Get returns (installing what the package's tests need
	// cluster-wide, such as admission policies).
	Setup []func(context.Context, *rest.Config) error

	once sync.Once
	c    *cluster.Cluster
	err  error
}

// Full is a Shared full-mode cluster (kube-controller-manager and kwok,
// so that StatefulSets get Pods and the garbage collector runs) with the
// CRDs crds returns installed. It takes a function, not the CRDs, so that
// the controller package's own tests, which this package cannot import,
// pass theirs the same way as everyone else.
//
// Each of setup runs once the cluster has started (controller's
// InstallLearnerPolicies, for a package that runs learner code).
func Full(crds func() ([]*apiextensionsv1.CustomResourceDefinition, error), setup ...func(context.Context, *rest.Config) error) *Shared {
	return &Shared{Options: func() (cluster.Options, error) {
		c, err := crds()
		return cluster.Options{Mode: cluster.ModeFull, CRDs: c}, err
	}, Setup: setup}
}

// Get returns the shared cluster, started on first use; without the
// control plane it skips tb as Assets does.
func (s *Shared) Get(tb testing.TB) *cluster.Cluster {
	tb.Helper()
	Assets(tb)
	s.once.Do(func() {
		opts, err := s.Options()
		if err != nil {
			s.err = err
			return
		}
		if opts.Log == nil && os.Getenv("OPLAB_CLUSTER_LOG") != "" {
			opts.Log = os.Stderr
		}
		s.c, s.err = cluster.Start(context.Background(), opts)
		for _, f := range s.Setup {
			if s.err == nil {
				s.err = f(context.Background(), s.c.Config())
			}
		}
	})
	if s.err != nil {
		tb.Fatalf("starting the shared cluster: %v", s.err)
	}
	return s.c
}

// Stop stops the cluster if a Get started it. Call it from TestMain, after
// m.Run: a test's Cleanup would stop it under the tests still to run.
func (s *Shared) Stop() error {
	if s.c == nil {
		return nil
	}
	if err := s.c.Stop(); err != nil {
		return fmt.Errorf("stopping the shared cluster: %w", err)
	}
	return nil
}
