package web

import (
	"testing"

	"github.com/chromedp/chromedp"
)

func TestZZShots(t *testing.T) {
	e := needEnv(t)
	ctx := e.tab(t)
	for _, id := range []string{"died-mid-deletion", "drift-repair", "never-ready", "status-storm", "level-triggering"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/challenges/"+id), chromedp.WaitVisible(chromedp.CSS("#start-form"))); err != nil {
			t.Fatal(err)
		}
		if id == "never-ready" || id == "status-storm" {
			if err := chromedp.Do(ctx,
				chromedp.Click(chromedp.CSS(`#start-form input[name="confirm"]`)),
				chromedp.Click(chromedp.CSS(`#start-form button`)),
			); err != nil {
				t.Fatal(err)
			}
			shows(t, ctx, "the Start message", `document.getElementById("start-message").textContent.startsWith("Started")`, "#start")
			poll(t, ctx, "a detail", `[...document.querySelectorAll(".task")].some(e => e.textContent.includes("spec") || e.textContent.includes("Databases"))`)
		}
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "h5-"+id)
	}
}
