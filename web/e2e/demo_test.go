package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/lab"
)

// These tests play the scripted demos (web/demo) through the instructor
// page on the real cluster with the real controller, and check from the
// trace the recorder holds for the instructor's lab namespace that each
// step's point happened, in order, between its narration and the next.

// nsTrace is every recorded step of ns, in seq order.
func (e *testEnv) nsTrace(ns string) []controller.Step {
	var out []controller.Step
	for _, raw := range e.recorder.Export(ns).Messages {
		var m trace.Message
		if err := json.Unmarshal(raw, &m); err != nil || m.Type == trace.TypeState {
			continue
		}
		out = append(out, m.Step)
	}
	return out
}

func isNarration(s controller.Step) bool {
	return s.Type == controller.StepController && s.Phase == demo.PhaseNarration && s.Object.Kind == "Demo"
}

// instructorLab is a browser-like client holding a lab session (its
// namespace is returned) and the instructor cookie.
func (e *testEnv) instructorLab(t *testing.T) (*http.Client, string) {
	t.Helper()
	c, ns := e.learner(t)
	resp, err := c.Get(e.http.URL + "/instructor?token=" + url.QueryEscape(testInstructorToken))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("instructor login: %d", resp.StatusCode)
	}
	return c, ns
}

func postDemo(t *testing.T, c *http.Client, base, action string, form url.Values) (int, string) {
	t.Helper()
	resp, body := postAccept(t, c, base+"/instructor/demo/"+action, form, "")
	return resp.StatusCode, body
}

// waitDemoOver waits for the demo's last narration and returns the trace.
func (e *testEnv) waitDemoOver(t *testing.T, ns string) []controller.Step {
	t.Helper()
	end := time.Now().Add(2 * deadline)
	for {
		steps := e.nsTrace(ns)
		i := slices.IndexFunc(steps, func(s controller.Step) bool {
			return isNarration(s) && (strings.Contains(s.Message, "is over") || strings.Contains(s.Message, "stopped"))
		})
		if i >= 0 {
			if strings.Contains(steps[i].Message, "stopped") {
				t.Fatalf("the demo did not finish: %s %s%s", steps[i].Message, steps[i].Error, describeTrace(steps))
			}
			return steps
		}
		if time.Now().After(end) {
			t.Fatalf("the demo never finished; the trace:%s", describeTrace(steps))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// narrated splits the trace at the demo's narration steps: section[i] is
// what was recorded after step i+1's narration and before the next one.
func narrated(t *testing.T, steps []controller.Step, want int) ([]controller.Step, [][]controller.Step) {
	t.Helper()
	var says []controller.Step
	var sections [][]controller.Step
	for _, s := range steps {
		if isNarration(s) {
			if s.Error != "" {
				t.Fatalf("the demo reported an error: %s: %s", s.Message, s.Error)
			}
			says = append(says, s)
			sections = append(sections, nil)
			continue
		}
		if len(sections) > 0 {
			sections[len(sections)-1] = append(sections[len(sections)-1], s)
		}
	}
	if len(says) != want+1 {
		t.Fatalf("%d narration steps, want %d steps and the end:%s", len(says), want, describeTrace(steps))
	}
	for i := range want {
		if prefix := fmt.Sprintf("Step %d of %d: ", i+1, want); !strings.HasPrefix(says[i].Message, prefix) {
			t.Errorf("narration %d is %q, want it to start %q", i+1, says[i].Message, prefix)
		}
	}
	return says, sections
}

func has(steps []controller.Step, ok func(controller.Step) bool) bool {
	return slices.ContainsFunc(steps, ok)
}

func action(verb, kind, name string, outcome controller.Outcome) func(controller.Step) bool {
	return func(s controller.Step) bool {
		return s.Type == controller.StepAction && s.Action == verb && s.Target != nil && s.Target.Kind == kind &&
			(name == "" || s.Target.Name == name) && s.Outcome == outcome
	}
}

func TestDemoWalkThroughPlaysToTheEnd(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	c, ns := e.instructorLab(t)
	learner, _ := e.learner(t)

	// A learner (lab cookie, no instructor cookie) cannot play it.
	if code, _ := postDemo(t, learner, e.http.URL, "play", url.Values{"demo": {"reconcile-loop"}}); code != http.StatusUnauthorized {
		t.Errorf("a learner's Play: %d, want 401", code)
	}
	// Played with "advance by itself": each step's dwell moves it on.
	if code, body := postDemo(t, c, e.http.URL, "play", url.Values{"demo": {"reconcile-loop"}, "auto": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("Play: %d %s", code, body)
	}
	// A second Play while it plays is refused, saying why.
	if code, body := postDemo(t, c, e.http.URL, "play", url.Values{"demo": {"died-mid-deletion"}}); code != http.StatusConflict ||
		!strings.Contains(body, "is under way in "+ns) {
		t.Errorf("second Play: %d; want 409 naming the demo under way in %s", code, ns)
	}

	steps := e.waitDemoOver(t, ns)
	_, sec := narrated(t, steps, 6)
	isDB := func(s controller.Step) bool {
		return s.Database == "shop" || (s.Object.Kind == "Database" && s.Object.Name == "shop")
	}
	for i := range sec {
		sec[i] = slices.DeleteFunc(sec[i], func(s controller.Step) bool { return !isDB(s) && s.Type != controller.StepController })
	}
	// 1. Created: the create event, then the finalizer added.
	if !has(sec[0], func(s controller.Step) bool {
		return s.Type == controller.StepEvent && s.Event == "create" && s.Object.Kind == "Database"
	}) ||
		!has(sec[0], func(s controller.Step) bool { return s.Type == controller.StepFinalizer && s.Phase == "added" }) {
		t.Errorf("step 1: no create event and finalizer added:%s", describeTrace(sec[0]))
	}
	// 2. The three children created (in step 1's reconcile or this one's), then Ready.
	upTo2 := slices.Concat(sec[0], sec[1])
	for _, kind := range []string{"Secret", "Service", "StatefulSet"} {
		if !has(upTo2, action("create", kind, "", controller.OutcomeCreated)) {
			t.Errorf("steps 1-2: no %s created:%s", kind, describeTrace(upTo2))
		}
	}
	// Ready may come while step 2 is still being read out; it must come
	// before step 3 changes the spec.
	if !has(upTo2, readyStatus) {
		t.Errorf("steps 1-2: no Ready=True written:%s", describeTrace(upTo2))
	}
	// 3. Scaled: the StatefulSet updated, observedGeneration 2 written.
	if !has(sec[2], func(s controller.Step) bool {
		return s.Type == controller.StepEvent && s.Object.Kind == "Database" && s.Generation == 2
	}) ||
		!has(sec[2], func(s controller.Step) bool {
			return s.Type == controller.StepDiff && slices.ContainsFunc(s.Differences, func(d string) bool { return strings.Contains(d, "1 → 3") })
		}) ||
		!has(sec[2], func(s controller.Step) bool {
			return s.Type == controller.StepStatus && s.ObservedGeneration == 2 && !s.Skipped
		}) {
		t.Errorf("step 3: no generation 2 event, replicas 1 → 3 diff and observedGeneration 2:%s", describeTrace(sec[2]))
	}
	// 4. Drift: the StatefulSet's delete event, then it is created again.
	del := slices.IndexFunc(sec[3], func(s controller.Step) bool {
		return s.Type == controller.StepEvent && s.Event == "delete" && s.Object.Kind == "StatefulSet"
	})
	if del < 0 || !has(sec[3][del:], action("create", "StatefulSet", "shop", controller.OutcomeCreated)) {
		t.Errorf("step 4: no StatefulSet delete event followed by its create:%s", describeTrace(sec[3]))
	}
	// 5. Delete: the finalizer's phases in order, the snapshot among them.
	if got := finalizerPhases(sec[4]); fmt.Sprint(got) != "[draining snapshot removed]" {
		t.Errorf("step 5: finalizer phases %v, want [draining snapshot removed]:%s", got, describeTrace(sec[4]))
	}
	if !snapshotKept(t, e, ns, "shop") {
		t.Error("shop-final-snapshot is not kept after the demo")
	}
	if rows := errorRows(slices.Concat(sec...)); len(rows) > 0 {
		t.Errorf("the demo's reconciles had error rows:%s", describeTrace(rows))
	}
	// The learner's export of this timeline, narration included, is one
	// the replay reads back.
	var buf bytes.Buffer
	if _, err := e.recorder.Export(ns).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := trace.ReadExport(&buf, 0)
	if err != nil {
		t.Fatalf("the narrated export does not read back: %v", err)
	}
	for i, raw := range back.Messages {
		if _, err := lab.ReplayMessage(raw); err != nil {
			t.Fatalf("the replay cannot draw message %d: %v", i, err)
		}
	}
	// Once finished, the demo can be played again elsewhere: nothing holds it.
	if code, body := postDemo(t, c, e.http.URL, "stop", nil); code != http.StatusConflict || !strings.Contains(body, "no demo is under way") {
		t.Errorf("Stop after the end: %d; want 409 saying no demo is under way", code)
	}
}

func TestDemoPausedAndSteppedOnTheCluster(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	c, ns := e.instructorLab(t)
	if code, body := postDemo(t, c, e.http.URL, "play", url.Values{"demo": {"died-mid-deletion"}}); code != http.StatusSeeOther {
		t.Fatalf("Play: %d %s", code, body)
	}
	if code, body := postDemo(t, c, e.http.URL, "pause", nil); code != http.StatusSeeOther {
		t.Fatalf("Pause: %d %s", code, body)
	}
	narrations := func() int {
		return len(slices.DeleteFunc(e.nsTrace(ns), func(s controller.Step) bool { return !isNarration(s) }))
	}
	// Each Step does exactly one more step; a Step while the previous one
	// still waits is refused, and tried again.
	for want := 2; want <= 7; want++ {
		var code int
		var body string
		polltest.Until(t, deadline, fmt.Sprintf("Step to begin step %d", want), func() (bool, error) {
			code, body = postDemo(t, c, e.http.URL, "step", nil)
			if code == http.StatusConflict && strings.Contains(body, "still under way") {
				return false, fmt.Errorf("%d", code)
			}
			return true, nil
		})
		if code != http.StatusSeeOther {
			t.Fatalf("Step %d: %d %s", want, code, body)
		}
		if got := narrations(); got != want {
			t.Fatalf("after Step to step %d: %d narrations on the timeline", want, got)
		}
		if want == 4 && !e.runner.NamespacePaused(ns) {
			t.Error("the demo's controller-dies step did not pause the namespace")
		}
	}
	steps := e.waitDemoOver(t, ns)
	_, sec := narrated(t, steps, 6)
	isLedger := func(s controller.Step) bool { return s.Database == "ledger" || s.Object.Name == "ledger" }
	// 2. The controller dies: the namespace paused.
	if !has(sec[1], func(s controller.Step) bool { return s.Type == controller.StepController && s.Phase == "paused" }) {
		t.Errorf("step 2: the namespace was not paused:%s", describeTrace(sec[1]))
	}
	// 3-4. Deleted while paused: the event is held, nothing reconciles.
	held := slices.Concat(sec[2], sec[3])
	if !has(held, func(s controller.Step) bool { return s.Type == controller.StepEvent && s.Held && isLedger(s) }) {
		t.Errorf("steps 3-4: no held event for ledger:%s", describeTrace(held))
	}
	if has(held, func(s controller.Step) bool { return s.Type == controller.StepReconcileStart && isLedger(s) }) {
		t.Errorf("steps 3-4: ledger was reconciled while its namespace was paused:%s", describeTrace(held))
	}
	// 5. The controller comes back: resumed, then drain, snapshot, removed.
	if !has(sec[4], func(s controller.Step) bool { return s.Type == controller.StepController && s.Phase == "resumed" }) ||
		fmt.Sprint(finalizerPhases(sec[4])) != "[draining snapshot removed]" {
		t.Errorf("step 5: no resume followed by the finalizer's phases:%s", describeTrace(sec[4]))
	}
	if !snapshotKept(t, e, ns, "ledger") || e.runner.NamespacePaused(ns) {
		t.Error("after the demo: ledger's snapshot missing, or the namespace still paused")
	}
}

func TestBrowserDemoNarratesOnTheTimeline(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#demo")),
		chromedp.Click(chromedp.CSS(`#demo input[value="reconcile-loop"]`)),
		chromedp.Click(chromedp.CSS(`#demo input[name="auto"]`)),
		chromedp.Click(chromedp.CSS(`#demo form[action="/instructor/demo/play"] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#demo-status")), // the page after Play's redirect
	); err != nil {
		t.Fatal(err)
	}
	// #demo-status is on the page before Play too, so the redirect after it
	// may still be under way: wait across that navigation.
	pollAcross(t, ctx, "the demo at step 2 on the instructor page", `document.querySelector("#demo-progress")?.textContent.includes("step 2 of 6")`)
	narration, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#demo-narration")))
	if err != nil || !strings.Contains(narration, "creates a Secret, a Service and a StatefulSet") {
		t.Errorf("the instructor page narrates %q (%v) at step 2", narration, err)
	}
	// The next step begins seconds after this page loaded: its script keeps
	// the panel current without a reload. The page is marked with the step
	// it shows at once (the demo advances by itself, so a check made later,
	// on a loaded machine, could find it past step 3 already), and a later
	// step must appear on the same page.
	// The update keeps the panel's nodes: the narration (a live region, so
	// a screen reader reads its new text) and the button the instructor
	// has focused.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.loadedAt = document.querySelector("#demo-progress").textContent;
		window.say = document.getElementById("demo-narration");
		document.querySelector('#demo form[action="/instructor/demo/stop"] button').focus()`)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "a later step on the same instructor page", `window.loadedAt !== undefined && document.querySelector("#demo-progress")?.textContent !== window.loadedAt
		&& /step [3-6] of 6/.test(document.querySelector("#demo-progress").textContent)`)
	if kept := evalString(t, ctx, `[document.getElementById("demo-narration") === window.say ? "" : "the narration was replaced",
		document.activeElement?.closest('form[action="/instructor/demo/stop"]') ? "" : "Stop lost the focus"].filter(Boolean).join(", ")`); kept != "" {
		t.Errorf("the panel's update: %s", kept)
	}
	screenshot(t, ctx, "demo-instructor")
	axeCheck(t, ctx, "/instructor (a demo playing)")
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	// Freeze the timeline (its own Pause) once step 3's narration is drawn.
	// On a loaded machine the lab may load after step 4 has begun, so step 3
	// need not be the newest row.
	poll(t, ctx, "step 3's narration row on the lab timeline", `(() => {
		const rows = [...document.querySelectorAll("#rows > li.narration")];
		if (!rows.some(li => li.textContent.includes("Step 3 of 6: Scale to 3"))) return false;
		document.getElementById("play-pause").click();
		return true; })()`)
	// Newest first: the narrations in reverse, with reconcile rows between them.
	said, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#rows > li.narration .narration-text")].map(e => e.textContent.slice(0, 11))`))
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: whatever came after step 3, then steps 3, 2 and 1.
	if n := len(said); n < 3 || fmt.Sprint(said[n-3:]) != "[Step 3 of 6 Step 2 of 6 Step 1 of 6]" || !slices.IsSortedFunc(said, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("narration rows (newest first) %q; want them newest first, ending with steps 3, 2, 1", said)
	}
	// The demo is about shop: the lab selected it, for the room to see.
	if sel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("filter").value`)); err != nil || sel != "shop" {
		t.Errorf("the lab's selected Database during the demo = %q (%v), want shop", sel, err)
	}
	between, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#rows > li.narration ~ li:has(.rid)").length`))
	if err != nil || between == 0 {
		t.Errorf("no reconcile rows below the narrations (%v)", err)
	}
	screenshot(t, ctx, "demo-lab-timeline")
	axeCheck(t, ctx, "/lab (narrated by a demo)")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#play-pause"))); err != nil {
		t.Fatal(err)
	}
	// Stop it from the instructor page: the run ends and the timeline says so.
	// On a loaded machine the six steps may all have run by now (the axe
	// checks alone take seconds), or the last may end just as Stop is
	// pressed; then play it again, advanced by hand this time (it waits
	// after its first step), so Stop has a run to end.
	for attempt := 0; ; attempt++ {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/instructor"), chromedp.WaitVisible(chromedp.CSS("#demo"))); err != nil {
			t.Fatal(err)
		}
		if over, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#demo form[action=\"/instructor/demo/stop\"] button") === null`)); err != nil {
			t.Fatal(err)
		} else if over {
			t.Log("the demo had finished before Stop; playing it again, by hand")
			if err := chromedp.Do(ctx,
				chromedp.Click(chromedp.CSS(`#demo input[value="reconcile-loop"]`)),
				chromedp.Click(chromedp.CSS(`#demo form[action="/instructor/demo/play"] button[type="submit"]`)),
			); err != nil {
				t.Fatal(err)
			}
			pollAcross(t, ctx, "the replayed demo playing", `document.querySelector("#demo form[action=\"/instructor/demo/stop\"] button") !== null`)
		}
		if err := chromedp.Do(ctx,
			chromedp.Click(chromedp.CSS(`#demo form[action="/instructor/demo/stop"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`#demo form[action="/instructor/demo/play"] fieldset`)), // the page after Stop's redirect
		); err != nil {
			// The run ended just as Stop was pressed and the panel was
			// drawn again without its button: start over, as above.
			if attempt < 3 {
				t.Logf("Stop's button went as it was pressed (%v); again", err)
				continue
			}
			t.Fatal(err)
		}
		poll(t, ctx, "the demo ended", `["stopped", "finished"].includes(document.querySelector("#demo-state")?.textContent)`)
		state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#demo-state").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		if state == "stopped" {
			break
		}
		if attempt > 2 {
			t.Fatalf("the demo read %q after Stop, %d times; want stopped", state, attempt+1)
		}
	}
	if !has(e.nsTrace(ns), func(s controller.Step) bool { return isNarration(s) && strings.Contains(s.Message, "stopped the demo") }) {
		t.Errorf("no 'stopped' narration on %s's timeline", ns)
	}
}

// Played by hand (the default), a demo stops after each step until the
// presenter moves it on: here with → on the projector, the instructor's own
// lab page, as a clicker moves slides. The instructor panel says what it
// waits for; → in a form field types, it does not advance.
func TestBrowserDemoWaitsForTheProjectorsArrow(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	ns, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("lab").dataset.namespace`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#demo")),
	); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "demo-instructor-choose")
	axeCheck(t, ctx, "/instructor (choosing a demo)")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#demo input[value="reconcile-loop"]`)),
		chromedp.Click(chromedp.CSS(`#demo form[action="/instructor/demo/play"] button[type="submit"]`)),
	); err != nil {
		t.Fatal(err)
	}
	// Stop the run whatever happens below: the runner plays one demo at a
	// time for the whole server. ic is another browser of the instructor's,
	// to ask the panel and to stop.
	ic, _ := e.instructorLab(t)
	t.Cleanup(func() {
		if resp, err := ic.PostForm(e.http.URL+"/instructor/demo/stop", nil); err == nil {
			resp.Body.Close()
		}
	})
	pollAcross(t, ctx, "the panel saying step 1 is done and it waits for Next",
		`document.querySelector("#demo-awaits")?.textContent === "Step 1 of 6 done — press Next (or → or space on your lab page) to continue."`)
	screenshot(t, ctx, "demo-instructor-awaits-next")
	axeCheck(t, ctx, "/instructor (a demo waiting for Next)")

	// The projector: the instructor's own lab.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "step 1's narration and the keys' hint on the lab", `[...document.querySelectorAll("#rows > li.narration")].some(li => li.textContent.includes("Step 1 of 6"))
		&& document.getElementById("demo-keys")?.textContent.includes("press → or space")`)
	narrations := func() []string {
		t.Helper()
		var out []string
		for _, s := range e.nsTrace(ns) {
			if isNarration(s) {
				out = append(out, s.Message[:min(len(s.Message), 11)])
			}
		}
		return out
	}
	// Step 1 is done (the panel said so) and nothing moves the demo on.
	if got := narrations(); fmt.Sprint(got) != "[Step 1 of 6]" {
		t.Fatalf("narrations before →: %q, want step 1 alone", got)
	}
	// → while typing in the create form's name field stays in the field.
	// (The form is folded away once a Database exists: unfold it.)
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("details.create").open = true`),
		chromedp.Focus(chromedp.CSS(`#create-form input[name="name"]`)),
		chromedp.KeyEvent(kb.ArrowRight),
	); err != nil {
		t.Fatal(err)
	}
	if line, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("demo-keys").textContent`)); err != nil || !strings.Contains(line, "press → or space") {
		t.Errorf("→ in a form field asked for the next step: the line reads %q (%v)", line, err)
	}
	screenshot(t, ctx, "demo-lab-awaits-next")
	axeCheck(t, ctx, "/lab (a demo waiting for the presenter)")
	// → on the page itself: step 2 begins.
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`),
		chromedp.KeyEvent(kb.ArrowRight),
	); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "step 2's narration on the lab after →", `[...document.querySelectorAll("#rows > li.narration")].some(li => li.textContent.includes("Step 2 of 6"))`)
	poll(t, ctx, "the lab saying step 2 began", `document.getElementById("demo-keys")?.textContent.startsWith("Step 2 of 6 begun")`)
	if got := narrations(); fmt.Sprint(got) != "[Step 1 of 6 Step 2 of 6]" {
		t.Errorf("narrations after one →: %q, want steps 1 and 2", got)
	}
	screenshot(t, ctx, "demo-lab-after-arrow")
	// Step 2 waits for shop to be Ready; once it is, the demo waits again.
	polltest.Until(t, deadline, "step 2 done, waiting for Next", func() (bool, error) {
		resp, err := ic.Get(e.http.URL + "/instructor/demo")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "Step 2 of 6 done — press Next"), err
	})
	if got := narrations(); len(got) != 2 {
		t.Errorf("narrations once step 2 is done: %q, want steps 1 and 2 only", got)
	}
	// Space does what → does.
	if err := chromedp.Do(ctx, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "step 3's narration on the lab after space", `[...document.querySelectorAll("#rows > li.narration")].some(li => li.textContent.includes("Step 3 of 6"))`)
}
