package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/internal/polltest"
)

// A namespace whose Secret cache is refused its first list (oplab's
// RoleBinding there comes after the namespace) must not hold the lab
// state's owner goroutine: List says "not synced" at once, and lists the
// Secrets once the binding lets the cache sync.
func TestNamespaceCachesListNeverWaitsForASync(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()

	// The namespaces come from an admin's cache; the Secrets are read as
	// a user who may not list them until the test binds a Role.
	nsCache, err := cache.New(e.cfg, cache.Options{Scheme: testScheme, ByObject: map[client.Object]cache.ByObject{
		&corev1.Namespace{}: {Field: fields.OneTermEqualSelector("metadata.name", e.ns)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	nsInformer, err := nsCache.GetInformer(ctx, &corev1.Namespace{})
	if err != nil {
		t.Fatal(err)
	}
	user := rest.CopyConfig(e.cfg)
	user.Impersonate = rest.ImpersonationConfig{UserName: "oplab-test-secret-reader"}
	secrets, err := NewNamespaceCaches(user, cache.Options{Scheme: testScheme}, &corev1.Secret{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := secrets.Follow(ctx, nsInformer); err != nil {
		t.Fatal(err)
	}
	go func() { _ = nsCache.Start(ctx) }()
	e.mustCreate(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "conn"}, StringData: map[string]string{"k": "v"}})

	// Before the binding: an answer within a second, naming the wait.
	var list corev1.SecretList
	polltest.Until(e.t, deadline, "the namespace's Secret cache to open", func() (bool, error) {
		secrets.mu.Lock()
		defer secrets.mu.Unlock()
		return secrets.caches[e.ns] != nil, nil
	})
	listCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	start := time.Now()
	err = secrets.List(listCtx, &list, e.ns)
	if !errors.Is(err, ErrNotSynced) {
		t.Fatalf("List before the cache may list = %v after %s, want ErrNotSynced", err, time.Since(start).Round(time.Millisecond))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("List took %s to say not synced; it must not wait for the sync", took.Round(time.Millisecond))
	}

	// After the binding: the Secret.
	e.mustCreate(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "watch"}}}})
	e.mustCreate(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-secrets"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "oplab-test-secret-reader"}}})
	polltest.Until(e.t, deadline, "the Secret listed once the binding lets the cache sync", func() (bool, error) {
		err := secrets.List(ctx, &list, e.ns)
		return err == nil && len(list.Items) == 1 && list.Items[0].Name == "conn", err
	})

	// A namespace without a cache holds nothing, at once.
	if err := secrets.List(ctx, &list, "no-such-namespace"); err != nil || len(list.Items) != 0 {
		t.Errorf("List in a namespace without a cache = %d items, %v; want none, nil", len(list.Items), err)
	}
}
