package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// A lesson marks each phrase that names something on oplab's screen as a
// claim, [wording](screen:NAME) (see lessons.Claim). These tests check every
// claim against the real screen: TestBrowserLessonClaimsOnScreen drives the
// lab in Chromium through the states the lessons talk about (a Database
// Ready, resynced, Degraded by a pitfall, with events ignored, paused and
// deleted, finalized, reconciled by the learner's code) and the code page,
// gathers the text each screen showed, and fails for a claim whose wording
// none of its screen's texts holds.

// screenTexts is what each screen showed, by screen (a key of
// lessons.Screens), one text per look.
type screenTexts map[string][]string

// add records a look at screen.
func (s screenTexts) add(screen, text string) { s[screen] = append(s[screen], squash(text)) }

// squash collapses every run of white space, a no-break space included,
// to one space: a claim quotes words, not the page's line breaks.
func squash(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\u00a0", " ")), " ")
}

// unmetClaims are the claims whose wording no look at their screen showed.
func unmetClaims(claims []lessons.Claim, seen screenTexts) []lessons.Claim {
	var out []lessons.Claim
	for _, c := range claims {
		met := false
		for _, text := range seen[c.Screen] {
			if strings.Contains(text, squash(c.Wording)) {
				met = true
				break
			}
		}
		if !met {
			out = append(out, c)
		}
	}
	return out
}

// The checker fails a claim the screen does not show: a made-up label, a
// label on another screen than the one claimed, and nothing at all.
func TestUnmetClaimsNamesWhatTheScreenDoesNotShow(t *testing.T) {
	t.Parallel()
	seen := screenTexts{}
	seen.add("lab", "Your namespace is paused Pause my\n namespace\u00a0Resume")
	seen.add("lab", "Finalizers: none")
	seen.add("timeline", "status written, observedGeneration 1: conditions[Ready] False→True")
	claims := []lessons.Claim{
		{Screen: "lab", Wording: "Pause my namespace", File: "a.md"},
		{Screen: "lab", Wording: "Finalizers:  none", File: "a.md"},
		{Screen: "timeline", Wording: "status written, observedGeneration 1", File: "a.md"},
		{Screen: "lab", Wording: "Pause the controller", File: "made-up.md"},
		{Screen: "timeline", Wording: "Pause my namespace", File: "wrong-screen.md"},
		{Screen: "code", Wording: "Run my code", File: "unseen-screen.md"},
	}
	got := unmetClaims(claims, seen)
	if len(got) != 3 || got[0].File != "made-up.md" || got[1].File != "wrong-screen.md" || got[2].File != "unseen-screen.md" {
		t.Errorf("unmetClaims = %v; want the made-up label, the wrong screen's and the unseen screen's", got)
	}
}

// claimsCode is learner code at its smallest: it reads the Database and
// is done, so the timeline marks its reconciles "your code".
type claimsCode struct{}

func (claimsCode) Reconcile(ctx context.Context, c client.Client, req reconcile.Request) (ctrl.Result, error) {
	var db v1alpha1.Database
	return ctrl.Result{}, client.IgnoreNotFound(c.Get(ctx, req.NamespacedName, &db))
}

// labText is the lab's text outside the timeline as a learner reads it,
// every disclosure opened (a summary's contents are a click away), with
// the menus' options; hidden parts are not in it, nor are tooltips.
const labText = `(() => {
	const lab = document.getElementById("lab"), log = document.getElementById("log");
	lab.querySelectorAll("details").forEach(d => d.open = true);
	const display = log.style.display;
	log.style.display = "none";
	const text = lab.innerText;
	log.style.display = display;
	return text + "\n" + [...lab.querySelectorAll("option")].map(o => o.textContent).join("\n");
})()`

// timelineText is the text of the timeline's rows, folded ones included.
const timelineText = `document.getElementById("rows").textContent`

func TestBrowserLessonClaimsOnScreen(t *testing.T) {
	t.Parallel()
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	claims := course.Claims()
	if len(claims) == 0 {
		t.Fatal("the course makes no screen claims")
	}
	e := needEnv(t)
	ctx := e.tab(t)
	seen := screenTexts{}
	look := func(state string) {
		t.Helper()
		for screen, expr := range map[string]string{"lab": labText, "timeline": timelineText} {
			text, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
			if err != nil {
				t.Fatalf("read the %s (%s): %v", screen, state, err)
			}
			seen.add(screen, text)
		}
	}

	ns := e.openLab(t, ctx, "")
	t.Cleanup(func() {
		e.runner.TakeBack(ns)
		e.runner.ResumeNamespace(ns)
		var dbs v1alpha1.DatabaseList
		if err := e.client.List(context.Background(), &dbs, client.InNamespace(ns)); err == nil {
			for i := range dbs.Items {
				_ = e.client.Delete(context.Background(), &dbs.Items[i])
			}
		}
	})

	// A Database Ready, woken through For and Owns, then resynced: a
	// resync that finds nothing to do folds into one line.
	createInTab(t, ctx, "claims")
	poll(t, ctx, "claims Ready", `document.querySelector("#db-claims .db-head .pill.ok") !== null`)
	poll(t, ctx, "a resync of claims, and a fold of its no-op reconciles", `[...document.querySelectorAll('#rows li.row[data-db="claims"] .trigger')].some(p => p.textContent === "resync")
		&& document.querySelector('#rows > li.fold[data-db="claims"]') !== null`)
	look("claims Ready and resynced")

	// A pitfall's Database in an error loop; one whose events are ignored.
	createWithPitfall(t, ctx, "loop", controller.PitfallNonIdempotentCreate)
	poll(t, ctx, "loop Degraded, its reconciles failing", `document.querySelector("#db-loop .db-head .degraded") !== null
		&& document.querySelectorAll('#rows li.row.error[data-db="loop"]').length >= 2`)
	// A Database whose reconciles fail has no green word on its status
	// being current: only which generation its last write saw.
	if got := browsertest.Eval[string](t, ctx, `(() => { const p = document.querySelector("#db-loop .gen .pill"); return p ? p.className + ": " + p.textContent : "" })()`); got != "pill current: the status describes generation 1" {
		t.Errorf("loop, Degraded, has the generation pill %q; want the neutral %q", got, "the status describes generation 1")
	}
	// A failed reconcile's fetch did not fail: it reads as any other fetch.
	if !browsertest.Eval[bool](t, ctx, `(() => { const failed = document.querySelector('#rows li.row.error[data-db="loop"] .step.fetch');
		const fine = document.querySelector('#rows li.row:not(.error)[data-db="claims"] .step.fetch');
		return !!failed && !!fine && getComputedStyle(failed).color === getComputedStyle(fine).color })()`) {
		t.Error("a failed reconcile's fetch is drawn in another colour than a fine one's, as if it had failed too")
	}
	createWithPitfall(t, ctx, "deaf", controller.PitfallDropEvents)
	poll(t, ctx, "deaf's create event ignored", `document.querySelector('#rows li[data-db="deaf"] li.ev.ignored') !== null`)
	// A thrashing Database, its writes capped: a reconcile holds its write.
	createWithPitfall(t, ctx, "thrash", controller.PitfallStatusThrash)
	poll(t, ctx, "a write of thrash held back", `[...document.querySelectorAll('#rows li.row[data-db="thrash"] .step.status')].some(s => s.textContent.includes("write held back: at most one status write a second"))`)
	look("loop Degraded, deaf's events ignored, thrash held back")
	if err := e.client.Delete(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "thrash"}}); err != nil {
		t.Fatal(err)
	}

	// Paused, then deleted: Terminating, with stale status.
	clickEnabled(t, ctx, `button[data-controller="stop"]`)
	poll(t, ctx, "the namespace paused", `!document.querySelector('button[data-controller="start"]').disabled`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#db-claims form[data-part="delete"] button`))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "claims Terminating with stale status", `document.querySelector("#db-claims .terminating") !== null && document.querySelector("#db-claims .stale") !== null`)
	look("paused, claims Terminating")
	// Code handed over during the pause runs nothing yet: the pill stays
	// paused (a hand-over is not a resume).
	e.runner.HandOver(ns, claimsCode{})
	poll(t, ctx, "the hand-over on the timeline", `[...document.querySelectorAll("#rows li.row.controller")].some(r => r.textContent.includes("your code now reconciles"))`)
	if got := browsertest.Eval[string](t, ctx, `document.getElementById("controller-status").textContent.trim()`); got != "Your namespace is paused" {
		t.Errorf("code handed over during a pause: the pill says %q, want the namespace still paused", got)
	}
	e.runner.TakeBack(ns)
	poll(t, ctx, "the take-back on the timeline", `[...document.querySelectorAll("#rows li.row.controller")].some(r => r.textContent.includes("oplab's controller reconciles"))`)

	// Resumed: the finalizer runs, the snapshot is kept.
	clickEnabled(t, ctx, `button[data-controller="start"]`)
	pointerAway(t, ctx) // a deleted card waits for the pointer to leave the cards
	poll(t, ctx, "claims gone, its snapshot kept", `document.getElementById("db-claims") === null && document.getElementById("snap-claims-final-snapshot") !== null`)
	look("resumed, claims finalized")

	// The learner's own code reconciles the namespace: the controller
	// bar says so as it happens and on a fresh page, and says it no longer
	// does once oplab's reconciler is back.
	const pill = `document.getElementById("controller-status").textContent.trim()`
	const note = `document.getElementById("your-code-note").hidden`
	e.runner.HandOver(ns, claimsCode{})
	poll(t, ctx, "the pill saying the learner's code reconciles", pill+` === "Your code reconciles" && !`+note)
	e.runner.TakeBack(ns)
	poll(t, ctx, "the pill saying the controller runs again", pill+` === "Controller running" && `+note)
	e.runner.HandOver(ns, claimsCode{})
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	if got := browsertest.Eval[string](t, ctx, pill); got != "Your code reconciles" || !strings.Contains(browsertest.Eval[string](t, ctx, `document.querySelector(".controller-bar").innerText`), "in place of oplab's") {
		t.Errorf("a fresh lab, the namespace handed over, has the pill %q and no word of the learner's code", got)
	}
	poll(t, ctx, "the stream to open", streamLive)
	createWithPitfall(t, ctx, "mine", "")
	poll(t, ctx, "a reconcile of mine by the learner's code", `document.querySelector('#rows li.row[data-db="mine"] .your-code') !== null`)
	look("the learner's code reconciling")
	screenshot(t, ctx, "60-lesson-claims-lab")

	// The code page.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/code"), chromedp.WaitReady(chromedp.CSS("#code"))); err != nil {
		t.Fatal(err)
	}
	code, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	seen.add("code", code)

	unmet := unmetClaims(claims, seen)
	for _, c := range unmet {
		t.Errorf("%v: the screen never showed it", c)
	}
	if len(unmet) > 0 {
		for screen, texts := range seen {
			t.Logf("the %s showed, at its last look:\n%s", screen, texts[len(texts)-1])
		}
	}
	t.Logf("%d claims of %d pages checked on the lab, its timeline and the code page", len(claims), len(course.Lessons))
}

// createWithPitfall creates a Database through the page's form with a
// pitfall picked in its menu ("" for none: the form keeps the last one
// picked), as a learner does.
func createWithPitfall(t *testing.T, ctx context.Context, name, pitfall string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("details.create").open = true`),
		chromedp.SetValue(chromedp.CSS(`#create-form input[name="name"]`), name),
		chromedp.SetValue(chromedp.CSS(`#create-form input[name="replicas"]`), "1"),
		chromedp.SetValue(chromedp.CSS(`#create-form select[name="pitfall"]`), pitfall),
		chromedp.Click(chromedp.CSS(`#create-form button.primary`)),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the created message", fmt.Sprintf(`document.querySelector("#flash .flash-ok")?.textContent.includes("Created Database %s")`, name))
}
