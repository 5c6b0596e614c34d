package controller

import (
	"context"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/lessons"
)

// TestSetupWithManagerAlone runs the controller as the lesson shows it
// wired, and nothing else: a stock manager, SetupWithManager, no trace, no
// pause gate, no pitfalls. For brings a new Database to Ready; Owns brings
// a StatefulSet scaled by hand back to the spec.
func TestSetupWithManagerAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mgr, err := ctrl.NewManager(e.cfg, ctrl.Options{
		Scheme:                 testScheme,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{e.ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Other tests' managers run controllers named "database" too.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &DatabaseReconciler{
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Scheme:       mgr.GetScheme(),
		Recorder:     mgr.GetEventRecorder(RecorderName),
		Clock:        RealClock{},
		ResyncPeriod: time.Hour, // only events may drive this test
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("SetupWithManager: %v", err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	e.mustCreate(newDB("plain", 1, ""))
	e.expectReady("plain")

	var sts appsv1.StatefulSet
	if err := e.c.Get(e.ctx, e.key("plain"), &sts); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(sts.DeepCopy())
	sts.Spec.Replicas = ptr.To[int32](3)
	if err := e.c.Patch(e.ctx, &sts, patch); err != nil {
		t.Fatal(err)
	}
	polltest.Until(e.t, deadline, "the StatefulSet scaled back to 1 by its owner", func() (bool, error) {
		if err := e.c.Get(e.ctx, e.key("plain"), &sts); err != nil {
			return false, err
		}
		return ptr.Deref(sts.Spec.Replicas, 0) == 1, nil
	})
}

// TestRunnerOwnsWhatSetupWithManagerOwns keeps oplab's own wiring
// (setupController) watching the kinds the lesson's SetupWithManager names:
// the chain is written once for learners and once around the trace, and
// this is what keeps them one list.
func TestRunnerOwnsWhatSetupWithManagerOwns(t *testing.T) {
	regions, err := lessons.Regions(Source)
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, m := range regexp.MustCompile(`\bOwns\(&\w+\.(\w+)\{\}\)`).FindAllStringSubmatch(regions["controller-wiring"].Code, -1) {
		shown = append(shown, m[1])
	}
	var owned []string
	for _, obj := range ownedKinds() {
		owned = append(owned, reflect.TypeOf(obj).Elem().Name())
	}
	if len(shown) == 0 || !slices.Equal(shown, owned) {
		t.Errorf("SetupWithManager Owns %v; the runner owns %v", shown, owned)
	}
	shown = nil
	for _, m := range regexp.MustCompile(`\bWatches\(&\w+\.(\w+)\{\}, handler\.EnqueueRequestsFromMapFunc\((\w+)\)\)`).FindAllStringSubmatch(regions["controller-wiring"].Code, -1) {
		shown = append(shown, m[1]+" "+m[2])
	}
	var watches []string
	for _, w := range watchedKinds() {
		fn := runtime.FuncForPC(reflect.ValueOf(w.to).Pointer()).Name()
		watches = append(watches, reflect.TypeOf(w.obj).Elem().Name()+" "+fn[strings.LastIndex(fn, ".")+1:])
	}
	if len(shown) == 0 || !slices.Equal(shown, watches) {
		t.Errorf("SetupWithManager Watches %v; the runner watches %v", shown, watches)
	}
}
