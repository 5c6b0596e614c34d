package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// A learner's own finalizer (evil.example/never) holds a Database, so the
// instructor's Reset fails after its wait. The roster then offers to
// remove the remaining finalizers; pressed in Chromium (a plain form, as
// the page works without script), it answers 303, and the Database goes.
func TestBrowserRosterRemovesForeignFinalizers(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	_, ns := e.learner(t)
	ctx := t.Context()
	evil := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "evil", Finalizers: []string{"evil.example/never"}},
		Spec: v1alpha1.DatabaseSpec{Engine: "postgres", Replicas: 1}}
	if err := e.client.Create(ctx, evil); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, deadline, "evil with the controller's finalizer, in the lab's state", func() (bool, error) {
		dbs, err := e.app.States().Databases(ctx, ns)
		return err == nil && len(dbs) == 1 && slices.Contains(dbs[0].Finalizers, controller.Finalizer), err
	})
	ic := e.instructorClient(t)
	resp, err := ic.Post(e.http.URL+"/instructor/learners/"+ns+"/reset", "application/x-www-form-urlencoded", nil)
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reset = %v %v, want 303", resp, err)
	}
	if state, text := waitReset(t, e, ic, ns); state != "failed" || !strings.Contains(text, "evil.example/never") {
		t.Fatalf("the reset's outcome = %s %q, want failed naming the learner's finalizer", state, text)
	}

	instr := e.tab(t)
	if err := chromedp.Do(instr, chromedp.Navigate(e.http.URL+"/instructor?token="+url.QueryEscape(testInstructorToken)),
		chromedp.WaitReady(chromedp.CSS("#unblock-"+ns)), chromedp.ScrollIntoView(chromedp.CSS("#unblock-"+ns)), chromedp.WaitVisible(chromedp.CSS("#unblock-"+ns))); err != nil {
		t.Fatal(err)
	}
	shows(t, instr, "the way out beside the failed reset", `document.getElementById("unblock-`+ns+`").textContent === "Remove the remaining finalizers (skips snapshots not yet taken)"
		&& document.getElementById("reset-status-`+ns+`").textContent.includes("evil.example/never")`, "main")
	screenshot(t, instr, "68-roster-remove-finalizers")
	axeCheck(t, instr, "/instructor (reset failed, finalizers left)")
	if err := chromedp.Do(instr, pressKey(chromedp.CSS("#unblock-"+ns)), chromedp.WaitVisible(chromedp.CSS(".flash-ok"))); err != nil {
		t.Fatal(err)
	}
	shows(t, instr, "the removal started", `document.querySelector(".flash-ok").textContent.includes("Removing the remaining finalizers")`, "main")
	// The Reset's delete let oplab's finalizer take the snapshot before the
	// learner's held the Database: the row must not say it went without.
	if state, text := waitReset(t, e, ic, ns); state != "done" || !strings.Contains(text, "1 Database deleted; its final snapshot had been taken before") {
		t.Fatalf("the removal's outcome = %s %q, want done, the snapshot taken before", state, text)
	}
	var snap corev1.ConfigMap
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "evil-final-snapshot"}, &snap); err != nil {
		t.Errorf("the snapshot the row speaks of: %v", err)
	}
	var db v1alpha1.Database
	if err := e.client.Get(ctx, client.ObjectKeyFromObject(evil), &db); !apierrors.IsNotFound(err) {
		t.Errorf("evil after the finalizers were removed: %v (finalizers %v), want it gone", err, db.Finalizers)
	}
	// The roster's script asks for JSON: 202, as for Reset.
	req, _ := http.NewRequest("POST", e.http.URL+"/instructor/learners/"+ns+"/finalizers/remove", nil)
	req.Header.Set("Accept", "application/json")
	resp, err = ic.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Errorf("remove finalizers as JSON = %v %v, want 202", resp, err)
	}
	waitReset(t, e, ic, ns)
}
