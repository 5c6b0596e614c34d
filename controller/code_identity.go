package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/permission"
)

// A learner's own reconciler never acts with oplab's powers. In each lab
// namespace it is the ServiceAccount CodeServiceAccount, bound to the
// ClusterRole CodeRoleName (config/rbac/code_role.yaml: what a reconciler
// of Databases needs, in that namespace) and held by the admission policy
// oplab-learner-code (config/policy/code.yaml: the engines' images, Services
// that stay in the cluster). oplab makes every write of the learner's code
// as that ServiceAccount, by impersonation; its reads come from the same
// informer cache oplab's reconciler reads, confined to the namespace and
// the sandbox's kinds by the sandbox (controller/sandbox). oplab's own
// controller keeps its own identity.
const (
	CodeServiceAccount = permission.CodeServiceAccount
	CodeRoleName       = "oplab-code"
	// ImageRegistryAnnotation on a lab namespace is the registry the
	// engines' images come from (Options.ImageRegistry), for the policy
	// to check the learner code's images against; absent means the short
	// names, "postgres:17".
	ImageRegistryAnnotation = "oplab.dev/image-registry"
)

// CodeWriteRate is how many writes a second learner code may make in its
// namespace, with as many at once: oplab's reconciler makes about six to
// bring up a Database. A loop that writes on every turn is slowed to this
// pace, and each write it had to wait for shows on the timeline as a
// throttled step.
const CodeWriteRate = 10

// CodeUser is the user learner code acts as in ns.
func CodeUser(ns string) string { return "system:serviceaccount:" + ns + ":" + CodeServiceAccount }

// codeConfig is base impersonating ns's learner-code ServiceAccount. The
// API server then authorizes and admits each request as that account
// alone: oplab's own rights do not add to it. client-go's rate limit is
// lifted: CodeWriteRate paces the writes, where the timeline shows it.
func codeConfig(base *rest.Config, ns string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: CodeUser(ns)}
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg
}

// GrantCode makes ns ready for learner code: its ServiceAccount, the
// RoleBinding to the code's ClusterRole, and the namespace's
// ImageRegistryAnnotation; then it waits until the API server authorizes
// that account, so the code's first write is not refused while RBAC's cache
// catches up. It is idempotent: run before every hand-over.
func (r *Runner) GrantCode(ctx context.Context, ns string) error {
	c, err := r.adminClient()
	if err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: CodeServiceAccount, Namespace: ns, Labels: map[string]string{labelManagedBy: "oplab"}},
		// Nothing runs as it: oplab impersonates it. No token is mounted
		// anywhere.
		AutomountServiceAccountToken: ptr.To(false),
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, sa)); err != nil {
		return fmt.Errorf("create ServiceAccount %s/%s for your code: %w", ns, CodeServiceAccount, permission.Explain(err))
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: CodeRoleName, Namespace: ns, Labels: map[string]string{labelManagedBy: "oplab"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: CodeRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: CodeServiceAccount, Namespace: ns}},
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, rb)); err != nil {
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "attempting to grant RBAC permissions not currently held") {
			// Binding a ClusterRole takes "bind" on it by name; the API
			// server's list of the role's rules would point elsewhere.
			err = &permission.Error{Missing: []permission.Rule{{Verbs: []string{"bind"}, Group: rbacv1.GroupName, Resource: "clusterroles"}}, Err: err}
		}
		return fmt.Errorf("bind ClusterRole %s to your code's ServiceAccount in %s: %w", CodeRoleName, ns, permission.Explain(err))
	}
	if err := r.annotateRegistry(ctx, c, ns); err != nil {
		return err
	}
	return waitForPolicy(ctx, r.cfg, ns)
}

// policyName is the learner code's admission policy (config/policy/code.yaml).
const policyName = "oplab-learner-code"

// waitForPolicy waits until ns's learner code is authorized (RBAC's cache
// follows a watch) and held by its admission policy: a new namespace is
// matched only once the API server's informer has seen it, and until then
// the code's first writes would pass unchecked. It asks by a dry run of a
// write the policy refuses, as the code's own ServiceAccount: a token
// Secret, which the policy alone refuses. A policy never installed fails
// it: learner code does not run where it would not hold.
func waitForPolicy(ctx context.Context, cfg *rest.Config, ns string) error {
	// A typed client: a controller-runtime one would first ask for
	// discovery, whose refusal hides which permission was missing.
	code, err := kubernetes.NewForConfig(codeConfig(cfg, ns))
	if err != nil {
		return fmt.Errorf("a client for your code: %w", err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		canary := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oplab-policy-canary",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: CodeServiceAccount}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
		_, last = code.CoreV1().Secrets(ns).Create(ctx, canary, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case apierrors.IsForbidden(last) && strings.Contains(last.Error(), policyName):
			return true, nil
		case apierrors.IsForbidden(last) && strings.Contains(last.Error(), "cannot impersonate"):
			// oplab may not act as the account: no wait mends that.
			return false, last
		}
		return false, nil
	})
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(last) && strings.Contains(last.Error(), "cannot impersonate") {
		// Named as the role grants it: an API server with constrained
		// impersonation names the verb it tried first
		// ("impersonate-on:serviceaccount:create" on secrets), which
		// oplab's roles do not use.
		return fmt.Errorf("act as your code's ServiceAccount in %s: %w", ns, &permission.Error{
			Missing: []permission.Rule{{Verbs: []string{"impersonate"}, Resource: "serviceaccounts"}}, Namespace: ns, Err: last})
	}
	return fmt.Errorf("the admission policy %s does not hold in namespace %s after 10 s (the last dry run answered %v): "+
		"your code runs only where it holds; ask your cluster admin to apply controller/config/policy", policyName, ns, last)
}

// annotateRegistry writes the engines' registry on ns, for the learner
// code policy, when it is not there already.
func (r *Runner) annotateRegistry(ctx context.Context, c client.Client, ns string) error {
	var got corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, &got); err != nil {
		return fmt.Errorf("read namespace %s: %w", ns, permission.Explain(err))
	}
	want := strings.TrimSuffix(r.opts.ImageRegistry, "/")
	if got.Annotations[ImageRegistryAnnotation] == want {
		return nil
	}
	var value any = want
	if want == "" {
		value = nil // a merge patch's null removes it
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{ImageRegistryAnnotation: value}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, &got, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate namespace %s with the engines' registry: %w", ns, permission.Explain(err))
	}
	return nil
}

// adminClient is a plain client with oplab's own identity, made once.
func (r *Runner) adminClient() (client.Client, error) {
	r.adminOnce.Do(func() {
		scheme := runtime.NewScheme()
		r.adminErr = errors.Join(corev1.AddToScheme(scheme), rbacv1.AddToScheme(scheme))
		if r.adminErr == nil {
			r.admin, r.adminErr = client.New(r.cfg, client.Options{Scheme: scheme})
		}
	})
	return r.admin, r.adminErr
}

// codeClients are, per namespace handed to learner code, the client its
// calls go through: reads from the manager's cache, as oplab's reconciler
// reads; writes as the namespace's learner-code ServiceAccount, at most
// CodeWriteRate a second; the reconciler's own-write and trace wrappers
// around both, so the timeline shows the code's calls as it shows oplab's.
type codeClients struct {
	cfg      *rest.Config
	scheme   *runtime.Scheme
	mapper   meta.RESTMapper
	reads    client.Client
	book     *triggerBook
	registry string
	grant    func(context.Context, string) error
	// rate is CodeWriteRate, or a Driver's own (zero: no pacing).
	rate int
	// around, when set, wraps the code's client below the trace (a
	// Driver's faults).
	around func(client.Client) client.Client

	mu sync.Mutex
	m  map[string]client.Client
}

// get returns ns's client, making it on first use, after granting ns
// its learner-code identity (GrantCode; /code grants it before it hands
// the namespace over, so this finds it there).
func (cc *codeClients) get(ctx context.Context, ns string) (client.Client, error) {
	cc.mu.Lock()
	c, ok := cc.m[ns]
	cc.mu.Unlock()
	if ok {
		return c, nil
	}
	// Granted without the lock: other namespaces' reconciles do not wait
	// on this one's API calls. Two first reconciles of ns would both
	// grant, which is idempotent.
	if err := cc.grant(ctx, ns); err != nil {
		return nil, err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c, ok := cc.m[ns]; ok {
		return c, nil
	}
	writes, err := client.New(codeConfig(cc.cfg, ns), client.Options{Scheme: cc.scheme, Mapper: cc.mapper})
	if err != nil {
		return nil, fmt.Errorf("a client for the learner code of %s: %w", ns, err)
	}
	var lim *codeLimiter
	if cc.rate > 0 {
		lim = newCodeLimiter(cc.rate)
	}
	split := codeWrites(cc.reads, writes, lim, cc.registry)
	if cc.around != nil {
		split = cc.around(split)
	}
	own := newOwnWrites().client(split)
	c = tracingClient(own, own, cc.book, cc.registry)
	if cc.m == nil {
		cc.m = map[string]client.Client{}
	}
	cc.m[ns] = c
	return c, nil
}

// forget drops ns's client: its code was taken back.
func (cc *codeClients) forget(ns string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.m, ns)
}
