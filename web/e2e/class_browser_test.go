package e2e

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/cmd/oplab/app"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// shoot saves what ctx shows at 1920×1080 and 1280×800, and runs axe-core
// on it at each size.
func shoot(t *testing.T, ctx context.Context, src, name string) {
	t.Helper()
	for _, size := range []struct {
		w, h int64
		tag  string
	}{{1920, 1080, "1920"}, {1280, 800, "1280"}} {
		browsertest.Do(t, ctx, chromedp.EmulateViewport(size.w, size.h))
		browsertest.Do(t, ctx, colorScheme("light"))
		screenshot(t, ctx, name+"-"+size.tag)
		checkPage(t, ctx, src, name+" at "+size.tag) // fails the test with each violation
		browsertest.Do(t, ctx, colorScheme("light"))
	}
}

// A class as a room lives it, in Chromium: a learner joins by the link and
// is asked their name; they raise a hand, which the instructor's help queue
// shows with Look beside it, and answers; every page says who stopped the
// controller and why, and the instructor's broadcast; the idle expiry
// comes with a banner and Stay; the instructor's projector shows the join
// URL and its QR code; ending the class sends the learner to the page of
// their ended lab, with the export taken then. Screenshots at 1920×1080
// and 1280×800, axe at 0 on every page.
func TestBrowserAClassThatSpeaks(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	e := needEnv(t).class(t, func(o *app.Options) {
		o.JoinCode = "blue-otter"
		// The expiry banner shows in the last quarter of a minute.
		o.SessionIdleTimeout, o.SessionNewIdleTimeout = time.Minute, time.Minute
	})
	instr := e.tab(t)
	browsertest.Do(t, instr, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#join-url")))
	joinURL := browsertest.Eval[string](t, instr, `document.querySelector("#join-url code").textContent`)
	if !strings.HasSuffix(joinURL, "/lab?join=blue-otter") || !strings.HasPrefix(joinURL, "http://127.0.0.1:") {
		t.Errorf("the join URL reads %q; want the full URL with the code", joinURL)
	}

	// The learner follows the link: their name is asked first.
	learner := e.tab(t)
	browsertest.Do(t, learner, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(joinURL),
		chromedp.WaitVisible(chromedp.CSS(`form.join input[name="name"]`)))
	shoot(t, learner, src, "class-join-name")
	browsertest.Do(t, learner, chromedp.SendKeys(`form.join input[name="name"]`, "Ana"), chromedp.Submit(`form.join input[name="name"]`),
		chromedp.WaitVisible(chromedp.CSS("#lab")))
	poll(t, learner, "the Raise hand form under the banner", `!!document.getElementById("standing-note")`)
	ns := browsertest.Eval[string](t, learner, `document.getElementById("lab").dataset.namespace`)

	// A raised hand, with a note.
	// A click, as a learner does: the form's own submit event runs the
	// script (a form.submit() would skip it).
	browsertest.Do(t, learner, chromedp.SendKeys("#standing-note", "my Database never turns Ready"), chromedp.Click(".standing-hand button"))
	poll(t, learner, "the hand raised", `!!document.querySelector(".standing-hand.raised")`)

	// The instructor speaks: a broadcast, and (as a stop would, without
	// stopping the controller the other tests share) who stopped it and why.
	browsertest.Do(t, instr, chromedp.Navigate(e.http.URL+"/instructor"), chromedp.WaitVisible(chromedp.CSS(`input[name="text"]`)),
		chromedp.SendKeys(`input[name="text"]`, "Open the finalizer lesson, section 2"), chromedp.Submit(`input[name="text"]`),
		chromedp.WaitVisible(chromedp.CSS("p.flash-ok")))
	poll(t, instr, "the help queue", `!!document.getElementById("help-list")`)
	e.server.Classroom().Halted("Ada", "watch what piles up while nothing reconciles")
	browsertest.Eventually(t, learner, `String(!!document.getElementById("class-halt") && !!document.getElementById("class-message"))`, "true")
	if got := browsertest.Eval[string](t, learner, `document.getElementById("class-halt").textContent`); !strings.Contains(got, "Ada stopped the controller for everyone") ||
		!strings.Contains(got, "watch what piles up") {
		t.Errorf("the learner's page says %q; want who stopped it and why", got)
	}
	shoot(t, learner, src, "class-learner-notices")

	// The help queue, with Look one click away, and the stop-all form
	// opened: it asks for a confirmation.
	browsertest.Do(t, instr, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#roster-h")))
	poll(t, instr, "the learner's hand in the queue", `!!document.getElementById("hand-`+ns+`")`)
	if got := browsertest.Eval[string](t, instr, `document.getElementById("hand-`+ns+`").textContent`); !strings.Contains(got, "Ana") || !strings.Contains(got, "never turns Ready") {
		t.Errorf("the help queue shows %q", got)
	}
	if href := browsertest.Eval[string](t, instr, `document.querySelector("#hand-`+ns+` a").getAttribute("href")`); href != "/instructor/look/"+ns {
		t.Errorf("the hand's first link is %q, want the look at %s", href, ns)
	}
	browsertest.Do(t, instr, chromedp.Click("#stop-all summary"), chromedp.WaitVisible(chromedp.CSS(`#stop-all input[name="confirm"]`)))
	shoot(t, instr, src, "class-instructor")
	browsertest.Do(t, instr, chromedp.Click(`#hand-`+ns+` form button`), chromedp.WaitVisible(chromedp.CSS("#roster-h")))
	browsertest.Eventually(t, learner, `String(document.querySelector(".standing-hand.raised")?.dataset.answered === "true")`, "true")

	// The projector's join screen.
	proj := e.tab(t)
	browsertest.Do(t, proj, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#join-screen-link")), chromedp.Click("#join-screen-link"),
		chromedp.WaitVisible(chromedp.CSS(".join-screen-qr")))
	browsertest.Eventually(t, proj, `String(document.querySelector(".join-screen-qr").naturalWidth > 0)`, "true")
	shoot(t, proj, src, "class-join-screen")

	// The idle expiry comes: the banner, then Stay.
	browsertest.Do(t, learner, chromedp.EmulateViewport(1280, 800))
	if _, err := chromedp.Run(learner, chromedp.Poll[chromedp.Void](`!!document.getElementById("standing-stay")`,
		chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		failedShot(t, learner)
		t.Fatalf("the expiry banner never came: %v", err)
	}
	shoot(t, learner, src, "class-expiry-banner")
	browsertest.Do(t, learner, chromedp.Click("#standing-stay"))
	browsertest.Eventually(t, learner, `String(!document.getElementById("standing-stay"))`, "true")

	// The class ends: the learner's page goes to their ended lab.
	browsertest.Do(t, instr, chromedp.Navigate(e.http.URL+"/instructor#class"), chromedp.Click("#class summary"),
		chromedp.Click(`#class input[name="confirm"]`), chromedp.Submit(`#class input[name="confirm"]`))
	// The page navigates by itself: an evaluation during the move fails,
	// and is asked again.
	for end := time.Now().Add(2 * time.Minute); ; {
		there, err := chromedp.Run(learner, chromedp.Evaluate[bool](`location.pathname === "/lab/ended" && !!document.getElementById("ended-export")`))
		if err == nil && there {
			break
		}
		if time.Now().After(end) {
			failedShot(t, learner)
			t.Fatalf("the learner's page did not go to their ended lab (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	shoot(t, learner, src, "class-ended")
	// The export kept reads back, on the learner's own cookie.
	browsertest.Do(t, learner, chromedp.Evaluate[chromedp.Void](`fetch("/lab/ended/export").then(r => r.text().then(b => { window.exportKept = r.ok && JSON.parse(b).namespace === "`+ns+`"; }))`))
	browsertest.Eventually(t, learner, `String(window.exportKept)`, "true")
}
