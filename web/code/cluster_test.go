package code

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/oplab-dev/oplab/cluster"
	"github.com/oplab-dev/oplab/controller"
)

var (
	shared     *cluster.Cluster
	sharedErr  error
	sharedOnce sync.Once
)

func startCluster(t testing.TB) *cluster.Cluster {
	t.Helper()
	if _, err := cluster.FindAssets(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI=%s and %v", os.Getenv("CI"), err)
		}
		t.Skipf("skipping: needs the embedded cluster: %v", err)
	}
	sharedOnce.Do(func() {
		crds, err := controller.CRDs()
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = cluster.Start(context.Background(), cluster.Options{Mode: cluster.ModeFull, CRDs: crds})
	})
	if sharedErr != nil {
		t.Fatalf("starting the cluster: %v", sharedErr)
	}
	return shared
}

func stopCluster() {
	if shared != nil {
		_ = shared.Stop()
	}
}
