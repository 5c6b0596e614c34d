package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// lostEntry is true when the snapshots list shows db as deleted without a
// snapshot, with its uid and generation, and a note holding why.
func lostEntry(db, why string) string {
	return fmt.Sprintf(`(() => { const s = document.getElementById("kept"), li = document.getElementById("snap-%s-final-snapshot");
		return !!(s && !s.hidden && li && li.classList.contains("lost")
			&& /no snapshot Database %s \(uid [0-9a-f-]{36}\), generation [1-9]\d*: deleted without a snapshot, \d/.test(li.textContent.replace(/\s+/g, " "))
			&& li.textContent.includes("ConfigMap %s-final-snapshot was never written") && li.textContent.includes(%q)); })()`, db, db, db, why)
}

// A Database deleted without its final snapshot is listed with the kept
// snapshots, so the lost data shows: one under the no-finalizer pitfall,
// one whose finalizer a learner removed by hand (kubectl patch) while it
// was Terminating. While Terminating, its card's Delete is disabled and
// says which finalizer holds it. A resumed namespace's reconciles say so
// in words.
func TestBrowserDeletedWithoutASnapshotIsListed(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	ns := e.openLab(t, ctx, "")
	// The form keeps the pitfall last chosen: each create sets its own.
	create := func(name, pitfall string) {
		if err := chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](`document.querySelector("details.create").open = true`),
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="name"]`), name),
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="replicas"]`), "1"),
			chromedp.SetValue(chromedp.CSS(`#create-form select[name="pitfall"]`), pitfall),
			chromedp.Click(chromedp.CSS(`#create-form button.primary`)),
		); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, name+" created", fmt.Sprintf(`document.querySelector("#flash .flash-ok")?.textContent.includes("Created Database %s")`, name))
	}
	create("nofin", controller.PitfallNoFinalizer)
	create("byhand", "")
	create("calm", "")
	for _, db := range []string{"nofin", "byhand", "calm"} {
		poll(t, ctx, db+" Ready", fmt.Sprintf(`document.querySelector("#db-%s .db-head .pill.ok")?.textContent === "Ready True"`, db))
	}
	poll(t, ctx, "byhand held by its finalizer", `document.querySelector("#db-byhand .finalizers")?.textContent.includes("db.oplab.dev/final-snapshot") ?? false`)

	// The no-finalizer pitfall: the delete goes through at once, and the
	// list says what was lost, and why.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-nofin form[action$="/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "nofin listed as deleted without a snapshot", lostEntry("nofin", "the no-finalizer pitfall was on"))
	var cm corev1.ConfigMap
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: controller.SnapshotName("nofin")}, &cm); !apierrors.IsNotFound(err) {
		t.Errorf("nofin's snapshot ConfigMap: %v; want none written", err)
	}

	// By hand: the namespace paused, byhand's delete waits on its
	// finalizer; its Delete is disabled and says so.
	clickEnabled(t, ctx, `button[data-controller="stop"]`)
	poll(t, ctx, "the namespace paused", `document.getElementById("controller-status").textContent.includes("Your namespace is paused")`)
	const deleteBtn = `document.querySelector('#db-byhand form[action="/lab/databases/byhand/delete"] button')`
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-byhand form[action$="/delete"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "byhand Terminating, its Delete disabled with the reason", `(() => { const b = `+deleteBtn+`;
		const why = b && document.getElementById(b.getAttribute("aria-describedby"));
		return !!(document.querySelector("#db-byhand .terminating") && b.disabled && why && why.checkVisibility()
			&& why.textContent === "Already being deleted: its finalizer db.oplab.dev/final-snapshot holds it until the controller has written the final snapshot. Deleting again changes nothing."); })()`)
	screenshot(t, ctx, "60-delete-disabled-terminating")
	// kubectl patch database byhand --type=merge -p '{"metadata":{"finalizers":null}}'
	db := &v1alpha1.Database{}
	db.Namespace, db.Name = ns, "byhand"
	if err := e.client.Patch(t.Context(), db, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "byhand listed as deleted without a snapshot", lostEntry("byhand", "its finalizer came off before a final snapshot was written"))
	screenshot(t, ctx, "61-deleted-without-a-snapshot")

	// Resumed, every Database is queued again; the row says that in words.
	clickEnabled(t, ctx, `button[data-controller="start"]`)
	poll(t, ctx, "calm's reconcile after the resume, named", `[...document.querySelectorAll('#rows li.row[data-db="calm"] .trigger')].some(p =>
		/^namespace resumed: every Database queued again · \d+ events? → 1 reconcile$/.test(p.textContent))`)
	if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#rows"))); err != nil || strings.Contains(text, "poked") {
		t.Errorf("the timeline says poked (%v):\n%s", err, text)
	}

	checkPage(t, ctx, axeSource(t), "/lab (deleted without a snapshot)")

	// Both stay listed on the page the server draws, without JavaScript.
	if err := chromedp.Do(ctx, noScript(), chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#kept"))); err != nil {
		t.Fatal(err)
	}
	for db, why := range map[string]string{"nofin": "the no-finalizer pitfall was on", "byhand": "its finalizer came off"} {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](lostEntry(db, why))); err != nil || !ok {
			t.Errorf("after a reload without JavaScript, %s is not listed as deleted without a snapshot (%v)", db, err)
		}
	}
}
