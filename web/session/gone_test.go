package session_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/session"
)

// startGuard runs a Guard on m until the test ends; gone receives every
// namespace it made again.
func startGuard(t *testing.T, ctx context.Context, m *session.Manager, grace time.Duration) <-chan string {
	t.Helper()
	gone := make(chan string, 4)
	g, err := session.NewGuard(m, shared.Get(t).Config(), func(ns string) { gone <- ns })
	if err != nil {
		t.Fatal(err)
	}
	g.Grace = grace
	m.SetGuard(g)
	go g.Run(ctx)
	return gone
}

// TestDeletedNamespaceIsMadeAgain deletes a learner's namespace as an
// administrator would, behind oplab's back: the Guard notices, makes it
// again with its quota, tells the learner's timeline and their next page.
func TestDeletedNamespaceIsMadeAgain(t *testing.T) {
	// Its own Manager and namespace: it may run beside the others that
	// own theirs (parallel tests start once the serial ones are done).
	t.Parallel()
	c := kubeClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := newManager(t, ctx, c, time.Now)
	gone := startGuard(t, ctx, m, time.Minute)
	s, cookie := begin(t, m)
	deleteLater(t, c, s.Namespace)
	var before corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: s.Namespace}, &before); err != nil {
		t.Fatal(err)
	}

	deleted := time.Now()
	if err := c.Delete(ctx, &before); err != nil {
		t.Fatal(err)
	}
	select {
	case ns := <-gone:
		if ns != s.Namespace {
			t.Fatalf("made %s again, want %s", ns, s.Namespace)
		}
		t.Logf("figure: namespace deleted behind oplab's back made again and announced %s after the delete", time.Since(deleted).Round(time.Millisecond))
	case <-time.After(2 * time.Minute):
		t.Fatal("the deleted namespace was not made again within 2 minutes")
	}
	var after corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: s.Namespace}, &after); err != nil {
		t.Fatalf("the namespace is not there again: %v", err)
	}
	if after.UID == before.UID || after.DeletionTimestamp != nil {
		t.Errorf("the namespace is the old one (uid %s, deleting %v), want a new one", after.UID, after.DeletionTimestamp)
	}
	if after.Annotations[labns.CookieHashAnnotation] != before.Annotations[labns.CookieHashAnnotation] {
		t.Errorf("the new namespace does not record the session's cookie hash")
	}
	var q corev1.ResourceQuota
	if err := c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: labns.QuotaName}, &q); err != nil {
		t.Errorf("the new namespace has no quota: %v", err)
	}
	if got, err := m.Lookup(withCookie(cookie)); err != nil || got.Namespace != s.Namespace {
		t.Errorf("the session after the delete: %v, %v; want it to keep %s", got, err, s.Namespace)
	}
	f := m.TakeFlash(withCookie(cookie))
	if f == nil || f.Message != session.GoneMessage {
		t.Errorf("the learner's next page says %+v, want %q", f, session.GoneMessage)
	}
}

// TestEndedSessionLeavesNoTerminatingNamespace ends a session whose
// namespace holds an object with a finalizer nobody removes (a learner's
// evil.example/never): after the Guard's grace the finalizer is removed
// and the namespace goes, rather than staying Terminating for ever.
func TestEndedSessionLeavesNoTerminatingNamespace(t *testing.T) {
	// Its own Manager and namespace: it may run beside the others that
	// own theirs (parallel tests start once the serial ones are done).
	t.Parallel()
	c := kubeClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	now := time.Now()
	clock := func() time.Time { return now }
	m := newManager(t, ctx, c, func() time.Time { return clock() })
	startGuard(t, ctx, m, 2*time.Second)
	s, _ := begin(t, m)
	deleteLater(t, c, s.Namespace)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: s.Namespace, Finalizers: []string{"evil.example/never"}}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// A learner's kubectl may patch a StatefulSet's metadata (the owner-gc
	// challenge), finalizers included.
	labels := map[string]string{"app": "held"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "held-sts", Namespace: s.Namespace, Finalizers: []string{"evil.example/never"}},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Replicas: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}
	if err := c.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	db := database(s.Namespace, "held-db")
	db.Finalizers = []string{"evil.example/never"}
	if err := c.Create(ctx, db); err != nil {
		t.Fatal(err)
	}

	// Two hours later the session is idle and Sweep ends it.
	now = now.Add(3 * time.Hour)
	if n, err := m.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 ended", n, err)
	}
	ended := time.Now()
	deadline := time.After(2 * time.Minute)
	for {
		var ns corev1.Namespace
		err := c.Get(ctx, client.ObjectKey{Name: s.Namespace}, &ns)
		if apierrors.IsNotFound(err) {
			t.Logf("figure: the ended session's namespace, held by three foreign finalizers, was gone %s after Sweep (grace 2s)", time.Since(ended).Round(time.Millisecond))
			return
		}
		select {
		case <-deadline:
			t.Fatalf("the ended session's namespace is still there after 2 minutes (%v, phase %s)", err, ns.Status.Phase)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
