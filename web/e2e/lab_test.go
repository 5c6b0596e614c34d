package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
	"github.com/oplab-dev/oplab/web/lab"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/session"
)

// postForm sends a form as lab/forms.js does (asking for JSON) and decodes the answer.
func postForm(t *testing.T, c *http.Client, base, path string, form url.Values) (int, lab.Result) {
	t.Helper()
	resp, b := postAccept(t, c, base+path, form, "application/json")
	var res lab.Result
	if err := json.Unmarshal([]byte(b), &res); err != nil {
		t.Fatalf("POST %s: answer is not JSON: %s", path, b)
	}
	return resp.StatusCode, res
}

// latestState returns the last state the recorder holds for a Database.
func (e *testEnv) latestState(ns, name string) (dbview.Database, bool) {
	var d dbview.Database
	found := false
	for _, raw := range e.recorder.Export(ns).Messages {
		var m trace.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			continue
		}
		if m.Type != "state" || m.Object.Kind != "Database" || m.Object.Name != name {
			continue
		}
		found = m.State != nil
		if found {
			d = dbview.Database{}
			_ = json.Unmarshal(m.State, &d)
		}
	}
	return d, found
}

func TestAPIServerValidationReachesTheLearner(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, _ := e.learner(t)
	code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {"seven"}, "replicas": {"7"}})
	if code != http.StatusUnprocessableEntity || res.Field != "replicas" ||
		!strings.Contains(res.Message, "spec.replicas: Invalid value: 7") || !strings.Contains(res.Message, "less than or equal to 5") {
		t.Errorf("got %d %+v; want 422 on replicas with the API server's wording", code, res)
	}
}

func TestStateFollowsTheCluster(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	if code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {"alpha"}, "replicas": {"2"}}); code != 200 {
		t.Fatalf("create: %d %+v", code, res)
	}
	var nsObj corev1.Namespace
	if err := e.client.Get(t.Context(), types.NamespacedName{Name: ns}, &nsObj); err != nil || nsObj.Labels[labns.LabLabel] != "true" {
		t.Errorf("namespace %s: %v labels %v; want it labelled %s=true", ns, err, nsObj.Labels, labns.LabLabel)
	}
	var d dbview.Database
	polltest.Until(t, deadline, "alpha Ready with both Pods in its owner tree", func() (bool, error) {
		var ok bool
		d, ok = e.latestState(ns, "alpha")
		return ok && d.Ready() == "True" && !d.Stale && len(d.Owned) == 3 && len(d.Owned[0].Children) == 2, nil
	})
	kinds := []string{d.Owned[0].Kind, d.Owned[1].Kind, d.Owned[2].Kind}
	if !slices.Equal(kinds, []string{"StatefulSet", "Service", "Secret"}) || d.Owned[0].Children[0].Kind != "Pod" {
		t.Errorf("owner tree kinds = %v (children %+v), want StatefulSet→Pods, Service, Secret", kinds, d.Owned[0].Children)
	}
	if !slices.Contains(d.Finalizers, controller.Finalizer) {
		t.Errorf("finalizers = %v, want %s", d.Finalizers, controller.Finalizer)
	}
	ready := d.Conditions[slices.IndexFunc(d.Conditions, func(c dbview.Condition) bool { return c.Type == "Ready" })]
	if len(ready.History) < 2 || ready.History[0].Status == "True" || !ready.History[len(ready.History)-1].Transition {
		t.Errorf("Ready history = %+v; want a not-True start and a transition to True", ready.History)
	}
	if len(d.Events) == 0 {
		t.Error("no Kubernetes Events in the state; want the controller's")
	}

	// Drift: delete the StatefulSet behind the controller's back.
	var before appsv1.StatefulSet
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "alpha"}, &before); err != nil {
		t.Fatalf("get StatefulSet: %v", err)
	}
	if code, res := postForm(t, c, e.http.URL, "/lab/databases/alpha/children/statefulset/delete", nil); code != 200 {
		t.Fatalf("delete child: %d %+v", code, res)
	}
	polltest.Until(t, deadline, "a new StatefulSet", func() (bool, error) {
		var now appsv1.StatefulSet
		err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "alpha"}, &now)
		return err == nil && now.UID != before.UID, err
	})

	// Pitfall switch, through the form, lands on the annotation.
	if code, res := postForm(t, c, e.http.URL, "/lab/databases/alpha/pitfall", url.Values{"pitfall": {controller.PitfallDropEvents}}); code != 200 {
		t.Fatalf("set pitfall: %d %+v", code, res)
	}
	polltest.Until(t, deadline, "the pitfall in the state", func() (bool, error) {
		d, _ := e.latestState(ns, "alpha")
		return d.Pitfall == controller.PitfallDropEvents, nil
	})
}

func TestIdleSessionLosesItsNamespace(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	var forgotten []string
	m, err := session.New(t.Context(), session.Options{
		Namespaces: labns.KubeNamespaces{Client: e.client}, IdleTimeout: 1, OnExpire: func(ns string) { forgotten = append(forgotten, ns) },
	})
	if err != nil {
		t.Fatal(err)
	}
	s := mustSessionWithNamespace(t, m)
	if n, err := m.Sweep(t.Context()); n != 1 || err != nil {
		t.Fatalf("Sweep = %d, %v; want the idle session ended", n, err)
	}
	polltest.Until(t, deadline, "the namespace terminating or gone", func() (bool, error) {
		var ns corev1.Namespace
		err := e.client.Get(t.Context(), types.NamespacedName{Name: s.Namespace}, &ns)
		return apierrors.IsNotFound(err) || ns.DeletionTimestamp != nil, err
	})
	if !slices.Equal(forgotten, []string{s.Namespace}) {
		t.Errorf("OnExpire got %v, want %s", forgotten, s.Namespace)
	}
}

// scopedNamespaces is the real cluster's lab namespaces as Reclaim sees
// them, narrowed to the ones a test made: other tests' namespaces in the
// shared cluster must not be reclaimed under them.
type scopedNamespaces struct {
	labns.KubeNamespaces
	mu    sync.Mutex
	names map[string]bool
}

func (s *scopedNamespaces) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[name] = true
}

func (s *scopedNamespaces) List(ctx context.Context) ([]labns.Namespace, error) {
	all, err := s.KubeNamespaces.List(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(all, func(n labns.Namespace) bool { return !s.names[n.Name] }), err
}

func TestRestartReclaimsOrphanedNamespaces(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := t.Context()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	orphan, plain := "lab-orphan-"+suffix, "plain-"+suffix
	scoped := &scopedNamespaces{KubeNamespaces: labns.KubeNamespaces{Client: e.client}, names: map[string]bool{orphan: true, plain: true}}
	t.Cleanup(func() {
		for _, n := range []string{orphan, plain} {
			_ = scoped.Delete(context.Background(), n)
		}
	})
	// The orphan: labelled, as an earlier oplab left it. The plain one is not
	// a lab namespace at all.
	if err := scoped.Create(ctx, orphan, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plain}}); err != nil {
		t.Fatal(err)
	}
	var skew atomic.Int64 // how far the manager's clock runs ahead
	m, err := session.New(ctx, session.Options{
		Namespaces: scoped, IdleTimeout: time.Hour, Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// A namespace this manager's own session owns.
	s := mustSessionWithNamespace(t, m)
	scoped.add(s.Namespace)
	t.Cleanup(func() { _ = scoped.Delete(context.Background(), s.Namespace) })

	alive := func(name string) bool {
		t.Helper()
		var ns corev1.Namespace
		err := e.client.Get(ctx, types.NamespacedName{Name: name}, &ns)
		return err == nil && ns.DeletionTimestamp == nil
	}
	// Fresh: another oplab sharing the cluster may be using it.
	if n, err := m.Reclaim(ctx); n != 0 || err != nil || !alive(orphan) {
		t.Fatalf("Reclaim of a fresh orphan = %d, %v (alive %v); want it kept", n, err, alive(orphan))
	}
	// Older than the idle timeout: deleted; the owned and the unlabelled stay.
	skew.Store(int64(2 * time.Hour))
	if n, err := m.Reclaim(ctx); n != 1 || err != nil {
		t.Fatalf("Reclaim of an old orphan = %d, %v; want 1 deleted", n, err)
	}
	polltest.Until(t, deadline, "the orphan terminating or gone", func() (bool, error) { return !alive(orphan), nil })
	if !alive(s.Namespace) || !alive(plain) {
		t.Errorf("after Reclaim: owned %s alive %v, unlabelled %s alive %v; want both kept", s.Namespace, alive(s.Namespace), plain, alive(plain))
	}
}

// ---- browser tests ----------------------------------------------------------

func TestBrowserCreateScaleDelete(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the stream to open", streamLive)
	// The answer to the first action appears above the controller bar,
	// the loop and the cards; it must not push them down, or a click
	// aimed at them just then lands on whatever moved under the pointer.
	const barTop = `String(Math.round(document.querySelector(".controller-bar").getBoundingClientRect().top + scrollY))`
	before := browsertest.Eval[string](t, ctx, barTop)
	// Beside a pill saying the controller runs, the loop's caption does
	// not say it waits for the controller: it waits for an event.
	if pill, caption := browsertest.Eval[string](t, ctx, `document.getElementById("controller-status").textContent.trim()`),
		browsertest.Eval[string](t, ctx, `document.getElementById("loop-caption").textContent`); pill != "Controller running" || !strings.Contains(caption, "next event") {
		t.Errorf("an empty lab's pill says %q and its loop caption %q; want the controller running and the loop waiting for the next event", pill, caption)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#create-form input[name="name"]`), "shop"),
		chromedp.SetValue(chromedp.CSS(`#create-form input[name="replicas"]`), "1"),
		chromedp.Click(chromedp.CSS(`#create-form button.primary`)),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the created message", `document.querySelector("#flash .flash-ok")?.textContent.includes("Created Database shop")`)
	if after := browsertest.Eval[string](t, ctx, barTop); after != before {
		t.Errorf("the controller bar moved from %s px to %s px when the first answer appeared above it", before, after)
	}
	poll(t, ctx, "a reconcile row for shop", `document.querySelector('#rows li.row[data-db="shop"]:has(.rid) .steps li')`)
	poll(t, ctx, "Ready=True on shop", `document.querySelector("#db-shop .db-head .pill.ok")?.textContent === "Ready True"`)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#rows")))
	if err != nil || !strings.Contains(text, "event → 1 reconcile") && !strings.Contains(text, "events → 1 reconcile") {
		t.Errorf("timeline lacks the event → reconcile label: %v\n%s", err, text)
	}
	screenshot(t, ctx, "01-created-ready")

	// Scale to 2 and watch observedGeneration catch up with generation.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#db-shop form[action$="/edit"] input[name="replicas"]`), "2"),
		chromedp.Click(chromedp.CSS(`#db-shop form[action$="/edit"] button`)),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "generation 2 observed", `(() => { const c = document.getElementById("db-shop");
		return c && c.querySelector(".generation").textContent === "2" && c.querySelector(".observed").textContent === "2"; })()`)
	poll(t, ctx, "two Pods in the owner tree", `document.querySelectorAll("#db-shop .tree li li li").length === 2`)
	// The card still grows while the second Pod turns ready; a click is
	// aimed at where the button was, so it waits for the card to settle.
	poll(t, ctx, "shop Ready at 2 of 2", `document.querySelector("#db-shop .db-head .pill.ok")?.textContent === "Ready True" &&
		document.getElementById("db-shop").textContent.includes("2/2 replicas ready")`)
	screenshot(t, ctx, "02-scaled")

	// Delete: the finalizer phases appear, then the children and the Database go.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-shop form[action$="/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the delete's answer", `document.querySelector("#flash .flash-ok")?.textContent.includes("Asked to delete shop")`)
	poll(t, ctx, "Terminating", `document.querySelector("#db-shop .terminating") !== null ||
		[...document.querySelectorAll('#rows .step.finalizer b')].some(b => b.textContent === "draining")`)
	screenshot(t, ctx, "03-terminating")
	poll(t, ctx, "the finalizer removed", `[...document.querySelectorAll('#rows .step.finalizer b')].some(b => b.textContent === "removed")`)
	// Drawn gone, the card stays while the pointer that pressed its Delete
	// is on the cards: nothing below it moves up under the pointer. Moved
	// on, the card goes.
	poll(t, ctx, "the card drawn deleted", `document.querySelector("#db-shop.gone") !== null`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.goneAt = Date.now()`)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the card kept past its 4 s under the pointer", `Date.now() - window.goneAt > 5000 || !document.getElementById("db-shop")`)
	if !browsertest.Eval[bool](t, ctx, `document.getElementById("db-shop") !== null && document.getElementById("databases").matches(":hover")`) {
		t.Error("the deleted card was taken off the page while the pointer was on the cards")
	}
	pointerAway(t, ctx)
	poll(t, ctx, "the card gone", `document.getElementById("db-shop") === null`)
	phases, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#rows .step.finalizer b')].map(b => b.textContent)`))
	if err != nil || !slices.Contains(phases, "snapshot") {
		t.Errorf("finalizer phases on the timeline = %v (%v); want snapshot among them", phases, err)
	}
	screenshot(t, ctx, "04-deleted")
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, deadline, "the StatefulSet garbage-collected", func() (bool, error) {
		var sts appsv1.StatefulSetList
		err := e.client.List(t.Context(), &sts, client.InNamespace(ns))
		return err == nil && len(sts.Items) == 0, err
	})
	var cm corev1.ConfigMap
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: controller.SnapshotName("shop")}, &cm); err != nil {
		t.Errorf("snapshot ConfigMap: %v; want it left behind (not owned)", err)
	}

	// The data survived the delete: the kept snapshot appears live, through
	// the stream, and stays on the server-rendered page after a reload.
	const kept = `(() => { const s = document.getElementById("kept"), li = document.getElementById("snap-shop-final-snapshot");
		return !!(s && !s.hidden && li && /from Database shop \(uid [0-9a-f-]{36}\), generation [1-9]\d*, taken \d/.test(li.textContent)
			&& li.textContent.includes("nothing owns it")); })()`
	poll(t, ctx, "the kept snapshot shown live", kept)
	screenshot(t, ctx, "04b-snapshot-kept")
	if err := chromedp.Do(ctx, noScript(), chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](kept))
	if err != nil || !shown {
		failedShot(t, ctx)
		t.Errorf("after a reload without JavaScript the kept snapshot is not shown (%v)", err)
	}
}

func TestBrowserBadInputShowsTheError(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, replicas, want, field string }{
		{"seven", "7", "spec.replicas: Invalid value: 7", "replicas"},
		{"Bad_Name", "1", `"Bad_Name" is not a valid name`, "name"},
	}
	for _, tt := range tests {
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="name"]`), tt.name),
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="replicas"]`), tt.replicas),
			chromedp.Click(chromedp.CSS(`#create-form button.primary`)),
		); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, "the error for "+tt.name, fmt.Sprintf(`document.querySelector("#flash .flash-error")?.textContent.includes(%q)`, tt.want))
		poll(t, ctx, "the field marked", fmt.Sprintf(`document.querySelector('#create-form [name=%q]').classList.contains("invalid")`, tt.field))
		// Focus went to the field, which may be far below the flash: the
		// answer is said under it too, on screen, and read out with it.
		beside := fmt.Sprintf(`(() => { const f = document.querySelector('#create-form [name=%q]'), why = document.getElementById(f.getAttribute("aria-describedby") || "-");
			if (!why || !f.closest("form").contains(why) || !why.textContent.includes(%q)) return "no answer beside the field";
			const r = why.getBoundingClientRect();
			return r.top >= 0 && r.bottom <= innerHeight ? "" : "the answer beside the field is off screen, at " + Math.round(r.top) })()`, tt.field, tt.want)
		if got := browsertest.Eval[string](t, ctx, beside); got != "" {
			t.Errorf("%s: %s", tt.name, got)
		}
		if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll(".field-error").length`); n != 1 {
			t.Errorf("%s: %d answers beside fields, want the one", tt.name, n)
		}
		screenshot(t, ctx, "05-error-"+tt.field)
	}
}

func TestBrowserStuckFinalizerScenario(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	t.Cleanup(func() {
		if !e.runner.Running() {
			_ = e.runner.Start(context.Background())
		}
	})
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab?scenario=stuck-finalizer"), chromedp.WaitVisible(chromedp.CSS(".scenario"))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.scenario form button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the setup done", `document.querySelector("#flash .flash-ok")?.textContent.includes("controller is paused for your namespace")`)
	poll(t, ctx, "the controller shown paused for this namespace", `document.getElementById("controller-status").textContent.includes("Your namespace is paused")`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-stuck form[action$="/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "stuck Terminating, held by the finalizer", `document.querySelector("#db-stuck .terminating")?.textContent.includes("db.oplab.dev/final-snapshot")`)
	screenshot(t, ctx, "06-stuck-terminating")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#db-stuck details.escape summary`)),
		chromedp.Click(chromedp.CSS(`#db-stuck form[action$="/finalizers/remove"] button`)),
	); err != nil {
		t.Fatal(err)
	}
	pointerAway(t, ctx)
	poll(t, ctx, "stuck gone", `document.getElementById("db-stuck") === null`)
	clickEnabled(t, ctx, `button[data-controller="start"]`)
	poll(t, ctx, "the controller running again", `document.getElementById("controller-status").textContent.includes("running")`)
	if !e.runner.Running() {
		t.Error("the controller is not running after Start")
	}
}

func TestBrowserReplaysAnExport(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	file := e.exportWithReady(t, "replayed")
	ctx := e.tab(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.http.URL+"/lab/replay"),
		chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}),
		chromedp.Click(chromedp.CSS(`.replay-form button`)),
		chromedp.WaitVisible(chromedp.CSS("#replay-all")),
		chromedp.Click(chromedp.CSS("#replay-all")),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "reconcile rows replayed", `document.querySelectorAll('#rows li.row[data-db="replayed"]:has(.rid)').length > 0`)
	poll(t, ctx, "the Database replayed as Ready", `document.querySelector("#db-replayed .db-head .pill.ok")?.textContent === "Ready True"`)
	forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('form[action^="/lab/databases"]').length`))
	if err != nil || forms != 0 {
		t.Errorf("replay page has %d forms that write (%v); want none", forms, err)
	}
	screenshot(t, ctx, "07-replay")
}

func TestScenariosSetUp(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	tests := []struct {
		scenario, database, pitfall string
	}{
		{"first-reconcile", "first", ""},
		{"already-exists", "taken", ""},
		{"finalizer", "doomed", ""},
		{"status-thrash", "thrash", controller.PitfallStatusThrash},
		{"non-idempotent-create", "twice", controller.PitfallNonIdempotentCreate},
		{"drop-events", "deaf", controller.PitfallDropEvents},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			c, ns := e.learner(t)
			code, res := postForm(t, c, e.http.URL, "/lab/scenarios/"+tt.scenario, nil)
			if code != 200 {
				t.Fatalf("setup: %d %+v", code, res)
			}
			polltest.Until(t, deadline, tt.database+" in the lab state", func() (bool, error) {
				d, ok := e.latestState(ns, tt.database)
				return ok && d.Pitfall == tt.pitfall, nil
			})
			if tt.scenario == "finalizer" && !strings.Contains(res.Message, "doomed is Ready") {
				t.Errorf("finalizer setup said %q; want doomed Ready", res.Message)
			}
			// Setting the same scenario up twice reports the conflict.
			code, res = postForm(t, c, e.http.URL, "/lab/scenarios/"+tt.scenario, nil)
			if code != http.StatusConflict || !strings.Contains(res.Message, "already exists") {
				t.Errorf("second setup: %d %+v; want 409 already exists", code, res)
			}
		})
	}
}

func TestLearnersAreIsolated(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	a, _ := e.learner(t)
	if code, res := postForm(t, a, e.http.URL, "/lab/databases", url.Values{"name": {"private"}, "replicas": {"1"}}); code != 200 {
		t.Fatalf("create: %d %+v", code, res)
	}
	b, nsB := e.learner(t)
	resp, err := b.Get(e.http.URL + "/lab")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), `id="db-private"`) {
		t.Error("learner B's page shows learner A's Database")
	}
	if _, ok := e.latestState(nsB, "private"); ok {
		t.Error("learner B's stream holds learner A's Database")
	}
	// Deleting it from B's session acts in B's namespace, where it does not exist.
	if code, res := postForm(t, b, e.http.URL, "/lab/databases/private/delete", nil); code != http.StatusNotFound {
		t.Errorf("B deleting A's Database: %d %+v; want 404", code, res)
	}
	resp, err = http.Get(e.http.URL + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("/ws without a session = %d, want 403", resp.StatusCode)
	}
}

// noScript and darkMode are page settings for a tab.
func noScript() chromedp.Action[chromedp.Void] {
	return cdpCall(emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
}

func darkMode() chromedp.Action[chromedp.Void] {
	return cdpCall(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
	})
}

func TestBrowserWithoutJavaScript(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, noScript(), chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	submit := func(name, replicas string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="name"]`), name),
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="replicas"]`), replicas),
			chromedp.Click(chromedp.CSS(`#create-form button.primary`)),
			chromedp.WaitVisible(chromedp.CSS("#flash .flash")),
		); err != nil {
			t.Fatal(err)
		}
	}
	submit("plain", "9")
	msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#flash .flash-error")))
	if err != nil || !strings.Contains(msg, "spec.replicas: Invalid value: 9") {
		t.Errorf("after a plain POST with replicas 9 the page says %q (%v); want the API server's error", msg, err)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#create-form input[name="name"]`))); v != "plain" {
		t.Errorf("the form lost what was typed: name = %q", v)
	}
	submit("plain", "1")
	if msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#flash .flash-ok"))); err != nil || !strings.Contains(msg, "Created Database plain") {
		t.Errorf("after a plain POST the page says %q (%v)", msg, err)
	}
	polltest.Until(t, deadline, "plain shown Ready after a reload", func() (bool, error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab")); err != nil {
			return false, err
		}
		pill, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#db-plain .db-head .pill")?.textContent || ""`))
		return pill == "Ready True", err
	})
	screenshot(t, ctx, "08-no-javascript")

	dark := e.tab(t)
	if err := chromedp.Do(dark, darkMode(), chromedp.Navigate(e.http.URL+"/lab?scenario=first-reconcile")); err != nil {
		t.Fatal(err)
	}
	bg, err := chromedp.Run(dark, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil || bg != "rgb(20, 23, 27)" {
		t.Errorf("dark mode background = %q (%v), want base.css's dark --bg", bg, err)
	}
	screenshot(t, dark, "09-dark-mode")
}

// mustSessionWithNamespace begins a session on m, as a browser's first
// visit would, and has it create its namespace, as its first write would.
func mustSessionWithNamespace(t *testing.T, m *session.Manager) session.Session {
	t.Helper()
	w := httptestRecorder()
	s, err := m.Begin(w, mustRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	r := mustRequest(t)
	r.AddCookie(w.Result().Cookies()[0])
	if _, err := m.NamespaceOf(r); err != nil {
		t.Fatalf("create the session's namespace: %v", err)
	}
	return s
}

// exportWithReady creates Database name in a fresh learner's namespace,
// waits for it to be Ready, and saves that learner's exported timeline to a
// file, as the "Export timeline" link does; it returns the file's path.
func (e *testEnv) exportWithReady(t *testing.T, name string) string {
	t.Helper()
	c, ns := e.learner(t)
	if code, res := postForm(t, c, e.http.URL, "/lab/databases", url.Values{"name": {name}, "replicas": {"1"}}); code != 200 {
		t.Fatalf("create: %d %+v", code, res)
	}
	polltest.Until(t, deadline, name+" Ready", func() (bool, error) {
		d, ok := e.latestState(ns, name)
		return ok && d.Ready() == "True", nil
	})
	resp, err := c.Get(e.http.URL + "/lab/export")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	file := filepath.Join(t.TempDir(), "timeline.json")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
