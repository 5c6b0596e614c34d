package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/lab"
)

// These tests run each scenario of lab.Scenarios on the real cluster, as a
// learner would (the setup POST, then the learner's actions), and check the
// evidence its "What to watch" text promises in the steps the recorder
// holds for the learner's namespace: the same steps the timeline draws.

// trace is the recorded steps of one Database in ns, in seq order.
func (e *testEnv) trace(ns, db string) []controller.Step {
	var out []controller.Step
	for _, raw := range e.recorder.Export(ns).Messages {
		var m trace.Message
		if err := json.Unmarshal(raw, &m); err != nil || m.Type == trace.TypeState {
			continue
		}
		if m.Database == db || (m.Object.Kind == "Database" && m.Object.Name == db) {
			out = append(out, m.Step)
		}
	}
	return out
}

// atRest reports whether a trace has come to rest: a reconcile started
// after its last watch event (one that was queued, not held or dropped)
// and has ended. Whatever those events changed has been reconciled. What
// that reconcile's result asked for (a requeue, a retry after an error,
// the resync) may still come: rest speaks for what the events caused, not
// for a later requeue. Waiting for it, rather than for a few seconds, is
// what lets a test say "and then nothing more came of it": the reconcile
// that would have done it has run.
func atRest(steps []controller.Step) bool {
	lastEvent, lastStart := -1, -1
	for i, s := range steps {
		switch {
		case s.Type == controller.StepEvent && !s.Ignored && !s.Held:
			lastEvent = i
		case s.Type == controller.StepReconcileStart:
			lastStart = i
		}
	}
	if lastStart < 0 || lastStart < lastEvent {
		return false
	}
	id := steps[lastStart].ReconcileID
	return slices.ContainsFunc(steps[lastStart:], func(s controller.Step) bool {
		return s.Type == controller.StepResult && s.ReconcileID == id
	})
}

// heldDeleteOrReconcile is what ends a wait for a Database's delete to be
// held while its namespace is paused: the Database's update event past
// generation gen (the API server bumps the generation when it sets the
// deletionTimestamp), or a reconcile, which a paused namespace must not
// see. A status write still in flight when the namespace paused, or a
// child's status settling, is held too, and is not the delete.
func heldDeleteOrReconcile(gen int64) func(controller.Step) bool {
	return func(s controller.Step) bool {
		return s.Type == controller.StepEvent && s.Held && s.Object.Kind == "Database" && s.Generation > gen ||
			s.Type == controller.StepReconcileStart
	}
}

// generationOf is the Database's metadata.generation as the API server has it.
func generationOf(t *testing.T, e *testEnv, ns, name string) int64 {
	t.Helper()
	var db v1alpha1.Database
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &db); err != nil {
		t.Fatal(err)
	}
	return db.Generation
}

// deleteEventsOf lists the kinds whose delete event the trace holds.
func deleteEventsOf(steps []controller.Step) []string {
	var kinds []string
	for _, s := range steps {
		if s.Type == controller.StepEvent && s.Event == "delete" && !slices.Contains(kinds, s.Object.Kind) {
			kinds = append(kinds, s.Object.Kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// waitTrace waits until cond holds for db's trace and returns that trace.
func (e *testEnv) waitTrace(t *testing.T, what, ns, db string, cond func([]controller.Step) bool) []controller.Step {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		steps := e.trace(ns, db)
		if cond(steps) {
			return steps
		}
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s; the trace:%s", what, describeTrace(steps))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// describeTrace is a compact listing of steps for failure messages.
func describeTrace(steps []controller.Step) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "\n  %d %s", s.Seq, s.Type)
		for _, f := range []string{s.Event, s.Trigger, s.Action, string(s.Outcome), s.Phase, s.Result, s.Error} {
			if f != "" {
				fmt.Fprintf(&b, " %s", f)
			}
		}
		if s.Target != nil {
			fmt.Fprintf(&b, " %s/%s", s.Target.Kind, s.Target.Name)
		}
		for _, c := range s.Conditions {
			fmt.Fprintf(&b, " %s=%s", c.Type, c.To)
		}
		if s.Type == controller.StepStatus {
			fmt.Fprintf(&b, " observed=%d skipped=%v", s.ObservedGeneration, s.Skipped)
		}
		if s.Ignored {
			b.WriteString(" ignored")
		}
	}
	return b.String()
}

func setUp(t *testing.T, e *testEnv, scenario string) (*http.Client, string) {
	t.Helper()
	c, ns := e.learner(t)
	if code, res := postForm(t, c, e.http.URL, "/lab/scenarios/"+scenario, nil); code != 200 {
		t.Fatalf("set up %s: %d %+v", scenario, code, res)
	}
	return c, ns
}

func act(t *testing.T, e *testEnv, c *http.Client, path string, form url.Values) {
	t.Helper()
	if code, res := postForm(t, c, e.http.URL, path, form); code != 200 {
		t.Fatalf("POST %s: %d %+v", path, code, res)
	}
}

// readyStatus reports whether a status step wrote Ready=True.
func readyStatus(s controller.Step) bool {
	return s.Type == controller.StepStatus && slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
		return c.Type == "Ready" && c.To == "True"
	})
}

func errorRows(steps []controller.Step) []controller.Step {
	var out []controller.Step
	for _, s := range steps {
		if s.Result == "error" || s.Outcome == controller.OutcomeError || s.Error != "" {
			out = append(out, s)
		}
	}
	return out
}

func TestScenarioFirstReconcile(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	_, ns := setUp(t, e, "first-reconcile")
	steps := e.waitTrace(t, "first Ready", ns, "first", func(s []controller.Step) bool { return slices.ContainsFunc(s, readyStatus) })
	// The create event arrives first and queues the first reconcile.
	first := slices.IndexFunc(steps, func(s controller.Step) bool { return s.Type == controller.StepReconcileStart })
	if first < 0 || !slices.ContainsFunc(steps[:first], func(s controller.Step) bool { return s.Type == controller.StepEvent && s.Event == "create" }) ||
		steps[first].Trigger != controller.TriggerEvent {
		t.Fatalf("no create event before the first reconcile, or it was not triggered by it:%s", describeTrace(steps))
	}
	// One reconcile: fetch, the finalizer added, then the three children
	// created, then status written once with observedGeneration 1,
	// Progressing.
	id := steps[first].ReconcileID
	var kinds []string
	var statuses []controller.Step
	fetched, finalizer := false, false
	for _, s := range steps {
		if s.ReconcileID != id {
			continue
		}
		switch {
		case s.Type == controller.StepFetch:
			fetched = true
		case s.Type == controller.StepFinalizer && s.Phase == "added":
			finalizer = fetched
		case s.Type == controller.StepAction && s.Action == "create" && s.Outcome == controller.OutcomeCreated:
			if !fetched || !finalizer {
				t.Errorf("created %s before fetching the Database and adding the finalizer", s.Target.Kind)
			}
			kinds = append(kinds, s.Target.Kind)
		case s.Type == controller.StepStatus && !s.Skipped:
			statuses = append(statuses, s)
		}
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"Secret", "Service", "StatefulSet"}) {
		t.Errorf("the first reconcile created %v, want Secret, Service and StatefulSet:%s", kinds, describeTrace(steps))
	}
	if len(statuses) != 1 || statuses[0].ObservedGeneration != 1 ||
		!slices.ContainsFunc(statuses[0].Conditions, func(c controller.ConditionChange) bool { return c.Type == "Progressing" && c.To == "True" }) {
		t.Errorf("the first reconcile wrote status %d times; want once, Progressing=True with observedGeneration 1:%s", len(statuses), describeTrace(steps))
	}
	// Ready=True comes from a later reconcile, after the Pods' events.
	ready := slices.IndexFunc(steps, readyStatus)
	if steps[ready].ReconcileID == id {
		t.Errorf("Ready=True written by the first reconcile; the text says a later one:%s", describeTrace(steps))
	}
	if bad := errorRows(steps); len(bad) > 0 {
		t.Errorf("error rows:%s", describeTrace(bad))
	}
}

func TestScenarioAlreadyExists(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	_, ns := setUp(t, e, "already-exists")
	steps := e.waitTrace(t, "taken Ready", ns, "taken", func(s []controller.Step) bool { return slices.ContainsFunc(s, readyStatus) })
	isService := func(s controller.Step) bool { return s.Target != nil && s.Target.Kind == "Service" }
	exists := slices.IndexFunc(steps, func(s controller.Step) bool {
		return s.Type == controller.StepAction && s.Action == "create" && isService(s) && s.Outcome == controller.OutcomeAlreadyExists
	})
	if exists < 0 {
		t.Fatalf("no create Service → AlreadyExists:%s", describeTrace(steps))
	}
	if !slices.ContainsFunc(steps[exists:], func(s controller.Step) bool {
		return s.Type == controller.StepAction && s.Action == "patch" && isService(s) && s.Outcome == controller.OutcomeUpdated
	}) {
		t.Errorf("the Service was not corrected (patch → Updated) after AlreadyExists:%s", describeTrace(steps))
	}
	if bad := errorRows(steps); len(bad) > 0 {
		t.Errorf("error rows; AlreadyExists is convergence:%s", describeTrace(bad))
	}
	var svc corev1.Service
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "taken"}, &svc); err != nil {
		t.Fatal(err)
	}
	var db v1alpha1.Database
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "taken"}, &db); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&svc, &db) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 5432 || svc.Spec.Selector["app"] == "made-by-hand" {
		t.Errorf("Service taken: owner %v, ports %+v, selector %v; want adopted by the Database, port 5432, its selector", svc.OwnerReferences, svc.Spec.Ports, svc.Spec.Selector)
	}
}

// finalizerPhases are the finalizer phases of steps, in order. A phase that
// has to wait (draining, until the Pods are gone) is reported by each
// reconcile that waits; it counts once.
func finalizerPhases(steps []controller.Step) []string {
	var out []string
	for _, s := range steps {
		if s.Type == controller.StepFinalizer && s.Phase != "added" && (len(out) == 0 || out[len(out)-1] != s.Phase) {
			out = append(out, s.Phase)
		}
	}
	return out
}

func (e *testEnv) gone(ctx context.Context, obj client.Object) (bool, error) {
	err := e.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

func snapshotKept(t *testing.T, e *testEnv, ns, db string) bool {
	t.Helper()
	var cm corev1.ConfigMap
	err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: controller.SnapshotName(db)}, &cm)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestScenarioFinalizer(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := setUp(t, e, "finalizer")
	act(t, e, c, "/lab/databases/doomed/delete", nil)
	// Terminating, held by the finalizer, while the phases run.
	polltest.Until(t, deadline, "doomed Terminating or gone", func() (bool, error) {
		d, ok := e.latestState(ns, "doomed")
		return !ok || d.Terminating, nil
	})
	db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}}
	polltest.Until(t, deadline, "doomed gone", func() (bool, error) { return e.gone(t.Context(), db) })
	steps := e.waitTrace(t, "the finalizer removed", ns, "doomed", func(s []controller.Step) bool {
		return slices.Contains(finalizerPhases(s), "removed")
	})
	if got := finalizerPhases(steps); !slices.Equal(got, []string{"draining", "snapshot", "removed"}) {
		t.Errorf("finalizer phases %v, want draining, snapshot, removed:%s", got, describeTrace(steps))
	}
	if !snapshotKept(t, e, ns, "doomed") {
		t.Error("the snapshot ConfigMap doomed-final-snapshot is gone; nothing owns it, it must stay")
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}}
	polltest.Until(t, deadline, "the garbage collector to delete doomed's children", func() (bool, error) {
		a, err := e.gone(t.Context(), sts)
		if err != nil || !a {
			return false, err
		}
		return e.gone(t.Context(), svc)
	})
	// Every late reconcile of the gone Database has run once the delete
	// events of it, its three children and its Pods (which the controller
	// watches too) are in the trace and the trace is at rest; none of them
	// may show an error.
	all := e.waitTrace(t, "the delete events of doomed, its three children and its Pods, reconciled", ns, "doomed", func(s []controller.Step) bool {
		return slices.Equal(deleteEventsOf(s), []string{"Database", "Pod", "Secret", "Service", "StatefulSet"}) && atRest(s)
	})
	if len(errorRows(all)) > 0 {
		t.Errorf("error rows after a delete:%s\nin the trace:%s", describeTrace(errorRows(all)), describeTrace(all[max(0, len(all)-40):]))
	}
}

func TestScenarioStatusThrash(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := setUp(t, e, "status-thrash")
	t.Cleanup(func() { postForm(t, c, e.http.URL, "/lab/databases/thrash/pitfall", url.Values{"pitfall": {""}}) })
	writes := func(steps []controller.Step) []controller.Step {
		var out []controller.Step
		for _, s := range steps {
			if s.Type == controller.StepStatus && !s.Skipped {
				out = append(out, s)
			}
		}
		return out
	}
	steps := e.waitTrace(t, "six status writes of thrash", ns, "thrash", func(s []controller.Step) bool { return len(writes(s)) >= 6 })
	// The spec never changed: every write is of generation 1, and the
	// reconciles after the first are triggered by the writes' own events.
	for _, s := range writes(steps) {
		if s.ObservedGeneration != 1 {
			t.Errorf("status write of generation %d; the spec did not change", s.ObservedGeneration)
		}
	}
	// The rewrites are visible in the trace: after the first writes, each
	// rewrite keeps Ready's value but moves its lastTransitionTime, and the
	// write counter climbs.
	ws := writes(steps)
	moved := 0
	for i, w := range ws {
		if i > 0 && w.StatusWrites <= ws[i-1].StatusWrites {
			t.Errorf("status write counter %d after %d; want it to climb", w.StatusWrites, ws[i-1].StatusWrites)
		}
		for _, c := range w.Conditions {
			if c.Type == "Ready" && !c.Transition && c.From == c.To && c.LastTransitionTime != "" && c.LastTransitionTime != c.FromLastTransitionTime {
				moved++
			}
		}
	}
	if moved < 3 {
		t.Errorf("%d rewrites moved Ready's lastTransitionTime with its value unchanged; want the storm visible:%s", moved, describeTrace(ws))
	}
	// The cycle the scenario describes: a write's own event wakes a
	// reconcile that the cap holds back and that requeues; the requeued
	// one writes.
	type run struct {
		start         controller.Step
		held, written bool
		result        string
	}
	runs := map[string]*run{}
	var order []*run
	for _, s := range steps {
		if s.ReconcileID == "" {
			continue
		}
		r := runs[s.ReconcileID]
		if r == nil {
			r = &run{}
			runs[s.ReconcileID] = r
			order = append(order, r)
		}
		switch {
		case s.Type == controller.StepReconcileStart:
			r.start = s
		case s.Type == controller.StepStatus && s.Held:
			r.held = true
		case s.Type == controller.StepStatus && !s.Skipped:
			r.written = true
		case s.Type == controller.StepResult:
			r.result = s.Result
		}
	}
	heldOnOwnEvent, writtenOnRequeue := 0, 0
	for _, r := range order {
		ownEvent := r.start.Trigger == "event" && r.start.WokenBy != nil && r.start.WokenBy.Kind == "Database" && r.start.WokenBy.Name == "thrash"
		if ownEvent && r.held && r.result == "requeue" {
			heldOnOwnEvent++
		}
		if r.start.Trigger == "requeue" && r.written {
			writtenOnRequeue++
		}
	}
	if heldOnOwnEvent < 2 || writtenOnRequeue < 2 {
		t.Errorf("%d reconciles woken by thrash's own event held their write and requeued, %d requeued ones wrote; want the cycle at least twice:%s",
			heldOnOwnEvent, writtenOnRequeue, describeTrace(steps))
	}
	// And read back from the API server, with the spec unchanged.
	var db v1alpha1.Database
	ltt := func() time.Time {
		if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "thrash"}, &db); err != nil {
			t.Fatal(err)
		}
		for _, c := range db.Status.Conditions {
			if c.Type == "Ready" {
				return c.LastTransitionTime.Time
			}
		}
		return time.Time{}
	}
	before := ltt()
	polltest.Until(t, deadline, "Ready's lastTransitionTime to move with the spec unchanged", func() (bool, error) {
		return ltt().After(before) && db.Generation == 1, nil
	})
	// Switching the pitfall off ends the storm: a reconcile finds nothing
	// to write, so no write's event wakes another.
	off := len(e.trace(ns, "thrash"))
	act(t, e, c, "/lab/databases/thrash/pitfall", url.Values{"pitfall": {""}})
	steps = e.waitTrace(t, "a reconcile of thrash that writes no status, then rest", ns, "thrash", func(s []controller.Step) bool {
		return slices.ContainsFunc(s[off:], func(s controller.Step) bool { return s.Type == controller.StepStatus && s.Skipped && !s.Held }) && atRest(s)
	})
	// And it stays ended: the next reconcile, woken by an annotation no
	// code reads, finds nothing to write either. A write the cap held back
	// is one the loop tried, so it counts.
	poke := len(steps)
	if err := e.client.Patch(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "thrash"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test.oplab.dev/poke":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	steps = e.waitTrace(t, "the poked reconcile of thrash, then rest", ns, "thrash", func(s []controller.Step) bool {
		return slices.ContainsFunc(s[poke:], func(s controller.Step) bool { return s.Type == controller.StepReconcileStart }) && atRest(s)
	})
	tried := slices.DeleteFunc(slices.Clone(steps[poke:]), func(s controller.Step) bool {
		return s.Type != controller.StepStatus || (s.Skipped && !s.Held)
	})
	if len(tried) > 0 {
		t.Errorf("%d status writes tried after the pitfall was switched off and a reconcile wrote nothing; want none:%s", len(tried), describeTrace(tried))
	}
}

func TestScenarioStuckFinalizer(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	for _, finish := range []string{"resume", "escape hatch"} {
		t.Run(finish, func(t *testing.T) {
			c, ns := setUp(t, e, "stuck-finalizer")
			t.Cleanup(func() { e.runner.ResumeNamespace(ns) })
			if !e.runner.NamespacePaused(ns) || !e.runner.Running() {
				t.Fatalf("after setup: namespace paused %v, controller running %v; want only the namespace paused", e.runner.NamespacePaused(ns), e.runner.Running())
			}
			deleted, gen := len(e.trace(ns, "stuck")), generationOf(t, e, ns, "stuck")
			act(t, e, c, "/lab/databases/stuck/delete", nil)
			db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stuck"}}
			// Terminating persists while the namespace is paused: the
			// delete's event (an update of the Database: its
			// deletionTimestamp set) arrives and is held, not reconciled.
			// A reconcile instead ends the wait too, and fails below.
			e.waitTrace(t, "the delete's event held", ns, "stuck", func(s []controller.Step) bool {
				return slices.ContainsFunc(s[deleted:], heldDeleteOrReconcile(gen))
			})
			if err := e.client.Get(t.Context(), client.ObjectKeyFromObject(db), db); err != nil || db.DeletionTimestamp == nil ||
				!slices.Contains(db.Finalizers, controller.Finalizer) {
				t.Fatalf("stuck while paused: err %v, deletionTimestamp %v, finalizers %v; want Terminating, held by the finalizer", err, db.DeletionTimestamp, db.Finalizers)
			}
			if later := e.trace(ns, "stuck")[deleted:]; slices.ContainsFunc(later, func(s controller.Step) bool { return s.Type == controller.StepReconcileStart }) {
				t.Errorf("a reconcile ran while the namespace was paused:%s", describeTrace(later))
			}
			switch finish {
			case "resume":
				act(t, e, c, "/lab/controller/start", nil)
				polltest.Until(t, deadline, "stuck gone", func() (bool, error) { return e.gone(t.Context(), db) })
				steps := e.waitTrace(t, "the finalizer removed", ns, "stuck", func(s []controller.Step) bool {
					return slices.Contains(finalizerPhases(s), "removed")
				})
				if got := finalizerPhases(steps); !slices.Equal(got, []string{"draining", "snapshot", "removed"}) {
					t.Errorf("finalizer phases after resuming %v, want draining, snapshot, removed:%s", got, describeTrace(steps))
				}
				if !snapshotKept(t, e, ns, "stuck") {
					t.Error("resumed: no snapshot ConfigMap; the finalizer should have written it")
				}
			case "escape hatch":
				act(t, e, c, "/lab/databases/stuck/finalizers/remove", nil)
				polltest.Until(t, deadline, "stuck gone", func() (bool, error) { return e.gone(t.Context(), db) })
				if snapshotKept(t, e, ns, "stuck") {
					t.Error("escape hatch: a snapshot ConfigMap exists; the text says it is never taken")
				}
				if phases := finalizerPhases(e.trace(ns, "stuck")); len(phases) > 0 {
					t.Errorf("escape hatch: finalizer phases %v ran; want none", phases)
				}
			}
		})
	}
}

func TestScenarioNonIdempotentCreate(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := setUp(t, e, "non-idempotent-create")
	switchedOff := false
	t.Cleanup(func() {
		if !switchedOff {
			postForm(t, c, e.http.URL, "/lab/databases/twice/pitfall", url.Values{"pitfall": {""}})
		}
	})
	failures := func(steps []controller.Step) []controller.Step {
		var out []controller.Step
		for _, s := range steps {
			if s.Type == controller.StepResult && s.Result == "error" {
				out = append(out, s)
			}
		}
		return out
	}
	retriesOf := func(steps []controller.Step) []time.Time {
		var out []time.Time
		for _, s := range steps {
			if s.Type == controller.StepReconcileStart && s.Trigger == controller.TriggerRequeue {
				out = append(out, s.Time)
			}
		}
		return out
	}
	steps := e.waitTrace(t, "six retries of twice", ns, "twice", func(s []controller.Step) bool { return len(retriesOf(s)) >= 6 })
	// The first reconcile creates the children; the failures are Create
	// meeting AlreadyExists.
	created := 0
	for _, s := range steps {
		if s.Type == controller.StepAction && s.Action == "create" && s.Outcome == controller.OutcomeCreated {
			created++
		}
	}
	if created != 3 {
		t.Errorf("%d children created, want the 3 of the first reconcile:%s", created, describeTrace(steps))
	}
	fails := failures(steps)
	for _, f := range fails {
		if !strings.Contains(f.Error, "already exists") {
			t.Errorf("failure %q does not name AlreadyExists", f.Error)
		}
	}
	// Backoff grows: the gaps between the retries widen. The first retries
	// share their moment with the children's own events (milliseconds
	// apart, noisy); the last four are each at least the double-ish of the
	// one before.
	retries := retriesOf(steps)
	var gaps []time.Duration
	for i := 1; i < len(retries); i++ {
		gaps = append(gaps, retries[i].Sub(retries[i-1]))
	}
	if len(gaps) < 4 {
		t.Fatalf("only %d retries (trigger requeue) among the failures:%s", len(retries), describeTrace(steps))
	}
	last := gaps[len(gaps)-4:]
	for i := 1; i < len(last); i++ {
		if last[i] <= last[i-1] {
			t.Errorf("gaps between retries %v do not grow", gaps)
			break
		}
	}
	// Each failure's result names the backoff before its retry, growing.
	for i := 1; i < len(fails); i++ {
		if fails[i].RequeueAfter < fails[i-1].RequeueAfter {
			t.Errorf("backoff shrank from %s to %s", fails[i-1].RequeueAfter, fails[i].RequeueAfter)
		}
	}
	if first, last := fails[0].RequeueAfter, fails[len(fails)-1].RequeueAfter; last <= first {
		t.Errorf("backoff %s → %s over %d failures; want it growing", first, last, len(fails))
	}
	polltest.Until(t, deadline, "Degraded=True on twice", func() (bool, error) {
		var db v1alpha1.Database
		if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "twice"}, &db); err != nil {
			return false, err
		}
		for _, c := range db.Status.Conditions {
			if c.Type == "Degraded" {
				return c.Status == metav1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	// Switching the pitfall off: the next reconcile converges.
	act(t, e, c, "/lab/databases/twice/pitfall", url.Values{"pitfall": {""}})
	switchedOff = true
	n := len(e.trace(ns, "twice"))
	e.waitTrace(t, "a reconcile of twice that converges", ns, "twice", func(s []controller.Step) bool {
		return slices.ContainsFunc(s[n:], func(s controller.Step) bool { return s.Type == controller.StepResult && s.Result == "done" })
	})
}

func TestScenarioDropEvents(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := setUp(t, e, "drop-events")
	resyncs := func(steps []controller.Step) int {
		n := 0
		for _, s := range steps {
			if s.Type == controller.StepReconcileStart && s.Trigger == controller.TriggerResync {
				n++
			}
		}
		return n
	}
	// Ready, reached without any event-triggered reconcile.
	steps := e.waitTrace(t, "deaf Ready", ns, "deaf", func(s []controller.Step) bool { return slices.ContainsFunc(s, readyStatus) })
	checkNoEventTriggered := func(steps []controller.Step) {
		t.Helper()
		for _, s := range steps {
			if s.Type == controller.StepEvent && !s.Ignored {
				t.Errorf("event %s not marked ignored:%s", s.Event, describeTrace([]controller.Step{s}))
			}
			if s.Type == controller.StepReconcileStart && s.Trigger == controller.TriggerEvent {
				t.Errorf("a reconcile was triggered by an event:%s", describeTrace(steps))
				return
			}
		}
	}
	checkNoEventTriggered(steps)
	// Change its replicas: generation moves, observedGeneration does not.
	before := resyncs(e.trace(ns, "deaf"))
	act(t, e, c, "/lab/databases/deaf/edit", url.Values{"replicas": {"2"}, "version": {""}})
	polltest.Until(t, deadline, "deaf stale: generation 2, observedGeneration 1", func() (bool, error) {
		d, ok := e.latestState(ns, "deaf")
		return ok && d.Generation == 2 && d.ObservedGeneration == 1 && d.Stale, nil
	})
	// The next resync converges it, Ready included, in that one reconcile
	// or the requeues it schedules, with no event's help.
	n := len(e.trace(ns, "deaf"))
	steps = e.waitTrace(t, "a status write of generation 2 with Ready=True", ns, "deaf", func(s []controller.Step) bool {
		return slices.ContainsFunc(s[n:], func(s controller.Step) bool { return readyStatus(s) && s.ObservedGeneration == 2 })
	})
	ready := n + slices.IndexFunc(steps[n:], func(s controller.Step) bool { return readyStatus(s) && s.ObservedGeneration == 2 })
	if got := resyncs(steps[:ready+1]) - before; got != 1 {
		t.Errorf("generation 2 reached Ready after %d resyncs, want in the first one:%s", got, describeTrace(steps[n:ready+1]))
	}
	checkNoEventTriggered(steps)
	var sts appsv1.StatefulSet
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "deaf"}, &sts); err != nil || sts.Spec.Replicas == nil || *sts.Spec.Replicas != 2 {
		t.Errorf("StatefulSet deaf after the resync: %v %v; want 2 replicas", err, sts.Spec.Replicas)
	}
}

// Every scenario in lab.Scenarios has its evidence test here.
func TestEveryScenarioHasAnEvidenceTest(t *testing.T) {
	t.Parallel()
	tested := []string{"first-reconcile", "already-exists", "finalizer", "status-thrash", "stuck-finalizer", "non-idempotent-create", "drop-events"}
	for _, s := range lab.Scenarios {
		if !slices.Contains(tested, s.Name) {
			t.Errorf("scenario %s has no evidence test in scenario_test.go", s.Name)
		}
	}
}

// TestANextScenarioLeavesNothingRetrying: a scenario left in its error
// loop (twice, non-idempotent-create) does not go on retrying on the next
// scenario's timeline: setting up the next one switches the pitfall off,
// says so, and twice's next reconcile converges.
func TestANextScenarioLeavesNothingRetrying(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := setUp(t, e, "non-idempotent-create")
	e.waitTrace(t, "a failed reconcile of twice", ns, "twice", func(s []controller.Step) bool {
		return slices.ContainsFunc(s, func(x controller.Step) bool { return x.Type == controller.StepResult && x.Result == "error" })
	})
	code, res := postForm(t, c, e.http.URL, "/lab/scenarios/first-reconcile", nil)
	if code != 200 || !strings.Contains(res.Message, "Switched off the pitfall left on twice") {
		t.Fatalf("set up first-reconcile: %d %q, want it to say it switched twice's pitfall off", code, res.Message)
	}
	var db v1alpha1.Database
	if err := e.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "twice"}, &db); err != nil {
		t.Fatal(err)
	}
	if p := db.Annotations[controller.PitfallAnnotation]; p != "" {
		t.Errorf("twice's pitfall is still %q", p)
	}
	mark := len(e.trace(ns, "twice"))
	e.waitTrace(t, "twice's reconcile after the switch ends done", ns, "twice", func(s []controller.Step) bool {
		return len(s) > mark && slices.ContainsFunc(s[mark:], func(x controller.Step) bool { return x.Type == controller.StepResult && x.Result == "done" })
	})
}
