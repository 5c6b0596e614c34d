package e2e

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserQueueAsAPicture: beside the timeline, the namespace's share of
// the work queue is drawn from the stream's queue samples: a create's burst
// of events coalesced into fewer reconciles, and a non-idempotent create's
// errors retried with backoff, in words, in the picture (a red dot a
// retry) and as a table for screen readers.
func TestBrowserQueueAsAPicture(t *testing.T) {
	t.Parallel()
	ctx, _ := startScenario(t, "non-idempotent-create", "Created Database twice")
	poll(t, ctx, "the picture shown", `!document.getElementById("queue").hidden`)
	const caption = `document.getElementById("queue-caption").textContent`
	defer func() {
		if t.Failed() {
			t.Logf("the caption: %s", evalString(t, ctx, caption))
		}
	}()
	poll(t, ctx, "events coalesced into fewer reconciles, and errors retried", `(() => { const c = `+caption+`;
		const m = /(\d+) events in → (\d+) adds? to the queue → (\d+) reconciles?, (\d+) events? coalesced · (\d+) errors? retried with backoff/.exec(c);
		return !!m && +m[4] > 0 && +m[5] >= 3; })()`)
	poll(t, ctx, "red retry dots and reconcile bars drawn", `document.querySelectorAll("#queue-svg circle.retry").length >= 2 && document.querySelectorAll("#queue-svg rect.rec").length >= 2`)
	// The numbers, second by second, for screen readers and anyone.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("details.queue-table").open = true`)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "a table row with an error", `[...document.querySelectorAll("#queue-rows tr")].some(tr => tr.cells.length === 10 && +tr.cells[5].textContent > 0)`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("queue").scrollIntoView()`)); err != nil {
		t.Fatal(err)
	}
	viewShot(t, ctx, "queue-01-backoff-1280x800")
	axeCheck(t, ctx, "lab with the queue's picture and its table")
	// Switched off, the loop ends: the picture's minute shows the last
	// error and no more.
	press(t, ctx, `.scenario-next form[action="/lab/databases/twice/pitfall"] button`)
	poll(t, ctx, "a reconcile ending done after the switch", `[...document.querySelectorAll('#rows li.row[data-db="twice"] .pill.result')].some(p => p.textContent.startsWith("done"))`)
}

// TestBrowserKubectlInThePage: the lab's terminal, in Chromium at 1280×800
// and 390×844: a command's output as kubectl prints it, a Database applied
// from the editor appearing as a card, a refused command saying why, a
// watch stopped with Stop; axe at 0 both sizes.
func TestBrowserKubectlInThePage(t *testing.T) {
	t.Parallel()
	ctx, ns := labAt1280(t, "")
	out := `document.getElementById("term-out").textContent`
	runCmd := func(line string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const l = document.getElementById("term-line");
			l.value = %q; document.getElementById("term-run").click(); })()`, line))); err != nil {
			t.Fatal(err)
		}
	}
	idle := `document.getElementById("term-run").disabled === false`
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("terminal").open = true; document.querySelector(".term-editor").open = true`)); err != nil {
		t.Fatal(err)
	}
	runCmd("kubectl get databases")
	poll(t, ctx, "kubectl's answer", out+`.includes("No resources found in `+ns+` namespace.") && `+idle)
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#term-stdin"), "apiVersion: db.oplab.dev/v1alpha1\nkind: Database\nmetadata:\n  name: termdb\nspec:\n  engine: postgres\n  replicas: 1\n")); err != nil {
		t.Fatal(err)
	}
	runCmd("kubectl apply -f -")
	poll(t, ctx, "the apply's answer", out+`.includes("database.db.oplab.dev/termdb created") && `+idle)
	poll(t, ctx, "termdb's card, drawn from the stream", `document.getElementById("db-termdb") !== null`)
	runCmd("kubectl exec -it termdb-0 -- sh")
	poll(t, ctx, "the refusal, saying why", `[...document.querySelectorAll("#term-out .term-refused")].some(s => s.textContent.includes("this terminal starts none")) && `+idle)
	runCmd("kubectl get databases -w")
	poll(t, ctx, "the watch running", `document.getElementById("term-stop").disabled === false && `+out+`.includes("termdb")`)
	press(t, ctx, "#term-stop")
	poll(t, ctx, "the watch stopped", idle+` && `+out+`.includes("[stopped]")`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("terminal").scrollIntoView()`)); err != nil {
		t.Fatal(err)
	}
	viewShot(t, ctx, "terminal-01-1280x800")
	axeCheck(t, ctx, "lab with kubectl in the page, 1280×800")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	runCmd("kubectl auth can-i delete pods")
	poll(t, ctx, "can-i's answer", out+`.endsWith("yes\n") && `+idle)
	if wide := evalInt(t, ctx, `String(document.documentElement.scrollWidth)`); wide > 390 {
		what, _ := chromedp.Run(ctx, chromedp.Evaluate[string](overflowing))
		t.Errorf("the lab with the terminal at 390 px is %d px wide: %s", wide, what)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("terminal").scrollIntoView()`)); err != nil {
		t.Fatal(err)
	}
	viewShot(t, ctx, "terminal-02-390x844")
	axeCheck(t, ctx, "lab with kubectl in the page, 390×844")
}
