package session_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/session"
)

// TestInstancesKeepToTheirOwnNamespaces is issue 12 §3: two oplab
// instances in one cluster, with prefixes chosen so that one's names start
// with the other's (ka-… and ka-b-…): each one's restore, reclaim and
// deletes see only its own namespaces.
func TestInstancesKeepToTheirOwnNamespaces(t *testing.T) {
	c := kubeClient(t)
	// Three hours on, every namespace made now is older than the idle
	// timeout: reclaim deletes whatever it takes for its own orphans.
	var skew atomic.Int64
	skew.Store(int64(3 * time.Hour))
	later := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	manager := func(ctx context.Context, prefix string) *session.Manager {
		t.Helper()
		m, err := session.New(ctx, session.Options{
			Namespaces:      labns.KubeNamespaces{Client: c, MaxDatabases: 5, Prefix: prefix},
			NamespacePrefix: prefix, IdleTimeout: time.Hour, Now: later,
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	alive := func(name string) bool {
		var ns corev1.Namespace
		err := c.Get(t.Context(), types.NamespacedName{Name: name}, &ns)
		return err == nil && ns.DeletionTimestamp == nil
	}

	a, cookieA := begin(t, manager(t.Context(), "ka-"))
	deleteLater(t, c, a.Namespace)
	b, cookieB := begin(t, manager(t.Context(), "ka-b-"))
	deleteLater(t, c, b.Namespace)
	if !strings.HasPrefix(a.Namespace, "ka-") || !strings.HasPrefix(b.Namespace, "ka-b-") {
		t.Fatalf("namespaces %s, %s; want them named with their prefixes", a.Namespace, b.Namespace)
	}
	for name, instance := range map[string]string{a.Namespace: "ka", b.Namespace: "ka-b"} {
		var ns corev1.Namespace
		if err := c.Get(t.Context(), types.NamespacedName{Name: name}, &ns); err != nil {
			t.Fatal(err)
		}
		if ns.Labels[labns.InstanceLabel] != instance || ns.Labels[labns.LabLabel] != "true" {
			t.Errorf("namespace %s labels %v; want %s=%s beside %s=true", name, ns.Labels, labns.InstanceLabel, instance, labns.LabLabel)
		}
	}

	// A delete by name of the other instance's namespace is refused.
	err := labns.KubeNamespaces{Client: c, Prefix: "ka-"}.Delete(t.Context(), b.Namespace)
	if err == nil || !strings.Contains(err.Error(), "not a lab namespace of this oplab") || !alive(b.Namespace) {
		t.Errorf("instance ka- deleting %s: %v, alive %v; want a refusal and the namespace kept", b.Namespace, err, alive(b.Namespace))
	}

	// Each restarted instance restores its own sessions, not the other's
	// (whose cookie hashes it could read), and its reclaim spares the
	// other's namespaces, which it owns no session of.
	for _, tc := range []struct {
		prefix                 string
		own, other             session.Session
		ownCookie, otherCookie *http.Cookie
	}{
		{"ka-", a, b, cookieA, cookieB},
		{"ka-b-", b, a, cookieB, cookieA},
	} {
		restarted := manager(t.Context(), tc.prefix)
		if _, err := restarted.Restore(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := restarted.Lookup(withCookie(tc.otherCookie)); !errors.Is(err, session.ErrNoSession) {
			t.Errorf("instance %s recognised the other instance's cookie (%v); want ErrNoSession", tc.prefix, err)
		}
		if got, err := restarted.Lookup(withCookie(tc.ownCookie)); err != nil || got != tc.own {
			t.Errorf("instance %s restored %v, %v; want its own session %v", tc.prefix, got, err, tc.own)
		}
		if n, err := restarted.Reclaim(t.Context()); err != nil || n != 0 {
			t.Errorf("instance %s, restored, reclaimed %d (%v); want 0: it owns its one namespace, and the other's are not its", tc.prefix, n, err)
		}
		if !alive(tc.own.Namespace) || !alive(tc.other.Namespace) {
			t.Errorf("after instance %s's restore and reclaim: %s alive %v, %s alive %v; want both kept", tc.prefix, tc.own.Namespace, alive(tc.own.Namespace), tc.other.Namespace, alive(tc.other.Namespace))
		}
	}

	// An instance that restored nothing sees its own namespace as an
	// orphan and deletes it, and still spares the other's.
	fresh := manager(t.Context(), "ka-")
	if n, err := fresh.Reclaim(t.Context()); err != nil || n != 1 {
		t.Errorf("fresh instance ka- reclaimed %d (%v); want its 1 orphan", n, err)
	}
	if alive(a.Namespace) || !alive(b.Namespace) {
		t.Errorf("after fresh ka-'s reclaim: %s alive %v (want deleted), %s alive %v (want kept)", a.Namespace, alive(a.Namespace), b.Namespace, alive(b.Namespace))
	}
	// Idle cleanup, too, ends only the instance's own sessions: a new
	// ka- session and the restored ka-b- one both go idle; ka-b-'s sweep
	// ends its own, and ka-'s namespace stays until ka-'s sweep.
	mA := manager(t.Context(), "ka-")
	a2, _ := begin(t, mA)
	deleteLater(t, c, a2.Namespace)
	mB := manager(t.Context(), "ka-b-")
	if n, err := mB.Restore(t.Context()); err != nil || n != 1 {
		t.Fatalf("ka-b- Restore = %d, %v; want its 1 session", n, err)
	}
	skew.Add(int64(3 * time.Hour))
	if n, err := mB.Sweep(t.Context()); err != nil || n != 1 {
		t.Errorf("ka-b- Sweep = %d, %v; want its 1 idle session ended", n, err)
	}
	if alive(b.Namespace) || !alive(a2.Namespace) {
		t.Errorf("after ka-b-'s sweep: %s alive %v (want deleted), %s alive %v (want kept)", b.Namespace, alive(b.Namespace), a2.Namespace, alive(a2.Namespace))
	}
	if n, err := mA.Sweep(t.Context()); err != nil || n != 1 || alive(a2.Namespace) {
		t.Errorf("ka- Sweep = %d, %v, %s alive %v; want its 1 idle session ended with its namespace", n, err, a2.Namespace, alive(a2.Namespace))
	}
}

// TestDefaultInstanceAdoptsAnOlderOplabsNamespaces: namespaces an oplab
// from before instance labels made (labelled only oplab.dev/lab=true) are
// adopted by the default prefix, so an upgrade keeps those learners' labs;
// other prefixes leave them alone, and names that oplab never made are not
// adopted.
func TestDefaultInstanceAdoptsAnOlderOplabsNamespaces(t *testing.T) {
	c := kubeClient(t)
	cookie := &http.Cookie{Name: session.CookieName, Value: "an-older-oplabs-cookie-" + strings.ToLower(t.Name())}
	old := func(name string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{labns.LabLabel: "true"},
			Annotations: map[string]string{labns.CookieHashAnnotation: session.HashCookie(cookie.Value + name)},
		}}
		if err := c.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
		deleteLater(t, c, name)
		return name
	}
	legacy, odd := old("lab-olderop2"), old("lab-x-olderop2")
	instanceOf := func(name string) string {
		var ns corev1.Namespace
		if err := c.Get(t.Context(), types.NamespacedName{Name: name}, &ns); err != nil {
			t.Fatal(err)
		}
		return ns.Labels[labns.InstanceLabel]
	}
	restore := func(prefix string) *session.Manager {
		t.Helper()
		m, err := session.New(t.Context(), session.Options{
			Namespaces:      labns.KubeNamespaces{Client: c, MaxDatabases: 5, Prefix: prefix},
			NamespacePrefix: prefix, IdleTimeout: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Restore(t.Context()); err != nil {
			t.Fatal(err)
		}
		return m
	}
	restore("lb-")
	if got := instanceOf(legacy); got != "" {
		t.Errorf("instance lb- labelled the older oplab's %s with %q; want it left alone", legacy, got)
	}
	m := restore(labns.NamespacePrefix)
	if got := instanceOf(legacy); got != labns.Instance(labns.NamespacePrefix) {
		t.Errorf("%s labelled %s=%q after the default instance's restore; want %q", legacy, labns.InstanceLabel, got, labns.Instance(labns.NamespacePrefix))
	}
	var adopted corev1.Namespace
	if err := c.Get(t.Context(), types.NamespacedName{Name: legacy}, &adopted); err != nil {
		t.Fatal(err)
	}
	if got := adopted.Labels[labns.PodSecurityEnforce]; got != labns.PodSecurityLevel {
		t.Errorf("%s adopted with %s=%q; want %s, as a new lab namespace", legacy, labns.PodSecurityEnforce, got, labns.PodSecurityLevel)
	}
	legacyCookie := &http.Cookie{Name: session.CookieName, Value: cookie.Value + legacy}
	if s, err := m.Lookup(withCookie(legacyCookie)); err != nil || s.Namespace != legacy {
		t.Errorf("the older oplab's learner finds %v, %v; want their namespace %s", s, err, legacy)
	}
	if got := instanceOf(odd); got != "" {
		t.Errorf("%s (a name no older oplab made) labelled %q; want it left alone", odd, got)
	}
}
