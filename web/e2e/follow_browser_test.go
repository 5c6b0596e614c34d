package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/oplab-dev/oplab/web/classroom"
)

// followerPaused: the player's note says the presenter has paused.
const followerPaused = `(document.getElementById("follow-player").textContent.endsWith(": paused."))`

// labData reads one of #lab's data attributes.
func labData(t *testing.T, ctx context.Context, key string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById("lab")?.dataset.%s || ""`, key)))
	if err != nil {
		t.Fatalf("read #lab data-%s: %v", key, err)
	}
	return s
}

// pollAcross is poll for a page that navigates meanwhile: a navigation
// ends one evaluation, and the next one reads the new page.
func pollAcross(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	end := time.Now().Add(deadline)
	var err error
	for time.Now().Before(end) {
		if _, err = chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(5*time.Second))); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	failedShot(t, ctx)
	t.Fatalf("waiting for %s (%s): %v", what, expr, err)
}

// follows waits until the learner's lab follows the presenter at the
// presenter's paused position, with the presenter's Database card.
func follows(t *testing.T, ctx context.Context, who, db, seq string) {
	t.Helper()
	poll(t, ctx, who+" sees the banner", `document.getElementById("classroom-banner").textContent.includes("Following Ada")`)
	poll(t, ctx, who+" follows", `document.getElementById("lab").dataset.following === "presenter"`)
	poll(t, ctx, who+" sees the presenter's card", fmt.Sprintf(`document.querySelector("#databases #db-%s") !== null`, db))
	poll(t, ctx, who+" at the presenter's paused position", fmt.Sprintf(`%s && String(%s) === %q`, followerPaused, newestSeq, seq))
}

// Three browsers: the instructor presents, two learners follow (one joins
// late), one breaks away with Esc and rejoins with one click.
func TestBrowserFollowThePresenter(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	t.Cleanup(e.server.Classroom().StopPresenting)
	teacher, early, late := e.tab(t), e.tab(t), e.tab(t)

	// A learner whose lab is open before the presentation starts.
	earlyNS := e.openLab(t, early, "")
	saveName(t, early, "Kim")

	// The instructor signs in, opens their own lab, presents.
	if err := chromedp.Do(teacher, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#present-start"))); err != nil {
		t.Fatal(err)
	}
	teacherNS := e.openLab(t, teacher, "")
	if err := chromedp.Do(teacher, chromedp.Navigate(e.http.URL+"/instructor"),
		chromedp.SetValue(chromedp.CSS(`.present-form input[name="name"]`), "Ada"),
		chromedp.Click(chromedp.CSS("#present-start")), chromedp.WaitVisible(chromedp.CSS("#present-status"))); err != nil {
		t.Fatal(err)
	}
	if ns, ok := e.server.Classroom().Presenting(); !ok || ns != teacherNS {
		t.Fatalf("presenting %q (%v), want the instructor's lab namespace %q", ns, ok, teacherNS)
	}
	e.openLab(t, teacher, "")
	poll(t, teacher, "the presenter's banner", `document.getElementById("classroom-banner").textContent.includes("Presenting as Ada")`)
	if got := labData(t, teacher, "following"); got != "" {
		t.Fatalf("the presenter follows %q; want their own lab", got)
	}
	createInTab(t, teacher, "demo")
	poll(t, teacher, "demo Ready", `document.querySelector("#db-demo .db-head .pill.ok")?.textContent === "Ready True"`)

	// The presenter pauses, a change arrives, they step through it. The
	// key, not a click at the button's place: rows still arriving can move
	// the button between the two.
	if err := chromedp.Do(teacher, pressKey(chromedp.CSS("#play-pause"))); err != nil {
		t.Fatal(err)
	}
	poll(t, teacher, "the presenter's timeline frozen", `document.getElementById("play-pause").getAttribute("aria-pressed") === "true"`)
	// The follower pauses with them before anything new happens.
	poll(t, early, "the early learner paused with the presenter", followerPaused)
	kubectlScale(t, teacherNS, "demo", 2)
	poll(t, teacher, "steps waiting for the presenter", waitingSteps+` >= 2`)
	for range 2 {
		if err := chromedp.Do(teacher, chromedp.Click(chromedp.CSS("#play-step"))); err != nil {
			t.Fatal(err)
		}
	}
	// Where the presenter's timeline is: its newest step.
	seq := evalString(t, teacher, `String(`+newestSeq+`)`)
	if seq == "0" || evalString(t, teacher, `String(`+frozen+`)`) != "true" {
		t.Fatalf("the presenter's timeline: seq %q, frozen %s; want frozen at a step", seq, evalString(t, teacher, `String(`+frozen+`)`))
	}

	// Both learners follow: the early one switched live, the late one
	// learns it from the stream's snapshot.
	lateNS := e.openLab(t, late, "")
	if lateNS == earlyNS || lateNS == teacherNS {
		t.Fatalf("the three browsers share a namespace: %s %s %s", teacherNS, earlyNS, lateNS)
	}
	follows(t, early, "the early learner", "demo", seq)
	follows(t, late, "the late learner", "demo", seq)
	if n := evalInt(t, late, `String(`+waitingSteps+`)`); n == 0 {
		t.Error("the late learner holds no step after the presenter's position; the paused position is not applied")
	}
	screenshot(t, late, "30-follower-paused")

	// The presenter steps once more: the followers move with them. (The
	// delay is logged, as a figure, never asserted.)
	stepped := time.Now()
	if err := chromedp.Do(teacher, chromedp.Click(chromedp.CSS("#play-step"))); err != nil {
		t.Fatal(err)
	}
	next := evalString(t, teacher, `String(`+newestSeq+`)`)
	if next == seq {
		t.Fatalf("the presenter's step did not move their timeline (seq %s)", seq)
	}
	follows(t, early, "the early learner after the step", "demo", next)
	follows(t, late, "the late learner after the step", "demo", next)
	t.Logf("Both followers showed the presenter's step %v after the click (the test's polling included)", time.Since(stepped).Round(time.Millisecond))

	// The banner is a status region, so it is announced.
	if ok, err := chromedp.Run(late, chromedp.Evaluate[bool](`(() => { const b = document.getElementById("classroom-banner");
		return b.getAttribute("role") === "status" && b.getAttribute("aria-live") === "polite"; })()`)); err != nil || !ok {
		t.Errorf("the banner is not a polite status region (%v)", err)
	}
	// The follower's own forms wait; the presenter's card has none.
	if n := evalInt(t, late, `String([...document.querySelectorAll("#databases .db-actions")].filter(a => a.offsetParent !== null).length)`); n != 0 {
		t.Errorf("the follower sees %d of the presenter's card forms; want none (read-only)", n)
	}

	// Esc: the late learner breaks away, back to their own namespace.
	if err := chromedp.Do(late, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	poll(t, late, "back in the own lab", `document.getElementById("lab").dataset.following === "" && `+ownStreamLive)
	poll(t, late, "the presenter's card gone", `document.querySelector("#db-demo") === null`)
	poll(t, late, "Rejoin offered", `document.getElementById("classroom-rejoin")?.textContent === "Rejoin Ada"
		&& document.getElementById("classroom-banner").textContent.startsWith("Ada is presenting. You are in your own lab.")`)
	if h := evalInt(t, late, `document.getElementById("objects-h").textContent === "Your Databases" ? "1" : "0"`); h != 1 {
		t.Error("after breaking away the heading does not say the Databases are the learner's own")
	}
	screenshot(t, late, "31-broke-away")
	// Away on a lesson page, the banner does not say they are in a lab.
	if err := chromedp.Do(late, chromedp.Navigate(e.http.URL+"/lessons")); err != nil {
		t.Fatal(err)
	}
	poll(t, late, "the away banner on a lesson page", `document.getElementById("classroom-rejoin")?.textContent === "Rejoin Ada"
		&& !document.getElementById("classroom-banner").textContent.includes("lab")`)
	e.openLab(t, late, "")
	poll(t, late, "Rejoin offered again in the lab", `document.getElementById("classroom-rejoin")?.textContent === "Rejoin Ada"`)
	// The other learner still follows.
	follows(t, early, "the early learner after the other broke away", "demo", next)

	// One click rejoins, at the presenter's position.
	if err := chromedp.Do(late, chromedp.Click(chromedp.CSS("#classroom-rejoin"))); err != nil {
		t.Fatal(err)
	}
	follows(t, late, "the late learner after Rejoin", "demo", next)

	// The way back in the own form's place breaks away too (the own form
	// itself is not shown while following).
	if err := chromedp.Do(late, chromedp.Click(chromedp.CSS("#follow-back-button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, late, "a click on the way back to the own lab breaks away", `document.getElementById("lab").dataset.following === ""`)
	saveName(t, late, "Lin")
	createInTab(t, late, "mine")
	poll(t, late, "the learner's own Database Ready", `document.querySelector("#db-mine .db-head .pill.ok")?.textContent === "Ready True"`)

	// The roster shows both learners, each with what their browser reported
	// and what their namespace holds; the presentation goes on meanwhile.
	if err := chromedp.Do(teacher, chromedp.Navigate(e.http.URL+"/instructor"), chromedp.WaitVisible(chromedp.CSS("#roster-live"))); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ ns, name, dbs string }{{earlyNS, "Kim", "none"}, {lateNS, "Lin", "Ready True"}} {
		poll(t, teacher, "the roster's row of "+l.name, fmt.Sprintf(`(() => { const r = document.getElementById(%q); if (!r) return false;
			return r.querySelector(".learner-name").textContent.trim() === %q
				&& (%q === "none" ? r.querySelector(".learner-dbs").textContent.trim() === "none"
					: r.querySelector('.learner-dbs [data-db="mine"] .pill.ok')?.textContent === %q); })()`, "learner-"+l.ns, l.name, l.dbs, l.dbs))
	}
	if _, ok := e.server.Classroom().Presenting(); !ok {
		t.Fatal("opening the roster ended the presentation")
	}
	// The instructor page in another tab of the presenter's browser, one
	// that never showed the lab: it said "Ada is presenting. You are in
	// your own lab." with a Rejoin that did nothing. The page follows
	// nobody; its Present section says the lab presented is this browser's.
	second, closeSecond := chromedp.NewContext(teacher)
	defer closeSecond()
	if err := chromedp.Do(second, chromedp.Navigate(e.http.URL+"/instructor"), chromedp.WaitVisible(chromedp.CSS("#present-status"))); err != nil {
		t.Fatal(err)
	}
	poll(t, second, "the class's banner on the second instructor tab", `document.getElementById("classroom-banner").textContent === "Ada is presenting— every learner follows their lab."
		&& !document.getElementById("classroom-rejoin") && document.getElementById("present-status").textContent === "presenting"`)
	closeSecond()

	// No learner's page ever holds the instructor token.
	for name, ctx := range map[string]context.Context{"early": early, "late": late} {
		src, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML + "\n" + document.cookie`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(src, testInstructorToken) {
			t.Errorf("the %s learner's page contains the instructor token", name)
		}
	}

	// The presenter opens a scenario: the follower's lab goes there too.
	e.openLab(t, teacher, "?scenario=finalizer")
	pollAcross(t, early, "the follower on the presenter's scenario", `new URLSearchParams(location.search).get("scenario") === "finalizer" && document.getElementById("lab")?.dataset.following === "presenter"`)

	// Stop presenting: the follower goes back to their own lab.
	if err := chromedp.Do(teacher, chromedp.Navigate(e.http.URL+"/instructor")); err != nil {
		t.Fatal(err)
	}
	poll(t, teacher, "the Stop presenting button", `document.getElementById("present-stop") !== null`)
	if err := chromedp.Do(teacher, chromedp.Evaluate[chromedp.Void](`document.getElementById("present-stop").click()`)); err != nil {
		t.Fatal(err)
	}
	pollAcross(t, teacher, "the Present button again", `document.getElementById("present-start") !== null`)
	pollAcross(t, early, "the early learner back home", `document.getElementById("lab").dataset.following === "" && document.getElementById("classroom-banner").textContent === ""`)
}

// Projector mode at 1280×720: the loop, the selected card and the timeline
// on one screen, in type big enough for the back of a room; and the
// following state and projector mode pass axe-core.
func TestBrowserProjectorAndFollowingAccessibility(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needClass(t)
	t.Cleanup(e.server.Classroom().StopPresenting)
	teacher, learner := e.tab(t), e.tab(t)
	teacherNS := e.openLab(t, teacher, "")
	createInTab(t, teacher, "big")
	poll(t, teacher, "big Ready", `document.querySelector("#db-big .db-head .pill.ok")?.textContent === "Ready True"`)
	e.server.Classroom().Present(teacherNS, "Ada")

	if err := chromedp.Do(teacher, chromedp.EmulateViewport(1280, 720),
		chromedp.Navigate(e.http.URL+"/lab?projector=1"), chromedp.WaitVisible(chromedp.CSS("#db-big"))); err != nil {
		t.Fatal(err)
	}
	poll(t, teacher, "a timeline row", `document.querySelector("#rows > li:not([hidden]) .row-head") !== null`)
	visible := `(() => { const h = innerHeight, w = innerWidth, out = [];
		const whole = (name, el) => { if (!el) { out.push(name + " missing"); return; } const r = el.getBoundingClientRect();
			if (r.top < 0 || r.bottom > h + 0.5 || r.left < 0 || r.right > w + 0.5) out.push(name + " at " + [r.left, r.top, r.right, r.bottom].map(Math.round)); };
		whole("loop diagram", document.getElementById("loop"));
		whole("selected card", document.querySelector("article.db.selected"));
		whole("timeline", document.getElementById("log"));
		if (scrollY !== 0 || document.documentElement.scrollHeight > h + 0.5) out.push("the page scrolls: " + document.documentElement.scrollHeight);
		const px = (sel) => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize);
		for (const [name, sel, min] of [["a timeline row", "#rows > li:not([hidden]) .row-head", 20], ["a loop stage", "#loop [data-stage]", 20], ["the card's conditions", "article.db.selected table.conditions", 18]]) {
			if (px(sel) < min) out.push(name + " in " + px(sel) + " px type, want at least " + min); }
		return out.join("; "); })()`
	if what, err := chromedp.Run(teacher, chromedp.Evaluate[string](visible)); err != nil || what != "" {
		t.Errorf("projector mode at 1280×720: %s (%v)", what, err)
	}
	if labData(t, teacher, "projector") != "true" || labData(t, teacher, "layout") != "focus" {
		t.Error("?projector=1 did not turn projector mode on")
	}
	viewShot(t, teacher, "32-projector-1280x720")
	checkPage(t, teacher, src, "/lab?projector=1")
	// The toggle turns it off, and says so.
	if err := chromedp.Do(teacher, chromedp.Click(chromedp.CSS("#projector-toggle"))); err != nil {
		t.Fatal(err)
	}
	if labData(t, teacher, "projector") != "false" {
		t.Error("the projector toggle did not turn projector mode off")
	}

	// A follower, in projector mode too.
	if err := chromedp.Do(learner, chromedp.EmulateViewport(1280, 720)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(learner, chromedp.Navigate(e.http.URL+"/lab?projector=1")); err != nil {
		t.Fatal(err)
	}
	pollAcross(t, learner, "following", `document.getElementById("lab").dataset.following === "presenter" && document.querySelector("#db-big") !== null`)
	viewShot(t, learner, "33-follower-projector-1280x720")
	checkPage(t, learner, src, "/lab following, projector")
	if err := chromedp.Do(learner, chromedp.EmulateReset(), chromedp.Click(chromedp.CSS("#projector-toggle"))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, learner, "34-follower")
	checkPage(t, learner, src, "/lab following")
	// Following, a learner who wanders off to the lessons is brought back
	// to the page the presenter is on.
	if err := chromedp.Do(learner, chromedp.Navigate(e.http.URL+"/lessons")); err != nil {
		t.Fatal(err)
	}
	pollAcross(t, learner, "back on the presenter's page", `location.pathname === "/lab" && document.getElementById("lab")?.dataset.following === "presenter"`)
}

// The instructor's "send everyone to" is followed once per id, presenting or
// not, on pages without a lab too; the demo's narration shows in the banner.
func TestBrowserGotoAndNarration(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	cls := e.server.Classroom()
	t.Cleanup(func() { cls.ClearGoto(); cls.Narrate(classroom.Narration{}) })
	tab := e.tab(t)
	e.openLab(t, tab, "") // a learner: a lab session
	if err := chromedp.Do(tab, chromedp.Navigate(e.http.URL+"/lessons"), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
		t.Fatal(err)
	}
	cls.Narrate(classroom.Narration{Demo: "tour", Step: 2, Of: 5, Text: "Watch the StatefulSet scale"})
	poll(t, tab, "the narration in the banner", `document.getElementById("classroom-banner").textContent.includes("step 2 of 5") && document.getElementById("classroom-banner").textContent.includes("Watch the StatefulSet scale")`)
	if err := cls.SendEveryone("/quiz"); err != nil {
		t.Fatal(err)
	}
	pollAcross(t, tab, "the page sent to /quiz", `location.pathname === "/quiz"`)
	// Once per id: going back, the page stays. Every page from here on
	// notes a navigation it starts; the banner's narration comes in the
	// same message as the goto, and the page handles both in one go, so
	// once the banner shows it, the goto has been followed or not.
	const noteLeaving = `addEventListener("beforeunload", () => { window.__leaving = true; });
if (window.navigation) navigation.addEventListener("navigate", () => { window.__leaving = true; });`
	if err := chromedp.Do(tab, cdpCall(page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: noteLeaving}),
		chromedp.Navigate(e.http.URL+"/lessons"), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
		t.Fatal(err)
	}
	poll(t, tab, "the narration in the banner again", `document.getElementById("classroom-banner").textContent.includes("Watch the StatefulSet scale")`)
	if left, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.__leaving === true || location.pathname !== "/lessons"`)); err != nil || left {
		t.Errorf("the same goto sent the page away again (leaving: %v, %v)", left, err)
	}
	screenshot(t, tab, "35-narration-banner")
}

// saveName gives the learner's display name with the lab's name field, as a
// learner would, and waits until oplab has it.
func saveName(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS("#learner-name-input")),
		chromedp.SetValue(chromedp.CSS("#learner-name-input"), name), chromedp.Click(chromedp.CSS("#learner-name button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, tab, "the name "+name+" saved", fmt.Sprintf(`document.querySelector("#learner-name [role=status]").textContent.includes(%q)`, name))
}
