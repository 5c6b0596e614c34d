package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/web"
)

// Looking over a learner's shoulder: from the roster the instructor opens
// a learner's lab, live and read-only; nothing on it acts on the learner's
// namespace, the server refuses writes there, and a learner cannot look at
// another learner's lab.
func TestBrowserLookOverALearnersShoulder(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	ana, other, teacher := e.tab(t), e.tab(t), e.tab(t)
	ns := e.openLab(t, ana, "")
	saveName(t, ana, "Ana")
	createInTab(t, ana, "orders")
	poll(t, ana, "orders Ready", `document.querySelector("#db-orders .db-head .pill.ok")?.textContent === "Ready True"`)

	// Another learner cannot look, at the page or its stream.
	e.openLab(t, other, "")
	for _, path := range []string{"/instructor/look/" + ns, "/instructor/look/" + ns + "/ws"} {
		code, err := chromedp.Run(other, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q, {credentials: "same-origin"}).then(r => r.status)`, path), chromedp.EvalAwaitPromise))
		if err != nil || code != 401 {
			t.Errorf("another learner's GET %s = %d (%v), want 401", path, code, err)
		}
	}

	// The instructor opens Ana's lab from her roster row.
	if err := chromedp.Do(teacher, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitVisible(chromedp.CSS("#roster-live"))); err != nil {
		t.Fatal(err)
	}
	poll(t, teacher, "Ana's row with its Look link", fmt.Sprintf(`!!document.querySelector('#learner-%s a.look-link[href="/instructor/look/%s"]')`, ns, ns))
	if err := chromedp.Do(teacher, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector('#learner-%s a.look-link').click()`, ns)),
		chromedp.WaitVisible(chromedp.CSS("#look-banner"))); err != nil {
		t.Fatal(err)
	}
	banner, _ := chromedp.Run(teacher, chromedp.Evaluate[string](`document.getElementById("look-banner").textContent`))
	if want := fmt.Sprintf("Looking at Ana's lab (%s), read-only.", ns); !strings.Contains(banner, want) {
		t.Errorf("the look banner says %q, want %q", banner, want)
	}
	poll(t, teacher, "the look's stream open", streamLive)
	poll(t, teacher, "Ana's card and timeline", `document.querySelector("#db-orders .db-head .pill.ok")?.textContent === "Ready True" && document.querySelectorAll("#rows > li").length > 0 && document.getElementById("objects-h").textContent === "Ana's Databases (read-only)"`)
	// Nothing on the page acts: no form or player button takes part in it.
	if n, _ := chromedp.Run(teacher, chromedp.Evaluate[int](`[...document.querySelectorAll("#lab form, #lab .player > button, #pause-why")].filter(f => f.getClientRects().length > 0).length`)); n != 0 {
		t.Errorf("%d forms, player buttons or words on pausing your namespace are shown on the read-only look", n)
	}
	// Live: what Ana does next shows up.
	createInTab(t, ana, "cart")
	poll(t, teacher, "Ana's new Database, live", `!!document.getElementById("db-cart")`)
	if err := chromedp.Do(teacher, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, teacher, "72-instructor-look-over-shoulder")
	axeCheck(t, teacher, "/instructor/look (read-only)")

	// Writes from the instructor's browser do not reach Ana's namespace: the
	// look itself takes no POST, and the lab's write routes act on the
	// caller's own session, never on a namespace the request names.
	for _, path := range []string{"/instructor/look/" + ns, "/lab/databases/orders/delete", "/lab/databases/orders/delete?namespace=" + ns} {
		code, err := chromedp.Run(teacher, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q, {method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/x-www-form-urlencoded", Accept: "application/json"}, body: "namespace=%s"}).then(r => r.status)`, path, ns), chromedp.EvalAwaitPromise))
		if err != nil || code < 400 {
			t.Errorf("the instructor's POST %s = %d (%v), want a refusal", path, code, err)
		}
	}
	var db v1alpha1.Database
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "orders"}, &db); err != nil || db.DeletionTimestamp != nil {
		t.Errorf("Ana's orders after the instructor's POSTs: %v, deleting %v; want it there, untouched", err, db.DeletionTimestamp)
	}

	// The look's streams are capped as /ws is: the page holds one, and of
	// as many more as the cap, the last is refused.
	opened, err := chromedp.Run(teacher, chromedp.Evaluate[string](fmt.Sprintf(`Promise.all(Array.from({length: %d}, () => new Promise((done) => {
		const ws = new WebSocket(location.origin.replace("http", "ws") + "/instructor/look/%s/ws");
		ws.onopen = () => done("open"); ws.onerror = () => done("refused");
	}))).then((r) => r.filter((x) => x === "open").length + " open, " + r.filter((x) => x === "refused").length + " refused")`, web.MaxStreamsPerSession, ns), chromedp.EvalAwaitPromise))
	if want := fmt.Sprintf("%d open, 1 refused", web.MaxStreamsPerSession-1); err != nil || opened != want {
		t.Errorf("%d more look streams: %s (%v); want %s", web.MaxStreamsPerSession, opened, err, want)
	}
}
