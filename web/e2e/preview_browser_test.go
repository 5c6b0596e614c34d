package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/controller"
)

// TestBrowserPreviewFollowsTheFormInPlace: the create form's YAML preview
// follows what the learner types, shows the answer to the latest question
// only, and never moves the cards under it (right after an action the page
// holds the acted card's top in view with scroll anchoring off, so a
// preview that shrank then pushed the card's head off screen).
func TestBrowserPreviewFollowsTheFormInPlace(t *testing.T) {
	t.Parallel()
	ctx, _ := labAt1280(t, "")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("details.create").open = true`)); err != nil {
		t.Fatal(err)
	}
	const preview = `document.getElementById("preview").textContent`
	// Where the Databases start, in the page.
	const listTop = `String(Math.round(document.getElementById("databases").getBoundingClientRect().top + scrollY))`
	if got := evalString(t, ctx, preview); !strings.Contains(got, "name: orders") {
		t.Fatalf("the first preview is %q, want the form's example, orders", got)
	}
	top := evalString(t, ctx, listTop)

	// typeIn sets a field as typing does: its value, then an input event.
	typeIn := func(name, value string) {
		t.Helper()
		js := fmt.Sprintf(`(() => { const el = document.getElementById("create-form").elements[%q]; el.value = %q;
			el.dispatchEvent(new Event("input", {bubbles: true})); })()`, name, value)
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		what, field, value, want string
		shot                     string // a screenshot's name, when the step is worth one
	}{
		{"a name typed", "name", "shop", "name: shop", ""},
		{"a version typed", "version", "16", "version: \"16\"", ""},
		{"a pitfall chosen (the longest the preview gets)", "pitfall", controller.PitfallStatusThrash, controller.PitfallAnnotation + ": " + controller.PitfallStatusThrash, "preview-longest-1280x800"},
		{"the name emptied, as after a create", "name", "", "# ", "preview-emptied-1280x800"},
	} {
		typeIn(step.field, step.value)
		poll(t, ctx, "the preview after "+step.what, fmt.Sprintf(`%s.includes(%q)`, preview, step.want))
		if got := evalString(t, ctx, listTop); got != top {
			t.Errorf("after %s the Databases start at %s px, before at %s: the preview moved them\npreview:\n%s", step.what, got, top, evalString(t, ctx, preview))
		}
		if step.shot != "" {
			if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("preview").scrollIntoView({block: "center"})`)); err != nil {
				t.Fatal(err)
			}
			viewShot(t, ctx, step.shot)
		}
	}

	// A slow answer to an older question does not replace a newer one's:
	// the browser holds the answer for "slow" until "fast" is shown.
	paused := make(chan fetch.RequestID, 1)
	if err := chromedp.Listen(ctx, func(ev any) {
		if ev, ok := ev.(*fetch.EventRequestPaused); ok {
			select {
			case paused <- ev.RequestID:
			default: // one is all the test holds
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, cdpCall(fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/lab/preview?name=slow*"}}})); err != nil {
		t.Fatal(err)
	}
	typeIn("name", "slow")
	var held fetch.RequestID
	select {
	case held = <-paused:
	case <-time.After(deadline):
		t.Fatal("the preview never asked about slow")
	}
	typeIn("name", "fast")
	poll(t, ctx, "the preview of fast", preview+`.includes("name: fast")`)
	if err := chromedp.Do(ctx, cdpCall(fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: held})); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the answer about slow to arrive", `performance.getEntriesByType("resource").some(r => r.name.includes("preview?name=slow") && r.responseEnd > 0)`)
	// Two frames for its text() to resolve and be drawn, were it drawn.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, ctx, preview); !strings.Contains(got, "name: fast") {
		t.Errorf("after the late answer about slow the preview shows:\n%s\nwant fast's, the latest question", got)
	}

	// On a phone, what is wrong is read whole: the sentence wraps inside the
	// preview rather than hiding its end behind a sideways scroll. YAML keeps
	// its lines, so the wrapping goes once the form is right again.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	typeIn("name", "Not_A_Name")
	poll(t, ctx, "the preview saying what is wrong with the name", preview+`.startsWith("# name")`)
	const fits = `(() => { const pre = document.getElementById("preview");
		return String(pre.scrollWidth <= pre.clientWidth && document.documentElement.scrollWidth <= innerWidth); })()`
	if evalString(t, ctx, fits) != "true" {
		t.Errorf("at 390 px the preview's error needs a sideways scroll (preview %s of %s px, page %s px):\n%s",
			evalString(t, ctx, `String(document.getElementById("preview").scrollWidth)`),
			evalString(t, ctx, `String(document.getElementById("preview").clientWidth)`),
			evalString(t, ctx, `String(document.documentElement.scrollWidth)`), evalString(t, ctx, preview))
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("preview").scrollIntoView({block: "center"})`)); err != nil {
		t.Fatal(err)
	}
	viewShot(t, ctx, "preview-error-390px")
	typeIn("name", "shop")
	poll(t, ctx, "the preview of shop again", preview+`.includes("name: shop")`)
	if evalString(t, ctx, `String(document.getElementById("preview").classList.contains("error"))`) == "true" {
		t.Error("the preview shows YAML again but is still styled as an error (its lines would wrap)")
	}

	// Preview YAML, pressed, opens in place: no page load, the form open
	// as the learner had it, its preview on screen.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.samePage = true; document.getElementById("preview").textContent = ""`)); err != nil {
		t.Fatal(err)
	}
	typeIn("replicas", "3")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	press(t, ctx, `#create-form button[name="preview"]`)
	poll(t, ctx, "the pressed preview of three replicas", preview+`.includes("replicas: 3")`)
	poll(t, ctx, "the preview on screen", seen(q("#preview")))
	if got := evalString(t, ctx, `String(window.samePage === true && document.querySelector("details.create").open && !location.search.includes("preview"))`); got != "true" {
		t.Errorf("Preview YAML reloaded the page or closed its form (same page, form open, no ?preview: %s)", got)
	}
	viewShot(t, ctx, "preview-pressed-390px")
}
