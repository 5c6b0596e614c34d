package config_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/controller/permission"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// perm is one verb on one resource of one API group, as a rule grants it.
type perm struct {
	Verb, Group, Resource string
	// Name is the one resourceName the rule is limited to, if any.
	Name string
}

func (p perm) String() string {
	s := p.Verb + " " + p.Resource
	if p.Group != "" {
		s += "." + p.Group
	}
	if p.Name != "" {
		s += " named " + p.Name
	}
	return s
}

// words is how oplab names p when the API server refuses it.
func (p perm) words() string {
	return permission.Rule{Verbs: []string{p.Verb}, Group: p.Group, Resource: p.Resource}.String()
}

// explode splits rules into one perm per verb, group, resource and name.
func explode(rules []rbacv1.PolicyRule) []perm {
	var out []perm
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						if p := (perm{Verb: v, Group: g, Resource: res, Name: n}); !slices.Contains(out, p) {
							out = append(out, p)
						}
					}
				}
			}
		}
	}
	return out
}

// rules returns the PolicyRules that grant exactly perms.
func rules(perms []perm) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(perms))
	for _, p := range perms {
		r := rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource}, Verbs: []string{p.Verb}}
		if p.Name != "" {
			r.ResourceNames = []string{p.Name}
		}
		out = append(out, r)
	}
	return out
}

// namespaceRoles are the ClusterRoles oplab binds to itself in each
// learner namespace (the Deployment's --namespace-roles); clusterRole is
// the one bound cluster-wide.
var namespaceRoles = []string{"oplab-controller", "oplab-web"}

const clusterRole = "oplab-cluster"

// granted returns every perm oplab's three ClusterRoles grant, read from
// the manifests as kustomize renders them, so a rule added there is probed
// (or named as unprobed) without touching this file; cluster says which
// of them are granted cluster-wide (a perm in both is removed from both).
func granted(t *testing.T) (all []perm, cluster map[perm]bool) {
	t.Helper()
	objs := render(t, "rbac")
	var rules []rbacv1.PolicyRule
	for _, name := range append(slices.Clone(namespaceRoles), clusterRole) {
		var role rbacv1.ClusterRole
		find(t, objs, "ClusterRole", name, &role)
		rules = append(rules, role.Rules...)
		if name == clusterRole {
			cluster = map[perm]bool{}
			for _, p := range explode(role.Rules) {
				cluster[p] = true
			}
		}
	}
	return explode(rules), cluster
}

// A probe shows what a missing perm does to a user: setup runs with every
// perm granted, act with the one perm removed, and returns what the user
// was shown, which must name the perm in words.
type probe struct {
	// what names the part of oplab the probe runs, and where its report
	// goes; "(log only)" marks background work nobody but the log hears of.
	what  string
	perms []string // perm.String()s
	setup func(t *testing.T, h *harness) *learner
	act   func(t *testing.T, h *harness, l *learner, p perm) string
	// startup probes run a fresh oplab with the perm missing from the
	// start; the others share one oplab whose role changes under it.
	startup bool
	// noWait starts oplab without waiting for it to serve: it may not.
	noWait bool
	// orphan marks start-up probes that need an orphaned lab namespace
	// older than --session-idle to reclaim.
	orphan bool
	// older marks start-up probes that need a lab namespace an older oplab
	// made: no Pod Security labels, no LimitRange, a quota on Databases
	// only (h.older).
	older bool
	// apiWords marks a report oplab does not word: client-go's event
	// recorder logs the API server's own sentence, which names the verb
	// and the resource too.
	apiWords bool
}

// learnerGrant is what oplab grants each learner's Role: holding it is
// needed to grant it, so the kubeconfig download probes every one of them.
func learnerGrant() []string {
	var out []string
	for _, p := range explode(labns.LearnerRules) {
		out = append(out, p.String())
	}
	return out
}

func probes() []probe {
	return []probe{
		{
			what: "kubeconfig download: the learner's ServiceAccount, Role, RoleBinding and token, and every permission the Role grants",
			perms: append(learnerGrant(), "create serviceaccounts", "create roles.rbac.authorization.k8s.io",
				"create rolebindings.rbac.authorization.k8s.io", "create serviceaccounts/token"),
			setup: newLearner,
			act:   downloadKubeconfig,
		},
		{
			what: "kubeconfig download over an outdated Role and RoleBinding, which oplab repairs",
			perms: []string{"get roles.rbac.authorization.k8s.io", "update roles.rbac.authorization.k8s.io",
				"get rolebindings.rbac.authorization.k8s.io", "delete rolebindings.rbac.authorization.k8s.io"},
			setup: func(t *testing.T, h *harness) *learner {
				l := newLearner(t, h)
				ctx := context.Background()
				role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: labns.LearnerRole},
					Rules: []rbacv1.PolicyRule{{APIGroups: []string{dbv1.GroupVersion.Group}, Resources: []string{"databases"}, Verbs: []string{"get"}}}}
				binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: labns.LearnerRoleBinding},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: labns.LearnerRole},
					Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "someone-else", Namespace: l.ns}}}
				for _, obj := range []client.Object{role, binding} {
					if err := h.admin.Create(ctx, obj); err != nil {
						t.Fatal(err)
					}
				}
				return l
			},
			act: downloadKubeconfig,
		},
		{
			what: "session start: the learner's namespace, oplab's own RoleBindings there, its quota and LimitRange (the lab page's error)",
			perms: []string{"create namespaces", "create resourcequotas", "create limitranges",
				"bind clusterroles.rbac.authorization.k8s.io named oplab-controller", "bind clusterroles.rbac.authorization.k8s.io named oplab-web"},
			setup: func(t *testing.T, h *harness) *learner { return &learner{h: h, hc: newClient()} },
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				code, body := l.get(t, "/lab")
				if code != http.StatusServiceUnavailable {
					t.Errorf("GET /lab = %d, want 503", code)
				}
				return body
			},
		},
		{
			what:  "a session's first return marks its namespace used (log only)",
			perms: []string{"patch namespaces"},
			setup: func(t *testing.T, h *harness) *learner { return newLearnerOnce(t, h) },
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				if code, body := l.get(t, "/lab/ping"); code != http.StatusNoContent {
					t.Errorf("GET /lab/ping = %d %s: marking the namespace must not fail the request", code, body)
				}
				return h.proc.logged(t, "Failed to mark a lab namespace in use", l.ns)
			},
		},
		{
			what:  "the controller reconciles a new Database: its children and status (the timeline's error step)",
			perms: []string{"create secrets", "create services", "create statefulsets.apps", "patch databases/status.db.oplab.dev"},
			setup: newLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				l.post(t, "/lab/databases", url.Values{"name": {"shop"}, "engine": {"postgres"}, "replicas": {"1"}}, true)
				return l.timelineSays(t, p)
			},
		},
		{
			what:  "the controller reconciles a new Database: its condition",
			perms: []string{"create statefulsets.apps"},
			setup: newLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				l.post(t, "/lab/databases", url.Values{"name": {"shop"}, "engine": {"postgres"}, "replicas": {"1"}}, true)
				return l.conditionSays(t, "shop", p)
			},
		},
		{
			what:  "the controller repairs drift on the Secret and the Service (the timeline's error step)",
			perms: []string{"patch secrets", "patch services"},
			setup: readyLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				name := "shop"
				if p.Resource == "secrets" {
					name = controller.SecretName("shop")
				}
				obj := &metav1.PartialObjectMetadata{}
				obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(map[string]string{"secrets": "Secret", "services": "Service"}[p.Resource]))
				obj.SetNamespace(l.ns)
				obj.SetName(name)
				drift := []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"someone-else"}}}`)
				if err := h.admin.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, drift)); err != nil {
					t.Fatal(err)
				}
				return l.timelineSays(t, p)
			},
		},
		{
			what:     "the controller's Events about a new Database (log only, client-go's line with the API server's words)",
			perms:    []string{"create events.events.k8s.io"},
			apiWords: true,
			setup:    newLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				l.post(t, "/lab/databases", url.Values{"name": {"shop"}, "engine": {"postgres"}, "replicas": {"1"}}, true)
				return h.proc.logged(t, "Server rejected event (will not retry!)", "cannot create resource")
			},
		},
		{
			what:     "the same Event twice becomes a series (log only, client-go's line with the API server's words)",
			perms:    []string{"patch events.events.k8s.io"},
			apiWords: true,
			setup:    readyLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				// Each delete of the Service makes the controller create it
				// again, and say so in the same Event.
				for range 2 {
					svc := &corev1.Service{}
					key := client.ObjectKey{Namespace: l.ns, Name: "shop"}
					if err := h.admin.Get(context.Background(), key, svc); err != nil {
						t.Fatal(err)
					}
					l.post(t, "/lab/databases/shop/children/service/delete", nil, true)
					polltest.Until(t, deadline, "the Service to be made again", func(ctx context.Context) error {
						var now corev1.Service
						if err := h.admin.Get(ctx, key, &now); err != nil {
							return err
						}
						if now.UID == svc.UID {
							return fmt.Errorf("still the deleted one")
						}
						return nil
					})
				}
				return h.proc.logged(t, "Server rejected event (will not retry!)", "cannot patch resource")
			},
		},
		{
			// The learner scales through the scale subresource; the lab's
			// own drift action patches the StatefulSet, as an admin would.
			what:  "the lab's drift action scales the StatefulSet (the action's message)",
			perms: []string{"patch statefulsets.apps"},
			setup: readyLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				return l.post(t, "/lab/databases/shop/statefulset/scale", url.Values{"replicas": {"3"}}, false)
			},
		},
		{
			what:  "the lab's drift action deletes the Secret (the action's message)",
			perms: []string{"delete secrets"},
			setup: readyLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				return l.post(t, "/lab/databases/shop/children/secret/delete", nil, false)
			},
		},
		{
			what:  "delete with the final snapshot (the timeline's error step)",
			perms: []string{"create configmaps"},
			setup: readyLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				l.post(t, "/lab/databases/shop/delete", nil, true)
				return l.timelineSays(t, p)
			},
		},
		{
			what:  "delete over an earlier Database's snapshot of the same name (the timeline's error step)",
			perms: []string{"get configmaps", "update configmaps"},
			setup: func(t *testing.T, h *harness) *learner {
				l := readyLearner(t, h)
				old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: controller.SnapshotName("shop")},
					Data: map[string]string{"uid": "an-earlier-database"}}
				if err := h.admin.Create(context.Background(), old); err != nil {
					t.Fatal(err)
				}
				return l
			},
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				l.post(t, "/lab/databases/shop/delete", nil, true)
				return l.timelineSays(t, p)
			},
		},
		{
			what: "Run my code: the learner code's own identity, its ServiceAccount bound to oplab-code, and oplab acting as it (the code page's error)",
			perms: []string{"bind clusterroles.rbac.authorization.k8s.io named oplab-code",
				"impersonate serviceaccounts named oplab-code"},
			setup: newLearner,
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				code, body := l.postJSON(t, "/code/run", map[string]string{"source": starters.Source("skeleton")})
				if code != http.StatusServiceUnavailable {
					t.Errorf("POST /code/run = %d %s, want 503", code, body)
				}
				return body
			},
		},
		{
			what:  "/readyz reads the Database CRD (its reason)",
			perms: []string{"get customresourcedefinitions.apiextensions.k8s.io named databases.db.oplab.dev"},
			setup: func(t *testing.T, h *harness) *learner { return &learner{h: h, hc: newClient()} },
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				code, body := l.get(t, "/readyz")
				if code != http.StatusServiceUnavailable {
					t.Errorf("GET /readyz = %d, want 503", code)
				}
				return body
			},
		},
		{
			// The informers stream their initial list over a watch
			// (client-go's WatchListClient), so they need watch, not list;
			// list is for the lab's own lists and the learner's Role.
			what: "start: the informer caches of the controller and the state watcher (oplab's log, or its exit error)",
			perms: []string{"watch databases.db.oplab.dev", "watch statefulsets.apps", "watch services", "watch namespaces",
				"watch pods", "watch configmaps", "watch events"},
			startup: true,
			noWait:  true,
			act: func(t *testing.T, h *harness, _ *learner, p perm) string {
				var found string
				// Without watch, client-go falls back from the streamed
				// list to a plain LIST, which the refusal then names: either
				// verb on the resource names the missing rule.
				asList := p
				asList.Verb = "list"
				polltest.Until(t, deadline, "oplab to name "+p.String(), func(context.Context) error {
					for _, line := range strings.Split(h.proc.log(), "\n") {
						if u := unquoteErr(line); strings.Contains(u, p.words()) || strings.Contains(u, asList.words()) {
							found = u
							return nil
						}
					}
					return fmt.Errorf("not named; the log:\n%s", h.proc.log())
				})
				return found
			},
		},
		{
			// Secrets are watched per learner namespace, by a cache
			// opened when the namespace appears: a refusal shows when
			// the next namespace is made.
			what:  "a new learner namespace's Secret informers, the controller's and the state watcher's (log only)",
			perms: []string{"watch secrets"},
			setup: func(t *testing.T, h *harness) *learner { return &learner{h: h, hc: newClient()} },
			act: func(t *testing.T, h *harness, l *learner, p perm) string {
				l = newLearnerOnce(t, h)
				return h.proc.logged(t, "Failed to watch in a learner namespace; retrying", l.ns)
			},
		},
		{
			what:    "start: restoring the sessions of an earlier run (log only)",
			perms:   []string{"list namespaces"},
			startup: true,
			act: func(t *testing.T, h *harness, _ *learner, p perm) string {
				return h.proc.logged(t, "Failed to restore lab sessions from the cluster", "")
			},
		},
		{
			what:    "start: an older oplab's namespace made a sandbox, its quota raised (log only)",
			perms:   []string{"patch resourcequotas"},
			startup: true,
			older:   true,
			act: func(t *testing.T, h *harness, _ *learner, p perm) string {
				saw := h.proc.logged(t, "Failed to make an older oplab's lab namespace a sandbox", h.older)
				// The refused quota does not hold back the labels that keep
				// privileged Pods out.
				var ns corev1.Namespace
				if err := h.admin.Get(context.Background(), client.ObjectKey{Name: h.older}, &ns); err != nil {
					t.Fatal(err)
				}
				if got := ns.Labels[labns.PodSecurityEnforce]; got != labns.PodSecurityLevel {
					t.Errorf("without %s, namespace %s has %s=%q; want %s all the same", p, h.older, labns.PodSecurityEnforce, got, labns.PodSecurityLevel)
				}
				return saw
			},
		},
		{
			what:    "start: reclaiming an orphaned lab namespace (log only)",
			perms:   []string{"get namespaces", "delete namespaces"},
			startup: true,
			orphan:  true,
			act: func(t *testing.T, h *harness, _ *learner, p perm) string {
				return h.proc.logged(t, "Failed to delete orphaned lab namespaces", "")
			},
		},
		{
			what:    "start: revoking the orphan's learner before deleting it (log only)",
			perms:   []string{"delete serviceaccounts", "delete rolebindings.rbac.authorization.k8s.io"},
			startup: true,
			orphan:  true,
			act: func(t *testing.T, h *harness, _ *learner, p perm) string {
				return h.proc.logged(t, "Failed to revoke a learner's kubectl access before deleting their namespace", h.orphan)
			},
		},
	}
}

// unprovable are perms whose absence this cluster cannot show, each with
// why it is granted all the same.
var unprovable = map[string]string{
	"update resourcequotas/status": "oplab writes a new lab namespace's empty quota count itself only when no quota controller " +
		"has counted it within 5 s (the embedded minimal mode, or a cluster whose kube-controller-manager started before the " +
		"Database CRD); on this cluster the controller counts first (TestQuotaCountedWithoutAController shows the write)",
	"update databases/finalizers.db.oplab.dev": "the children's ownerReferences set blockOwnerDeletion, which clusters running the " +
		"OwnerReferencesPermissionEnforcement admission plugin (OpenShift) allow only with this; the embedded API server does not run it",
}

// TestEveryRuleHasAProbe fails naming each perm the roles grant that no
// probe covers, and each probe or exception naming a perm they no longer grant.
func TestEveryRuleHasAProbe(t *testing.T) {
	inTurn(t)
	assets(t)
	have := map[string]bool{}
	all, _ := granted(t)
	for _, p := range all {
		have[p.String()] = true
	}
	covered := map[string]bool{}
	for _, pr := range probes() {
		for _, s := range pr.perms {
			covered[s] = true
			if !have[s] {
				t.Errorf("probe %q names %q, which neither role grants", pr.what, s)
			}
		}
	}
	for s, why := range unprovable {
		covered[s] = true
		if !have[s] {
			t.Errorf("%q is excused (%s) but neither role grants it", s, why)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(have)) {
		if !covered[s] {
			t.Errorf("the roles grant %q, but no probe shows what its absence does: add one to probes() in rules_test.go, or drop the rule", s)
		}
	}
}

// TestEachRuleIsNeeded removes each perm the roles grant, one at a time,
// from an identity that otherwise holds them all, runs the part of oplab
// that uses it, and checks the user is told, in words naming the verb and
// the resource, what oplab may not do.
func TestEachRuleIsNeeded(t *testing.T) {
	t.Parallel()
	admin, _ := installed(t)
	began := time.Now()
	all, cluster := granted(t)
	byName := map[string]perm{}
	for _, p := range all {
		byName[p.String()] = p
	}
	h := newHarness(t, admin, all, cluster)

	// Each start-up probe runs its own oplab instance (a prefix of its own),
	// with an orphan to reclaim, which must be older than the shortest
	// --session-idle (1m): they age while the shared oplab's probes run.
	var startupPerms []string
	for _, pr := range probes() {
		if pr.startup {
			startupPerms = append(startupPerms, pr.perms...)
		}
	}
	for i := range startupPerms {
		prefix := fmt.Sprintf("rs%d-", i)
		// As oplab leaves one: its labels, Pod Security's among them, and
		// its own RoleBinding there.
		orphanLabels := labns.PodSecurityLabels()
		orphanLabels[labns.LabLabel], orphanLabels[labns.InstanceLabel] = "true", labns.Instance(prefix)
		orphan := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "orphan", Labels: orphanLabels}}
		if err := admin.Create(context.Background(), orphan); err != nil {
			t.Fatal(err)
		}
		h.bindInNamespace(t, orphan.Name)
	}
	orphanBorn := time.Now()

	probed := map[string]bool{}
	var startups []probe
	h.proc = h.start(t, "rp-", nil, true)
	for _, pr := range probes() {
		if pr.startup {
			startups = append(startups, pr)
			continue
		}
		for _, s := range pr.perms {
			p := byName[s]
			t.Run(pr.what+"/"+s, func(t *testing.T) {
				h.grant(t, nil)
				l := pr.setup(t, h)
				h.grant(t, &p)
				saw := pr.act(t, h, l, p)
				h.grant(t, nil)
				t.Logf("without %s: %s", p, saw)
				checkWords(t, saw, p, pr.apiWords)
			})
			probed[s] = true
		}
	}
	// The excuse for update databases/finalizers holds: what needs it on
	// clusters that enforce it is there.
	t.Run("excused/update databases/finalizers: the children block their owner's deletion", func(t *testing.T) {
		l := readyLearner(t, h)
		ctx := context.Background()
		for _, obj := range []client.Object{&corev1.Secret{}, &corev1.Service{}, &appsv1.StatefulSet{}} {
			name := "shop"
			if _, ok := obj.(*corev1.Secret); ok {
				name = controller.SecretName("shop")
			}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: l.ns, Name: name}, obj); err != nil {
				t.Fatal(err)
			}
			ref := metav1.GetControllerOf(obj)
			if ref == nil || ref.Kind != "Database" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("%T %s: controller reference %+v, want a Database's with blockOwnerDeletion", obj, name, ref)
			}
		}
	})
	h.proc.stop(t)

	// Those that need no orphan first, while the orphans age.
	slices.SortStableFunc(startups, func(a, b probe) int {
		switch {
		case a.orphan == b.orphan:
			return 0
		case b.orphan:
			return -1
		}
		return 1
	})
	i := 0
	for _, pr := range startups {
		for _, s := range pr.perms {
			p, prefix := byName[s], fmt.Sprintf("rs%d-", i)
			i++
			t.Run(pr.what+"/"+s, func(t *testing.T) {
				if pr.orphan {
					time.Sleep(time.Until(orphanBorn.Add(time.Minute + 2*time.Second)))
				}
				if pr.older {
					h.older = prefix + "older"
					h.makeOlder(t, h.older, prefix)
				}
				h.grant(t, &p)
				h.orphan = prefix + "orphan"
				h.proc = h.start(t, prefix, nil, !pr.noWait)
				saw := pr.act(t, h, nil, p)
				h.proc.stop(t)
				t.Logf("without %s: %s", p, saw)
				checkWords(t, saw, p, pr.apiWords)
			})
			probed[s] = true
		}
	}
	h.grant(t, nil)
	t.Logf("probed %d of the %d permissions the roles grant (%d excused) in %s", len(probed), len(all), len(unprovable), time.Since(began).Round(time.Second))
}

func checkWords(t *testing.T, saw string, p perm, apiWords bool) {
	t.Helper()
	if apiWords {
		want := fmt.Sprintf("cannot %s resource %q in API group %q", p.Verb, p.Resource, p.Group)
		if !strings.Contains(saw, want) {
			t.Errorf("without %s the log said:\n%s\nwant it to name it: %s", p, saw, want)
		}
		return
	}
	// A refused watch falls back, in client-go, to a plain LIST, which is
	// then what the refusal names.
	asList := p
	asList.Verb = "list"
	named := strings.Contains(saw, p.words()) || (p.Verb == "watch" && strings.Contains(saw, asList.words()))
	if !strings.Contains(saw, "oplab may not") || !named {
		t.Errorf("without %s the user read:\n%s\nwant words naming it: %s", p, saw, p.words())
	}
	if strings.Contains(saw, "system:serviceaccount:") {
		t.Errorf("the user read the API server's own sentence, not oplab's words:\n%s", saw)
	}
}

// harness is the probe identity, bound to a ClusterRole the test rewrites,
// and the oplab process running as it.
type harness struct {
	admin      client.Client
	cs         kubernetes.Interface
	all        []perm
	cluster    map[perm]bool
	kubeconfig string
	binary     string
	proc       *proc
	orphan     string
	older      string
}

// makeOlder creates the lab namespace name as an oplab from before the
// sandbox left it for instance prefix: no Pod Security labels, no
// LimitRange, a quota on Databases only; oplab's RoleBinding there.
func (h *harness) makeOlder(t *testing.T, name, prefix string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{labns.LabLabel: "true", labns.InstanceLabel: labns.Instance(prefix)}}}
	if err := h.admin.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: labns.QuotaName},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{labns.DatabaseQuotaResource: resource.MustParse("5")}}}
	if err := h.admin.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	h.bindInNamespace(t, name)
}

// The probe identity's roles: probeSA, bound cluster-wide, holds the
// perms of oplab-cluster; probeNamespaceRole, which the probe's oplab binds
// to itself in each learner namespace (--namespace-roles), holds those of
// oplab-controller and oplab-web.
const (
	probeSA            = "oplab-probe"
	probeNamespaceRole = "oplab-probe-namespace"
	// probeCheckNS is where grant asks the authorizer: the probe identity
	// holds its per-namespace role there too.
	probeCheckNS = "rp-check"
)

func newHarness(t *testing.T, admin client.Client, all []perm, cluster map[perm]bool) *harness {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(shared.cl.Config())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{admin: admin, cs: cs, all: all, cluster: cluster}
	clusterRules, nsRules := h.rules(nil)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: probeSA}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: probeSA}, Rules: clusterRules}
	nsRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: probeNamespaceRole}, Rules: nsRules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: probeSA},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: probeSA},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: probeSA, Namespace: ns}},
	}
	check := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeCheckNS}}
	for _, obj := range []client.Object{sa, role, nsRole, binding, check} {
		if err := admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	h.bindInNamespace(t, probeCheckNS)
	cfg := identity(t, probeSA)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["probe"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["probe"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["probe"] = &clientcmdapi.Context{Cluster: "probe", AuthInfo: "probe"}
	kc.CurrentContext = "probe"
	dir := t.TempDir()
	h.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, h.kubeconfig); err != nil {
		t.Fatal(err)
	}
	h.binary = filepath.Join(dir, "oplab")
	build := exec.Command("go", "build", "-o", h.binary, "github.com/oplab-dev/oplab/cmd/oplab")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build oplab: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_ = admin.Delete(ctx, binding)
		_ = admin.Delete(ctx, role)
		_ = admin.Delete(ctx, nsRole)
		_ = admin.Delete(ctx, check)
	})
	return h
}

// bindInNamespace binds the probe identity's per-namespace role to it in
// namespace, as oplab does in the namespaces it makes.
func (h *harness) bindInNamespace(t *testing.T, namespace string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: probeNamespaceRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: probeNamespaceRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: probeSA, Namespace: ns}},
	}
	if err := h.admin.Create(context.Background(), rb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// probeName is p as the probe identity holds it: "bind" names the probe's
// per-namespace role instead of oplab's.
func probeName(p perm) perm {
	if p.Verb == "bind" && slices.Contains(namespaceRoles, p.Name) {
		p.Name = probeNamespaceRole
	}
	return p
}

// rules are the probe identity's cluster-wide and per-namespace rules:
// every perm but without (nil: all). A perm granted both ways goes from
// both; the two "bind" perms name one role, so either one missing takes it.
func (h *harness) rules(without *perm) (cluster, namespaced []rbacv1.PolicyRule) {
	var c, n []perm
	for _, p := range h.all {
		if without != nil && (p == *without || probeName(p) == probeName(*without)) {
			continue
		}
		if h.cluster[p] {
			if q := probeName(p); !slices.Contains(c, q) {
				c = append(c, q)
			}
		} else {
			n = append(n, p)
		}
	}
	return rules(c), rules(n)
}

// grant gives the probe identity every perm but without (nil: all), and
// waits until the API server's authorizer says so.
func (h *harness) grant(t *testing.T, without *perm) {
	t.Helper()
	clusterRules, nsRules := h.rules(without)
	ctx := context.Background()
	for name, rs := range map[string][]rbacv1.PolicyRule{probeSA: clusterRules, probeNamespaceRole: nsRules} {
		var role rbacv1.ClusterRole
		if err := h.admin.Get(ctx, client.ObjectKey{Name: name}, &role); err != nil {
			t.Fatal(err)
		}
		role.Rules = rs
		if err := h.admin.Update(ctx, &role); err != nil {
			t.Fatal(err)
		}
	}
	checks := []perm{h.all[0], h.all[len(h.all)-1]}
	want := true
	if without != nil {
		checks, want = []perm{probeName(*without)}, false
	}
	for _, check := range checks {
		polltest.Until(t, deadline, fmt.Sprintf("the authorizer to see %s allowed=%v", check, want), func(ctx context.Context) error {
			r, err := h.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + ns + ":" + probeSA,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: check.Verb, Group: check.Group, Resource: strings.Split(check.Resource, "/")[0],
					Subresource: subresource(check.Resource), Name: check.Name, Namespace: probeCheckNS,
				},
			}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if r.Status.Allowed != want {
				return fmt.Errorf("allowed=%v", r.Status.Allowed)
			}
			return nil
		})
	}
}

func subresource(res string) string {
	if _, sub, ok := strings.Cut(res, "/"); ok {
		return sub
	}
	return ""
}

// proc is an oplab process: the real binary, as the probe identity.
type proc struct {
	cmd    *exec.Cmd
	base   string
	done   chan error
	mu     sync.Mutex
	stderr []string
}

// start starts oplab and, when wait is set, waits until it serves.
func (h *harness) start(t *testing.T, prefix string, extra []string, wait bool) *proc {
	t.Helper()
	args := append([]string{"--kubeconfig", h.kubeconfig, "--install-crds=false", "--addr", "127.0.0.1:0",
		"--namespace-roles", probeNamespaceRole,
		"--namespace-prefix", prefix, "--session-idle", "1m", "--resync", "10s",
		"--max-sessions", "500", "--max-sessions-per-client", "0"}, extra...)
	p := &proc{cmd: exec.Command(h.binary, args...), done: make(chan error, 1)}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stderr)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, s.Text())
			p.mu.Unlock()
		}
	}()
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if m := servingRe.FindStringSubmatch(s.Text()); m != nil {
				serving <- m[1]
			}
		}
		p.done <- p.cmd.Wait()
	}()
	if !wait {
		return p
	}
	select {
	case p.base = <-serving:
	case err := <-p.done:
		t.Fatalf("oplab exited before serving: %v\n%s", err, p.log())
	case <-time.After(deadline):
		_ = p.cmd.Process.Kill()
		t.Fatalf("oplab did not serve within %s:\n%s", deadline, p.log())
	}
	return p
}

var servingRe = regexp.MustCompile(`oplab is serving on (http://\S+)`)

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}

// stop stops oplab with SIGINT, as Ctrl-C does, and fails the test if it
// is still running 30 s later (then with its goroutines, for the cause).
// A refused informer at start once kept it running for ever: the manager
// of controller-runtime v0.25.2 never returned from an unsynced cache
// (controller/runner.go stoppableCache).
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	asked := time.Now()
	defer func() { t.Logf("oplab stopped %s after SIGINT", time.Since(asked).Round(time.Millisecond)) }()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		// SIGQUIT makes the Go runtime print every goroutine: what oplab
		// was waiting on goes to the test's log.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		t.Errorf("oplab did not stop within 30s of SIGINT; its goroutines:\n%s", p.log())
	}
}

// logErrRe is the error attribute of an slog text line.
var logErrRe = regexp.MustCompile(`\berr(?:or)?=("(?:[^"\\]|\\.)*"|\S+)`)

// logged waits for oplab's structured log line with msg (and mentioning
// also, when set) and returns its error attribute, unquoted. Both oplab's
// own lines (slog: msg="…" err="…") and client-go's (klog: "…" err="…")
// are found.
func (p *proc) logged(t *testing.T, msg, also string) string {
	t.Helper()
	var found string
	polltest.Until(t, deadline, fmt.Sprintf("oplab to log %q", msg), func(context.Context) error {
		for _, line := range strings.Split(p.log(), "\n") {
			if !strings.Contains(line, strconv.Quote(msg)) || !strings.Contains(line, also) {
				continue
			}
			if found = unquoteErr(line); found == "" {
				return fmt.Errorf("the line has no error attribute: %s", line)
			}
			return nil
		}
		return fmt.Errorf("not logged; the log:\n%s", p.log())
	})
	return found
}

// unquoteErr is the error attribute of a log line, unquoted; a line that
// has none (oplab's exit error) is returned as it is.
func unquoteErr(line string) string {
	m := logErrRe.FindStringSubmatch(line)
	if m == nil {
		return line
	}
	if u, err := strconv.Unquote(m[1]); err == nil {
		return u
	}
	return m[1]
}

// learner is one browser: its cookies and its lab namespace.
type learner struct {
	h  *harness
	hc *http.Client
	ns string
}

func newClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

var namespaceRe = regexp.MustCompile(`data-namespace="([^"]+)"`)

// newLearnerOnce opens the lab once: a session and its namespace, whose
// cookie has not come back yet.
func newLearnerOnce(t *testing.T, h *harness) *learner {
	t.Helper()
	l := &learner{h: h, hc: newClient()}
	code, body := l.get(t, "/lab")
	m := namespaceRe.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET /lab = %d:\n%s", code, body)
	}
	l.ns = m[1]
	return l
}

// newLearner is a learner whose session is in use (its cookie came back).
func newLearner(t *testing.T, h *harness) *learner {
	t.Helper()
	l := newLearnerOnce(t, h)
	if code, body := l.get(t, "/lab/ping"); code != http.StatusNoContent {
		t.Fatalf("GET /lab/ping = %d %s", code, body)
	}
	return l
}

// readyLearner is a learner with a Ready Database "shop".
func readyLearner(t *testing.T, h *harness) *learner {
	t.Helper()
	l := newLearner(t, h)
	l.post(t, "/lab/databases", url.Values{"name": {"shop"}, "engine": {"postgres"}, "replicas": {"1"}}, true)
	polltest.Until(t, deadline, "Database shop to be Ready", func(ctx context.Context) error {
		var db dbv1.Database
		if err := h.admin.Get(ctx, client.ObjectKey{Namespace: l.ns, Name: "shop"}, &db); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(db.Status.Conditions, controller.ConditionReady) {
			return fmt.Errorf("conditions %+v", db.Status.Conditions)
		}
		return nil
	})
	return l
}

func (l *learner) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := l.hc.Get(l.h.proc.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends a lab form as lab/forms.js does and returns the message the page
// flashes; ok says whether the action must succeed.
func (l *learner) post(t *testing.T, path string, form url.Values, ok bool) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, l.h.proc.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatalf("POST %s = %d, not a lab result: %v", path, resp.StatusCode, err)
	}
	if res.OK != ok {
		t.Fatalf("POST %s = %d ok=%v %q, want ok=%v", path, resp.StatusCode, res.OK, res.Message, ok)
	}
	if !ok && resp.StatusCode >= 500 {
		t.Errorf("POST %s = %d: a missing permission is not a server error", path, resp.StatusCode)
	}
	return res.Message
}

// postJSON posts body as JSON, as the code page does, and returns the
// answer.
func (l *learner) postJSON(t *testing.T, path string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := l.hc.Post(l.h.proc.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// timelineSays waits for an error naming p among the steps of the
// learner's timeline, as the lab's export serves it, and returns it.
func (l *learner) timelineSays(t *testing.T, p perm) string {
	t.Helper()
	var found string
	polltest.Until(t, deadline, "an error step naming "+p.String(), func(ctx context.Context) error {
		_, body := l.get(t, "/lab/export")
		var e struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		var errs []string
		for _, m := range e.Messages {
			var v any
			if err := json.Unmarshal(m, &v); err != nil {
				return err
			}
			errs = append(errs, errorsIn(v)...)
		}
		for _, s := range errs {
			if strings.Contains(s, p.words()) {
				found = s
				return nil
			}
		}
		return fmt.Errorf("the timeline's errors: %q", errs)
	})
	return found
}

// errorsIn collects the "error" fields of a decoded stream message.
func errorsIn(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "error" && s != "" {
				out = append(out, s)
			}
			out = append(out, errorsIn(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, errorsIn(x)...)
		}
	}
	return out
}

// conditionSays waits for the Database's Degraded condition to name p.
func (l *learner) conditionSays(t *testing.T, name string, p perm) string {
	t.Helper()
	var found string
	polltest.Until(t, deadline, "Degraded naming "+p.String(), func(ctx context.Context) error {
		var db dbv1.Database
		if err := l.h.admin.Get(ctx, client.ObjectKey{Namespace: l.ns, Name: name}, &db); err != nil {
			return err
		}
		c := meta.FindStatusCondition(db.Status.Conditions, controller.ConditionDegraded)
		if c == nil || !strings.Contains(c.Message, p.words()) {
			return fmt.Errorf("Degraded %+v", c)
		}
		found = c.Message
		return nil
	})
	return found
}

func downloadKubeconfig(t *testing.T, h *harness, l *learner, p perm) string {
	t.Helper()
	code, body := l.get(t, "/lab/kubeconfig")
	if code == http.StatusOK {
		t.Errorf("GET %s = 200 without %s", "/lab/kubeconfig", p)
	}
	return body
}
