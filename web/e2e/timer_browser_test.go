package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/web/classroom"
)

// The class timer: the instructor sets it on /instructor, a learner's open
// lab counts it down at once, a lab opened afterwards shows its end even
// without script, its end is said once in a polite live region, and Clear
// takes it off every page.
func TestBrowserClassTimerOnALearnersLab(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	t.Cleanup(e.server.Classroom().ClearTimer)
	learner, teacher := e.tab(t), e.tab(t)
	e.openLab(t, learner, "")

	if err := chromedp.Do(teacher, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#timer-start")),
		chromedp.SetValue(chromedp.CSS("#timer-label"), "10 min exercise"),
		chromedp.SetValue(chromedp.CSS("#timer-minutes"), "10"),
		chromedp.Click(chromedp.CSS("#timer-start")), chromedp.WaitVisible(chromedp.CSS("#instructor-timer"))); err != nil {
		t.Fatal(err)
	}
	if got, _ := chromedp.Run(teacher, chromedp.Evaluate[string](`document.getElementById("instructor-timer").textContent`)); !strings.Contains(got, "10 min exercise") || !strings.Contains(got, "UTC") {
		t.Errorf("the instructor page says of the timer: %q", got)
	}
	axeCheck(t, teacher, "/instructor (timer running)")

	// The open lab counts down, mm:ss, and said once that it started.
	poll(t, learner, "the countdown on the lab", `(() => { const b = document.getElementById("class-timer");
		return !!b && !b.hidden && b.textContent.includes("10 min exercise") && /^(10:00|9:[0-5]\d) left$/.test(b.querySelector(".class-timer-left").textContent); })()`)
	poll(t, learner, "the start said in the live region", `document.getElementById("class-timer-say").textContent.startsWith("Class timer started: 10 min exercise")`)
	first, _ := chromedp.Run(learner, chromedp.Evaluate[string](`document.querySelector("#class-timer .class-timer-left").textContent`))
	poll(t, learner, "the countdown moving", fmt.Sprintf(`document.querySelector("#class-timer .class-timer-left").textContent !== %q`, first))
	if role, _ := chromedp.Run(learner, chromedp.Evaluate[string](`(document.getElementById("class-timer").closest("[role=status],[aria-live]") || {id: "none"}).id`)); role != "none" {
		t.Errorf("the ticking countdown sits in a live region (%s): a screen reader would hear every second", role)
	}
	screenshot(t, learner, "70-lab-class-timer")
	axeCheck(t, learner, "/lab (class timer)")

	// Without script the page still says when the time is up.
	noJS := e.tab(t)
	if err := chromedp.Do(noJS, noScript(), chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitReady(chromedp.CSS("#lab"))); err != nil {
		t.Fatal(err)
	}
	if got, _ := chromedp.Run(noJS, chromedp.Evaluate[string](`document.getElementById("class-timer")?.textContent || ""`)); !strings.Contains(got, "10 min exercise: Ends at") || !strings.Contains(got, "UTC") {
		t.Errorf("the lab without script shows of the timer: %q", got)
	}

	// A short timer runs out: "Time's up" on the page, said once.
	if err := e.server.Classroom().StartTimer("Quick check", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the short timer drawn", `document.getElementById("class-timer").textContent.includes("Quick check")`)
	poll(t, learner, "time's up on the page", `document.getElementById("class-timer").dataset.up === "true" && document.querySelector("#class-timer .class-timer-left").textContent === "Time's up"`)
	poll(t, learner, "time's up said", `document.getElementById("class-timer-say").textContent === "Time's up: Quick check."`)
	// Said once: the region is not written again while the page stays.
	if err := chromedp.Do(learner, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("class-timer-say");
		window.timerSaid = 0; new MutationObserver(() => window.timerSaid++).observe(s, {childList: true, characterData: true, subtree: true}); })()`)); err != nil {
		t.Fatal(err)
	}
	// Another change of the classroom's state redraws the page; the end is
	// not said again.
	e.server.Classroom().Narrate(classroom.Narration{Text: "Look at the timeline"})
	t.Cleanup(func() { e.server.Classroom().Narrate(classroom.Narration{}) })
	poll(t, learner, "the narration drawn", `document.getElementById("classroom-banner").textContent.includes("Look at the timeline")`)
	if n, _ := chromedp.Run(learner, chromedp.Evaluate[int](`window.timerSaid`)); n != 0 {
		t.Errorf("the live region was written %d more times after time's up", n)
	}
	screenshot(t, learner, "71-lab-class-timer-up")

	// Clear takes it off.
	if err := chromedp.Do(teacher, chromedp.Navigate(e.http.URL+"/instructor"), chromedp.WaitVisible(chromedp.CSS("#timer-clear")),
		chromedp.Click(chromedp.CSS("#timer-clear")), chromedp.WaitVisible(chromedp.CSS("#timer-start"))); err != nil {
		t.Fatal(err)
	}
	poll(t, learner, "the timer gone from the lab", `document.getElementById("class-timer").hidden`)
	if _, ok := e.server.Classroom().Timer(); ok {
		t.Error("the classroom still has a timer after Clear")
	}
}
