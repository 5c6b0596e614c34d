package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserPodsSwitch creates one Database per pods mode in the lab, turns
// the mode on with the card's "Pods" switch, and waits until the card's
// conditions say what the fake node's Pods now do: a slow start keeps
// Progressing True naming the Pod not ready yet, then turns Ready; an image
// that cannot be pulled and a crash loop turn Degraded True with the
// kubelet's waiting reason. Each card is saved as a screenshot.
func TestBrowserPodsSwitch(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	// Tall enough that a whole card fits in the viewport, where an element
	// screenshot is taken.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1800), chromedp.Navigate(e.http.URL+"/lab"), chromedp.WaitVisible(chromedp.CSS("#create-form"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the stream to open", streamLive)

	modes := []struct {
		db, mode string
		// typ, reasons and text are the condition the card must show.
		typ, reasons, text string
		// pod is a regular expression the Pod's line in the owner tree matches.
		pod string
	}{
		{"slow", "slow-start", "Progressing", "WaitingForReplicas", "is Running, not ready yet", `Running, not ready$`},
		{"pull", "image-pull-error", "Degraded", "ErrImagePull ImagePullBackOff", "failed to pull", `Pending, not ready: (ErrImagePull|ImagePullBackOff)`},
		{"crash", "crash-loop", "Degraded", "CrashLoopBackOff", "restarted", `Running, not ready(: CrashLoopBackOff)?, \d+ restarts?`},
	}
	for _, m := range modes {
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="name"]`), m.db),
			chromedp.SetValue(chromedp.CSS(`#create-form input[name="replicas"]`), "1"),
			chromedp.Click(chromedp.CSS(`#create-form button.primary`)),
		); err != nil {
			t.Fatal(err)
		}
		// Without a mode the fake node makes the Pod Ready at once.
		poll(t, ctx, "Ready=True on "+m.db, fmt.Sprintf(`document.querySelector("#db-%s .db-head .pill.ok")?.textContent === "Ready True"`, m.db))
	}

	for _, m := range modes {
		t.Run(m.mode, func(t *testing.T) {
			form := fmt.Sprintf(`#db-%s form[action$="/pods"]`, m.db)
			if err := chromedp.Do(ctx,
				chromedp.SetValue(chromedp.CSS(form+` select[name="pods"]`), m.mode),
				chromedp.Click(chromedp.CSS(form+` button`)),
			); err != nil {
				t.Fatal(err)
			}
			poll(t, ctx, "the pods pill", fmt.Sprintf(`[...document.querySelectorAll("#db-%s .db-head .pill")].some(p => p.textContent === "pods: %s")`, m.db, m.mode))
			poll(t, ctx, m.typ+" "+m.reasons, conditionShown(m.db, m.typ, m.reasons, m.text))
			poll(t, ctx, "the Pod's state in the owner tree", fmt.Sprintf(`[...document.querySelectorAll("#db-%s .tree li")].some(li =>
				li.querySelector(":scope > .kind")?.textContent === "Pod" && /%s/.test(li.textContent.trim()))`, m.db, m.pod))
			poll(t, ctx, "Ready=False on "+m.db, fmt.Sprintf(`document.querySelector("#db-%s .db-head .pill")?.textContent === "Ready False"`, m.db))
			cardScreenshot(t, ctx, m.db, "pods-"+m.mode)
		})
	}

	t.Run("slow-start turns Ready", func(t *testing.T) {
		poll(t, ctx, "Ready=True on slow", `document.querySelector("#db-slow .db-head .pill.ok")?.textContent === "Ready True"`)
		poll(t, ctx, "Progressing False", conditionShown("slow", "Progressing", "Reconciled", ""))
		cardScreenshot(t, ctx, "slow", "pods-slow-start-ready")
	})

	t.Run("axe", func(t *testing.T) {
		if checkPage(t, ctx, axeSource(t), "lab with pods modes") == 0 {
			t.Error("axe checked nothing")
		}
	})
}

// conditionShown is a JavaScript test that the card of db shows condition
// typ with one of the space-separated reasons and a message containing text.
func conditionShown(db, typ, reasons, text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#db-%s table.conditions tbody tr")].some(tr => {
		const td = tr.querySelectorAll("td");
		return td.length === 6 && td[0].textContent === %q && %q.split(" ").includes(td[2].textContent) && td[3].textContent.includes(%q);
	})`, db, typ, reasons, text)
}

// cardScreenshot saves the card of db alone as NAME.png in the artifacts dir.
func cardScreenshot(t *testing.T, ctx context.Context, db, name string) {
	t.Helper()
	card := chromedp.CSS("#db-" + db)
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(card)); err != nil {
		t.Errorf("scroll to card %s: %v", db, err)
		return
	}
	regionShot(t, ctx, name, "#db-"+db)
}
