package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// A reloaded lab shows the cards as they are: the stream's catch-up replays
// the past (a Database that was created, Terminating, and is gone), and the
// timeline shows it, but no old state is drawn over the page's current
// cards. A state newer than the page is drawn as before.
func TestBrowserReloadDrawsNoPastStateOnTheCards(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	ns := e.openLab(t, ctx, "")
	old := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "bygone", Namespace: ns}}
	if err := e.client.Create(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "bygone Ready on its card", `document.querySelector("#db-bygone")?.textContent.includes("Ready True")`)
	if err := e.client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, deadline, "bygone gone", func() (bool, error) { return e.gone(t.Context(), old) })
	shows(t, ctx, "bygone's card removed", `!document.querySelector("#db-bygone")`)

	// Reload: the page has no card for bygone; watch the catch-up to its end.
	last := lastRowSeq(t, e.recorder.Export(ns))
	e.openLab(t, ctx, "")
	// The loop's caption says when the past is drawn ("caught up: N
	// steps…"), and the newest row is the last step recorded.
	poll(t, ctx, "the catch-up shown to its end", fmt.Sprintf(`document.getElementById("loop-caption").textContent.startsWith("caught up: ") && %s >= %d`, newestSeq, last))
	showsNow(t, ctx, "bygone's past on the timeline", `[...document.querySelectorAll("#log .row .db-name")].some(b => b.textContent === "bygone")`)
	// A card drawn from the past would have taken the place of the page's
	// "No Databases yet" (cards.js removes it), and a deleted one stays
	// marked Deleted for seconds.
	showsNow(t, ctx, "no past state drawn on a card", `!document.querySelector("#db-bygone") && document.querySelector("#databases .empty")?.textContent.startsWith("No Databases yet") === true`)

	if err := e.client.Create(t.Context(), &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "a new Database's card", `!!document.querySelector("#db-fresh") && !document.querySelector("#databases .empty")`)
}

// lastRowSeq is the seq of the export's last message that the timeline
// draws as a row's step (an event, or a step of a reconcile), which the
// row then carries (data-seq). A state's seq is on no row.
func lastRowSeq(t *testing.T, e trace.Export) uint64 {
	t.Helper()
	var last uint64
	for _, raw := range e.Messages {
		var m struct {
			Type        string `json:"type"`
			Seq         uint64 `json:"seq"`
			ReconcileID string `json:"reconcileID"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "event" || m.ReconcileID != "" {
			last = max(last, m.Seq)
		}
	}
	if last == 0 {
		t.Fatal("the export holds no step")
	}
	return last
}
