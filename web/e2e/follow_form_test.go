package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// ownControls lists, as "name: why", the learner's own controls a person
// could see or reach with Tab in the lab: the create form, the pause of their
// namespace, the player, the scenario picker, the export links. Following,
// it must be empty; broken away, every one of them is there.
const ownControls = `(() => {
	const seen = (el) => el.getClientRects().length > 0;
	// focusable: focus() moves the focus there (it does not for what is not
	// displayed, or is disabled).
	const focusable = (el) => { const before = document.activeElement; el.focus(); const got = document.activeElement === el;
		if (got && before && before.focus) before.focus(); else if (got) el.blur(); return got; };
	const out = [];
	for (const [name, sel] of [["the create form", "details.create"], ["the pause of the own namespace", ".controller-bar > form"],
			["the pause's words about the own namespace", "#pause-why"],
			["the player's buttons", ".player > button"], ["the speed", "#play-speed"], ["the scenario picker", ".scenarios a"],
			["the export", ".lab-head > p a"]]) {
		const els = [...document.querySelectorAll("#lab " + sel)];
		if (els.length === 0) { out.push(name + ": missing from the page"); continue; }
		for (const el of els) {
			if (seen(el)) out.push(name + ": shown");
			const f = [el, ...el.querySelectorAll("a, button, input, select, summary, textarea")].find(focusable);
			if (f) out.push(name + ": " + f.tagName.toLowerCase() + (f.name ? "[name=" + f.name + "]" : "") + " takes the focus");
		}
	}
	return [...new Set(out)].join("; "); })()`

// While following, the learner's lab shows the presenter's lab alone: none
// of the learner's own controls is shown or focusable inside it, and one line
// in the create form's place leads back; broken away, the form is there and
// creates in the learner's own namespace; rejoining hides it again.
func TestBrowserFollowShowsOnlyThePresentersLab(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needClass(t)
	t.Cleanup(e.server.Classroom().StopPresenting)
	teacher, learner := e.tab(t), e.tab(t)
	teacherNS := e.openLab(t, teacher, "")
	createInTab(t, teacher, "shown")
	poll(t, teacher, "shown Ready", `document.querySelector("#db-shown .db-head .pill.ok")?.textContent === "Ready True"`)

	if err := chromedp.Do(learner, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	learnerNS := e.openLab(t, learner, "")
	// In their own lab every one of them is shown: the check can fail.
	own := evalString(t, learner, ownControls)
	for _, name := range []string{"the create form", "the pause of the own namespace", "the pause's words about the own namespace", "the player's buttons", "the speed", "the scenario picker", "the export"} {
		if !strings.Contains(own, name+": shown") {
			t.Errorf("in the learner's own lab %s is not shown (%s)", name, own)
		}
	}
	// The learner is typing a name in their own form when the presenter
	// starts: the focus must not fall to the page's start.
	if err := chromedp.Do(learner, chromedp.Focus(chromedp.CSS(`#create-form input[name="name"]`))); err != nil {
		t.Fatal(err)
	}
	e.server.Classroom().Present(teacherNS, "Ada")
	follows := func(what string) {
		t.Helper()
		poll(t, learner, what, `document.getElementById("lab").dataset.following === "presenter" && document.querySelector("#db-shown") !== null`)
		poll(t, learner, what+": the heading names the presenter", `document.getElementById("objects-h").textContent === "Ada's Databases (read-only)"`)
		if got := evalString(t, learner, ownControls); got != "" {
			t.Errorf("%s, the learner's own controls are in the presenter's lab: %s", what, got)
		}
		back := evalString(t, learner, `(() => { const b = document.getElementById("follow-back-button");
			return b && b.getClientRects().length > 0 ? b.textContent.trim() : ""; })()`)
		if back != "Back to my own lab" {
			t.Errorf("%s, the way back in the create form's place reads %q; want it shown as \"Back to my own lab\"", what, back)
		}
		if evalString(t, learner, `String(document.getElementById("filter").disabled)`) != "true" {
			t.Errorf("%s, the object filter (the presenter's choice) can be changed", what)
		}
		poll(t, learner, what+": the player says who steers it", `document.getElementById("follow-player")?.textContent.startsWith("Ada steers this timeline")`)
	}
	follows("following")
	if got := evalString(t, learner, `document.activeElement?.id || document.activeElement?.tagName`); got != "follow-back-button" {
		t.Errorf("the focus was in the own create form; following, it is on %q, want the way back", got)
	}
	// The timeline's keys wait as its buttons do: P does not pause the
	// follower's view of a presenter who plays live.
	if err := chromedp.Do(learner, chromedp.Focus(chromedp.CSS("#log")), chromedp.KeyEvent("p")); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, learner, `String(!`+frozen+` && !`+followerPaused+`)`); got != "true" || labData(t, learner, "following") != "presenter" {
		t.Errorf("P in the follower's timeline: playing %s, following %q; want the presenter's live timeline, still followed", got, labData(t, learner, "following"))
	}
	if err := chromedp.Do(learner, chromedp.Focus(chromedp.CSS("#follow-back-button"))); err != nil {
		t.Fatal(err)
	}
	// The presenter pauses their namespace: the follower's pill and note
	// say whose namespace it is, not "your".
	clickEnabled(t, teacher, `button[data-controller="stop"]`)
	poll(t, learner, "the presenter's pause, named", `document.getElementById("controller-status").textContent === "Ada's namespace is paused"
		&& document.getElementById("loop-paused").textContent.includes("Ada's namespace") && !document.getElementById("loop-paused").hidden`)
	poll(t, learner, "the timeline's pause row, named", `[...document.querySelectorAll("#log .row.controller .pill")].some(p => p.textContent === "Ada's namespace paused")
		&& ![...document.querySelectorAll("#log .row.controller .pill")].some(p => p.textContent.startsWith("your namespace"))`)
	checkPage(t, learner, src, "/lab following, the own controls hidden")
	// Resume applies once the presenter's own page shows the pause.
	poll(t, teacher, "the presenter's Resume enabled", `!document.querySelector('button[data-controller="start"]').disabled`)
	clickEnabled(t, teacher, `button[data-controller="start"]`)
	poll(t, learner, "the presenter's resume", `document.getElementById("controller-status").textContent === "Controller running"`)
	viewShot(t, learner, "40-following-1280x800")
	narrow(t, learner, "41-following-390px")

	// The way back: a click, the own lab, its form, with the focus on it.
	if err := chromedp.Do(learner, chromedp.Click(chromedp.CSS("#follow-back-button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "broken away", `document.getElementById("lab").dataset.following === "" && `+ownStreamLive)
	poll(t, learner, "Rejoin offered", `document.getElementById("classroom-rejoin")?.textContent === "Rejoin Ada"`)
	if what := evalString(t, learner, `(() => { const out = [];
		if (document.getElementById("objects-h").textContent !== "Your Databases") out.push("the heading is not the learner's own");
		if (document.getElementById("controller-status").textContent !== "Controller running") out.push("the pill reads " + document.getElementById("controller-status").textContent);
		if (document.getElementById("follow-back").getClientRects().length) out.push("the way back is still shown");
		if (!document.querySelector("details.create").getClientRects().length) out.push("the create form is not shown");
		if (document.getElementById("filter").disabled) out.push("the filter is still disabled");
		if (document.querySelector(".player > button").getClientRects().length === 0) out.push("the player's buttons are hidden");
		if (document.querySelector("#db-shown")) out.push("the presenter's card is still there");
		return out.join("; "); })()`); what != "" {
		t.Errorf("broken away: %s", what)
	}
	if got := evalString(t, learner, `document.activeElement?.matches("details.create > summary") ? "summary" : (document.activeElement?.id || document.activeElement?.tagName)`); got != "summary" {
		t.Errorf("after the way back the focus is on %q, want the own create form's summary", got)
	}
	checkPage(t, learner, src, "/lab broken away")
	viewShot(t, learner, "42-broke-away-1280x800")
	narrow(t, learner, "43-broke-away-390px")

	// The form works, in the learner's own namespace.
	createInTab(t, learner, "mine")
	poll(t, learner, "the learner's own card", `document.querySelector("#db-mine") !== null`)
	db := &v1alpha1.Database{}
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: learnerNS, Name: "mine"}, db); err != nil {
		t.Fatalf("the Database created after breaking away is not in the learner's namespace %s: %v", learnerNS, err)
	}
	if err := e.client.Get(t.Context(), types.NamespacedName{Namespace: teacherNS, Name: "mine"}, &v1alpha1.Database{}); !apierrors.IsNotFound(err) {
		t.Errorf("the learner's create reached the presenter's namespace %s: %v", teacherNS, err)
	}

	// Rejoin: the own form is hidden again; the focus stays in the banner,
	// on the button that replaced Rejoin.
	if err := chromedp.Do(learner, chromedp.Click(chromedp.CSS("#classroom-rejoin"))); err != nil {
		t.Fatal(err)
	}
	follows("rejoined")
	if got := evalString(t, learner, `document.activeElement?.id || document.activeElement?.tagName`); got != "classroom-leave" {
		t.Errorf("after Rejoin the focus is on %q, want the banner's way back (the Rejoin button it replaced)", got)
	}
	poll(t, learner, "the learner's own card gone", `document.querySelector("#db-mine") === null`)
	if got := evalString(t, learner, `document.getElementById("flash").textContent.trim()`); got != "" {
		t.Errorf("following again, the own lab's flash %q is shown over the presenter's lab", got)
	}
	viewShot(t, learner, "44-rejoined-1280x800")

	// Esc still breaks away, from the way back itself: the focus moves to
	// the own form, not to the page's start.
	if err := chromedp.Do(learner, chromedp.Focus(chromedp.CSS("#follow-back-button")), chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "Esc broke away", `document.getElementById("lab").dataset.following === "" && document.querySelector("details.create").getClientRects().length > 0`)
	poll(t, learner, "the focus on the own form after Esc", `document.activeElement?.matches("details.create > summary")`)
	poll(t, learner, "the learner's own card back", `document.querySelector("#db-mine") !== null`)
}

func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", strings.SplitN(expr, "\n", 2)[0], err)
	}
	return s
}

// narrow takes a screenshot of the whole page at 390 px wide, and goes back
// to 1280×800.
func narrow(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if wide := evalInt(t, ctx, `String(document.documentElement.scrollWidth)`); wide > 390 {
		t.Errorf("%s: the page is %d px wide at 390 px: %s", name, wide, evalString(t, ctx, overflowing))
	}
	screenshot(t, ctx, name)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
}
