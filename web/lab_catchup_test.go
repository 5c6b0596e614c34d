package web_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons/judge"
)

// A reloaded lab shows the cards as they are: the stream's catch-up replays
// the past (a Database that was created, Terminating, and is gone), and the
// timeline shows it, but no old state is drawn over the page's current
// cards. A state newer than the page is drawn as before.
func TestBrowserReloadDrawsNoPastStateOnTheCards(t *testing.T) {
	e := needEnv(t)
	ctx := e.tab(t)
	ns := openLab(t, ctx, "")
	old := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "bygone", Namespace: ns}}
	if err := e.client.Create(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "bygone Ready on its card", `document.querySelector("#db-bygone")?.textContent.includes("Ready True")`)
	if err := e.client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bygone gone", func() (bool, error) { return e.gone(t.Context(), old) })
	shows(t, ctx, "bygone's card removed", `!document.querySelector("#db-bygone")`)

	// Reload: the page has no card for bygone; watch the catch-up to its end.
	last := judge.LastSeq(e.recorder.Export(ns))
	openLab(t, ctx, "")
	poll(t, ctx, "the catch-up shown to its end", fmt.Sprintf(`Number(document.getElementById("lab").dataset.shownSeq || 0) >= %d`, last))
	showsNow(t, ctx, "bygone's past on the timeline", `[...document.querySelectorAll("#log .row .db-name")].some(b => b.textContent === "bygone")`)
	showsNow(t, ctx, "no past state drawn on a card", `!document.querySelector("#db-bygone") && (document.getElementById("lab").dataset.cardsDrawn || "0") === "0"`)

	if err := e.client.Create(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "a new Database's card", `!!document.querySelector("#db-fresh") && Number(document.getElementById("lab").dataset.cardsDrawn) > 0`)
}
