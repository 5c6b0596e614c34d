package session_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/kubeconfig"
	"github.com/oplab-dev/oplab/web/session"
)

// These tests are issue 11 §4 against the real API server: a learner's
// kubeconfig works in their namespace and nowhere else, expires with the
// session, goes with the namespace, and a restored session gets a new one.

// learnerEnv is a Manager whose kubeconfigs come from the real issuer,
// served by the real handler.
type learnerEnv struct {
	admin  client.Client
	cs     kubernetes.Interface
	issuer *labns.Issuer
	m      *session.Manager
	srv    *httptest.Server
}

func newLearnerEnv(t testing.TB, ctx context.Context, now func() time.Time) *learnerEnv {
	t.Helper()
	return newLearnerEnvWith(t, ctx, now, nil)
}

// newLearnerEnvWith is newLearnerEnv whose Manager reaches its namespaces
// through wrap, when set.
func newLearnerEnvWith(t testing.TB, ctx context.Context, now func() time.Time, wrap func(session.Namespaces) session.Namespaces) *learnerEnv {
	t.Helper()
	e := &learnerEnv{admin: kubeClient(t)}
	cs, err := kubernetes.NewForConfig(shared.Get(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	e.cs = cs
	cl, err := labns.ClusterOf(shared.Get(t).Config(), "")
	if err != nil {
		t.Fatal(err)
	}
	e.issuer = &labns.Issuer{Client: cs, Cluster: cl}
	var namespaces session.Namespaces = labns.KubeNamespaces{Client: e.admin, MaxDatabases: 5}
	if wrap != nil {
		namespaces = wrap(namespaces)
	}
	e.m, err = session.New(ctx, session.Options{
		Namespaces: namespaces, IdleTimeout: time.Hour,
		Now: now, Revoke: e.issuer.Revoke,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	kubeconfig.Handler{Sessions: e.m, Minter: e.issuer}.Register(mux)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// download fetches the kubeconfig with the cookie, as the lab page's link
// does, and checks how it is served.
func (e *learnerEnv) download(t *testing.T, cookie *http.Cookie, ns string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+kubeconfig.Path, nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s", kubeconfig.Path, resp.StatusCode, body)
	}
	if got := resp.Header.Get("Content-Disposition"); !strings.Contains(got, kubeconfig.FileName(ns)) {
		t.Errorf("Content-Disposition %q; want an attachment named %s", got, kubeconfig.FileName(ns))
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q; want no-store (the file holds a credential)", got)
	}
	return body
}

// clientOf builds clients from a learner's kubeconfig file, as kubectl reads it.
func clientOf(t *testing.T, data []byte) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatalf("the learner kubeconfig does not load: %v\n%s", err, data)
	}
	if cfg.BearerToken == "" || len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 {
		t.Fatalf("the learner kubeconfig carries admin credentials or no token:\n%s", data)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cs
}

// canI is `kubectl auth can-i` through the API: a SelfSubjectAccessReview.
func canI(t *testing.T, cs kubernetes.Interface, verb, group, resource, ns, name string) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectAccessReview %s %s/%s in %q: %v", verb, group, resource, ns, err)
	}
	return r.Status.Allowed
}

// tokenExpiry reads the exp claim of a JWT (not verifying it: the API
// server does that).
func tokenExpiry(t *testing.T, token string) time.Time {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return time.Unix(claims.Exp, 0)
}

func near(got, want time.Time, within time.Duration) bool {
	d := got.Sub(want)
	return d > -within && d < within
}

func TestLearnerKubeconfigWorksOnlyInTheirNamespace(t *testing.T) {
	// Its own Manager and namespace: it may run beside the others that
	// own theirs (parallel tests start once the serial ones are done).
	t.Parallel()
	e := newLearnerEnv(t, t.Context(), nil)
	a, cookieA := begin(t, e.m)
	deleteLater(t, e.admin, a.Namespace)
	b, _ := begin(t, e.m)
	deleteLater(t, e.admin, b.Namespace)

	data := e.download(t, cookieA, a.Namespace)
	cfg, cs := clientOf(t, data)
	admin := shared.Get(t).Config()
	if cfg.Host != admin.Host || !bytes.Equal(cfg.CAData, admin.CAData) {
		t.Errorf("learner kubeconfig names %s; want the admin kubeconfig's server %s and its CA", cfg.Host, admin.Host)
	}
	// The session was just used, so it has its full idle timeout (an hour)
	// left, and so does the token.
	if exp := tokenExpiry(t, cfg.BearerToken); !near(exp, time.Now().Add(time.Hour), time.Minute) {
		t.Errorf("token expires at %s; want about an hour from now, when the session would end", exp)
	}

	allowed := []struct{ verb, group, resource string }{
		{"create", "db.oplab.dev", "databases"}, {"delete", "db.oplab.dev", "databases"}, {"watch", "db.oplab.dev", "databases"},
		{"get", "db.oplab.dev", "databases/status"}, {"list", "apps", "statefulsets"}, {"patch", "apps", "statefulsets/scale"},
		// A StatefulSet's metadata (owner-gc); its spec is the learner
		// policy's to refuse (controller/config TestALearnerIsSandboxed).
		{"patch", "apps", "statefulsets"},
		{"get", "", "secrets"}, {"delete", "", "pods"}, {"list", "", "events"}, {"get", "", "configmaps"},
	}
	for _, p := range allowed {
		if !canI(t, cs, p.verb, p.group, p.resource, a.Namespace, "") {
			t.Errorf("can-i %s %s.%s -n %s (own namespace) = no; want yes", p.verb, p.resource, p.group, a.Namespace)
		}
		if canI(t, cs, p.verb, p.group, p.resource, b.Namespace, "") {
			t.Errorf("can-i %s %s.%s -n %s (another learner's) = yes; want no", p.verb, p.resource, p.group, b.Namespace)
		}
		if canI(t, cs, p.verb, p.group, p.resource, "", "") {
			t.Errorf("can-i %s %s.%s --all-namespaces = yes; want no", p.verb, p.resource, p.group)
		}
	}
	denied := []struct{ verb, group, resource string }{
		{"create", "", "secrets"}, {"update", "db.oplab.dev", "databases/status"}, {"create", "rbac.authorization.k8s.io", "rolebindings"},
		{"create", "", "serviceaccounts/token"}, {"delete", "", "resourcequotas"}, {"create", "apps", "statefulsets"},
		// A Pod template is not theirs to write: no update, no Pods.
		{"update", "apps", "statefulsets"}, {"create", "", "pods"},
	}
	for _, p := range denied {
		if canI(t, cs, p.verb, p.group, p.resource, a.Namespace, "") {
			t.Errorf("can-i %s %s.%s -n %s = yes; want no: a learner needs it not", p.verb, p.resource, p.group, a.Namespace)
		}
	}
	if canI(t, cs, "delete", "", "namespaces", "", b.Namespace) || canI(t, cs, "delete", "", "namespaces", "", a.Namespace) {
		t.Error("can-i delete namespace = yes; want no, not even their own")
	}

	// What the API server really does, not only what it says it would.
	if _, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list namespaces: %v; want Forbidden", err)
	}
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), b.Namespace, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete another learner's namespace: %v; want Forbidden", err)
	}
	learner, err := client.New(cfg, client.Options{Scheme: e.admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := learner.Create(t.Context(), database(a.Namespace, "mine")); err != nil {
		t.Errorf("create a Database in their own namespace: %v", err)
	}
	if err := learner.Create(t.Context(), database(b.Namespace, "theirs")); !apierrors.IsForbidden(err) {
		t.Errorf("create a Database in another learner's namespace: %v; want Forbidden", err)
	}

	// And the file works with kubectl as it is, namespace included.
	path := filepath.Join(t.TempDir(), kubeconfig.FileName(a.Namespace))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		out, err := exec.CommandContext(t.Context(), shared.Get(t).KubectlPath(), append([]string{"--kubeconfig", path}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := kubectl("get", "databases", "-o", "name"); err != nil || out != "database.db.oplab.dev/mine" {
		t.Errorf("kubectl get databases = %q, %v; want the Database just created, in the kubeconfig's namespace", out, err)
	}
	if out, err := kubectl("auth", "can-i", "create", "databases", "-n", b.Namespace); err == nil || out != "no" {
		t.Errorf("kubectl auth can-i create databases -n %s = %q, %v; want no", b.Namespace, out, err)
	}
	if out, err := kubectl("get", "namespaces"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("kubectl get namespaces = %q, %v; want forbidden", out, err)
	}
}

func TestLearnerTokenLivesAtLeastTheAPIMinimum(t *testing.T) {
	e := newLearnerEnv(t, t.Context(), nil)
	a, _ := begin(t, e.m)
	deleteLater(t, e.admin, a.Namespace)
	// A session with a minute left still gets a token, of the shortest
	// life the TokenRequest API allows.
	creds, err := e.issuer.Issue(t.Context(), a.Namespace, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatalf("Issue with a minute left: %v", err)
	}
	if !near(creds.Expires, time.Now().Add(labns.MinTokenLife), time.Minute) {
		t.Errorf("expires %s; want about %s from now", creds.Expires, labns.MinTokenLife)
	}
	cfg, _ := clientOf(t, creds.Kubeconfig)
	if exp := tokenExpiry(t, cfg.BearerToken); !near(exp, creds.Expires, 2*time.Second) {
		t.Errorf("token exp claim %s, Credentials.Expires %s; want them equal", exp, creds.Expires)
	}
}

func TestLearnerAccessEndsWithTheSession(t *testing.T) {
	// Its own Manager and namespace: it may run beside the others that
	// own theirs (parallel tests start once the serial ones are done).
	t.Parallel()
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	// The Manager's deletes are held back, so what ends the token is the
	// revocation alone, not the namespace's deletion (which can take long:
	// a Database whose controller is stopped holds it in Terminating).
	held := &heldDeletes{}
	e := newLearnerEnvWith(t, t.Context(), now, func(n session.Namespaces) session.Namespaces {
		held.Namespaces = n
		return held
	})
	a, cookie := begin(t, e.m)
	deleteLater(t, e.admin, a.Namespace)
	_, cs := clientOf(t, e.download(t, cookie, a.Namespace))
	if _, err := cs.CoreV1().Pods(a.Namespace).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list Pods while the session lives: %v", err)
	}

	skew.Store(int64(2 * time.Hour))
	if n, err := e.m.Sweep(t.Context()); err != nil || n != 1 || len(held.names) != 1 {
		t.Fatalf("Sweep two hours on = %d, %v (deletes %v); want the session ended", n, err, held.names)
	}
	// The token stops working now, with the namespace still there, not
	// when it would have expired.
	polltest.Until(t, 2*time.Minute, "the ended session's token refused as unauthenticated", func() (bool, error) {
		_, err := cs.CoreV1().Pods(a.Namespace).List(t.Context(), metav1.ListOptions{})
		return apierrors.IsUnauthorized(err), nil
	})
	var ns corev1.Namespace
	if err := e.admin.Get(t.Context(), types.NamespacedName{Name: a.Namespace}, &ns); err != nil || ns.DeletionTimestamp != nil {
		t.Fatalf("namespace %s: %v, deleting %v; want it still there (its delete is held)", a.Namespace, err, ns.DeletionTimestamp)
	}
	if err := held.Namespaces.Delete(t.Context(), a.Namespace); err != nil {
		t.Fatal(err)
	}
	// Nothing is left behind: everything the issuer made lived in the
	// namespace, and goes with it.
	polltest.Until(t, 2*time.Minute, "the namespace gone", func() (bool, error) {
		err := e.admin.Get(t.Context(), types.NamespacedName{Name: a.Namespace}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	var sas corev1.ServiceAccountList
	var roles rbacv1.RoleList
	var bindings rbacv1.RoleBindingList
	var cbindings rbacv1.ClusterRoleBindingList
	managed := client.MatchingLabels{labns.ManagedByLabel: "oplab"}
	for _, l := range []client.ObjectList{&sas, &roles, &bindings} {
		if err := e.admin.List(t.Context(), l, client.InNamespace(a.Namespace), managed); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.admin.List(t.Context(), &cbindings); err != nil {
		t.Fatal(err)
	}
	if len(sas.Items)+len(roles.Items)+len(bindings.Items) > 0 {
		t.Errorf("left behind in %s: %d ServiceAccounts, %d Roles, %d RoleBindings", a.Namespace, len(sas.Items), len(roles.Items), len(bindings.Items))
	}
	for _, b := range cbindings.Items {
		for _, s := range b.Subjects {
			if s.Namespace == a.Namespace {
				t.Errorf("ClusterRoleBinding %s names the learner's ServiceAccount %s/%s", b.Name, s.Namespace, s.Name)
			}
		}
	}
}

func TestRestoredSessionMintsANewToken(t *testing.T) {
	firstCtx, stopFirst := context.WithCancel(t.Context())
	first := newLearnerEnv(t, firstCtx, nil)
	a, cookie := begin(t, first.m)
	deleteLater(t, first.admin, a.Namespace)
	before, _ := clientOf(t, first.download(t, cookie, a.Namespace))
	stopFirst()

	// Meanwhile an older oplab's Role granted less: the next one repairs it.
	var role rbacv1.Role
	if err := first.admin.Get(t.Context(), types.NamespacedName{Namespace: a.Namespace, Name: labns.LearnerRole}, &role); err != nil {
		t.Fatal(err)
	}
	role.Rules = role.Rules[:1]
	if err := first.admin.Update(t.Context(), &role); err != nil {
		t.Fatal(err)
	}

	second := newLearnerEnv(t, t.Context(), nil)
	if n, err := second.m.Restore(t.Context()); err != nil || n < 1 {
		t.Fatalf("Restore = %d, %v; want the first oplab's session", n, err)
	}
	after, cs := clientOf(t, second.download(t, cookie, a.Namespace))
	if after.BearerToken == before.BearerToken {
		t.Error("the restored session got the same token; want a newly minted one")
	}
	if _, err := cs.AppsV1().StatefulSets(a.Namespace).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("the restored session's new token cannot list StatefulSets (the Role the earlier oplab narrowed is not repaired): %v", err)
	}
	learner, err := client.New(after, client.Options{Scheme: second.admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := learner.Create(t.Context(), database(a.Namespace, "after-restart")); err != nil {
		t.Errorf("create a Database with the restored session's kubeconfig: %v", err)
	}
}

func TestKubeconfigNeedsASession(t *testing.T) {
	e := newLearnerEnv(t, t.Context(), nil)
	for name, c := range map[string]*http.Cookie{"no cookie": nil, "forged cookie": {Name: session.CookieName, Value: "guess"}} {
		req, _ := http.NewRequest("GET", e.srv.URL+kubeconfig.Path, nil)
		if c != nil {
			req.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "open /lab first") || strings.Contains(string(body), "apiVersion") {
			t.Errorf("%s: %d %q; want 403 saying to open /lab first, and no kubeconfig", name, resp.StatusCode, body)
		}
	}
}

// heldDeletes passes everything through but Delete, which it records.
type heldDeletes struct {
	session.Namespaces
	names []string
}

func (h *heldDeletes) Delete(_ context.Context, name string) error {
	h.names = append(h.names, name)
	return nil
}

// TestKubeconfigFailuresNameTheMissingPermission runs the issuer as an
// identity that lacks what it needs (as a least-privilege oplab might):
// the learner's answer says, in the API server's words, which verb on
// which resource is missing, and that oplab cannot grant what it does not
// hold itself.
func TestKubeconfigFailuresNameTheMissingPermission(t *testing.T) {
	e := newLearnerEnv(t, t.Context(), nil)
	a, cookie := begin(t, e.m)
	deleteLater(t, e.admin, a.Namespace)

	// A ServiceAccount standing for a restricted oplab, in the learner's
	// namespace, with a token the admin mints for it.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "restricted-oplab", Namespace: a.Namespace}}
	if err := e.admin.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	secs := int64(600)
	tr, err := e.cs.CoreV1().ServiceAccounts(a.Namespace).CreateToken(t.Context(), sa.Name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restricted := rest.AnonymousClientConfig(shared.Get(t).Config())
	restricted.BearerToken = tr.Status.Token
	rcs, err := kubernetes.NewForConfig(restricted)
	if err != nil {
		t.Fatal(err)
	}
	grant := func(rules ...rbacv1.PolicyRule) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "restricted-oplab", Namespace: a.Namespace}, Rules: rules}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "restricted-oplab", Namespace: a.Namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: a.Namespace}},
		}
		if err := e.admin.Delete(t.Context(), role); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if err := e.admin.Create(t.Context(), role); err != nil {
			t.Fatal(err)
		}
		if err := e.admin.Create(t.Context(), binding); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	kubeconfig.Handler{Sessions: e.m, Minter: &labns.Issuer{Client: rcs, Cluster: e.issuer.Cluster}}.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	answer := func() (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+kubeconfig.Path, nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	grant(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get"}})
	polltest.Until(t, 2*time.Minute, "the restricted identity's refusal to create the ServiceAccount, in words", func() (bool, error) {
		code, body := answer()
		return code == http.StatusInternalServerError && strings.Contains(body, `oplab may not "create" "serviceaccounts"`) &&
			strings.Contains(body, a.Namespace), nil
	})

	// It may create the learner's objects, but does not hold the learner's
	// permissions itself: the API server refuses to let it grant them.
	grant(
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "create"}},
		rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "create", "update", "delete"}},
	)
	polltest.Until(t, 2*time.Minute, "the refusal to grant permissions the identity lacks, in words", func() (bool, error) {
		code, body := answer()
		return code == http.StatusInternalServerError && strings.Contains(body, "oplab may not grant") &&
			strings.Contains(body, "in a Role, because it does not hold that itself"), nil
	})

	// With what the issuer needs (labns.LearnerRules and serviceaccounts/token
	// beside it), it works.
	grant(append([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "create", "update", "delete"}},
	}, labns.LearnerRules...)...)
	polltest.Until(t, 2*time.Minute, "a kubeconfig minted by the identity holding what the issuer needs", func() (bool, error) {
		code, body := answer()
		return code == http.StatusOK && strings.Contains(body, "token: "), nil
	})
}
