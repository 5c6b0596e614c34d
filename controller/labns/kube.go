package labns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/permission"
)

// QuotaName is the ResourceQuota in every lab namespace that caps its
// Databases, and its Pods with what they request.
const QuotaName = "databases"

// DatabaseQuotaResource is the object-count quota resource of Databases
// (count/<plural>.<group>).
const DatabaseQuotaResource corev1.ResourceName = "count/databases.db.oplab.dev"

// KubeNamespaces creates and deletes lab namespaces in the cluster: the
// session.Namespaces a session.Manager needs.
type KubeNamespaces struct {
	Client client.Client
	// MaxDatabases is the value of each namespace's Database quota; default 5.
	MaxDatabases int
	// Prefix is the session Manager's namespace prefix; it decides the
	// InstanceLabel the namespaces get and the only ones List and Delete
	// touch. Default NamespacePrefix.
	Prefix string
	// NoQuotaController says the cluster runs no ResourceQuota controller
	// (the embedded minimal mode): Create writes the new quota's status
	// itself at once instead of waiting for the controller's first count.
	NoQuotaController bool
	// Roles are the ClusterRoles oplab binds to itself (Self) in each lab
	// namespace it creates, one RoleBinding each, named as the role: its
	// per-namespace powers (Secrets, tokens, the learner's identity),
	// which reach no other namespace. Empty: none (oplab holds what it
	// needs cluster-wide, as an admin's kubeconfig does).
	Roles []string
	// Self is oplab's own identity, the subject of those RoleBindings.
	Self rbacv1.Subject
	// Logger hears of the older namespaces List brings up to date.
	Logger logr.Logger
}

// Per-namespace bounds besides the Database count: what the Database's
// Pods ask for, each replica (controller/children.go), times the most a
// lab namespace needs (MaxDatabases Databases of at most 5 replicas), plus
// room for a challenge's extra Pod. A learner scaling a StatefulSet to
// hundreds behind the controller's back gets this many Pods, no more.
var (
	podRequestCPU    = resource.MustParse("100m")
	podRequestMemory = resource.MustParse("256Mi")
	podLimitCPU      = resource.MustParse("500m")
	podLimitMemory   = resource.MustParse("512Mi")
)

// maxReplicas is the Database CRD's maximum of spec.replicas.
const maxReplicas = 5

// LimitRangeName is the LimitRange of every lab namespace.
const LimitRangeName = "pods"

// MaxPods is the Pod count a lab namespace's quota allows with
// maxDatabases Databases.
func MaxPods(maxDatabases int) int { return maxDatabases*maxReplicas + maxReplicas }

// quotaCountWait bounds how long Create waits for the quota controller's
// first count of a new quota before writing the status itself.
const quotaCountWait = 5 * time.Second

// Create creates the namespace, labelled as a lab namespace and annotated
// with the cookie hash, and its Database quota; existing ones are fine.
// The cap is a ResourceQuota so that the API server enforces it for every
// client, kubectl included, not only for the lab's forms.
func (n KubeNamespaces) Create(ctx context.Context, name, cookieHash string) error {
	return n.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: n.newLabels(),
		Annotations: map[string]string{CookieHashAnnotation: cookieHash},
	}})
}

// CreateScratch creates a scratch namespace of the learner whose namespace
// is of: a lab namespace in all but its session (none: the tester of the
// learner's code runs its schedules there), labelled ScratchOfLabel, with
// the same quota, LimitRange, Pod Security and oplab's RoleBindings.
// Restored after a restart, one is an orphan, reclaimed like any.
func (n KubeNamespaces) CreateScratch(ctx context.Context, name, of string) error {
	labels := n.newLabels()
	labels[ScratchOfLabel] = of
	return n.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
}

// ScratchOf lists the scratch namespaces of the learner whose namespace is
// of, those being deleted too.
func (n KubeNamespaces) ScratchOf(ctx context.Context, of string) ([]string, error) {
	var list corev1.NamespaceList
	sel := n.labels()
	sel[ScratchOfLabel] = of
	if err := n.Client.List(ctx, &list, client.MatchingLabels(sel)); err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	return out, nil
}

func (n KubeNamespaces) create(ctx context.Context, ns *corev1.Namespace) error {
	name := ns.Name
	if err := client.IgnoreAlreadyExists(n.Client.Create(ctx, ns)); err != nil {
		return err
	}
	if err := n.bindSelf(ctx, name); err != nil {
		return err
	}
	if err := n.createLimits(ctx, name); err != nil {
		return err
	}
	return n.createQuota(ctx, name)
}

// bindSelf binds Roles to Self in ns and waits until the API server's
// authorizer has seen the bindings (its RBAC cache follows a watch), so
// the creates that follow are not refused.
func (n KubeNamespaces) bindSelf(ctx context.Context, ns string) error {
	if len(n.Roles) == 0 {
		return nil
	}
	for _, role := range n.Roles {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/managed-by": "oplab"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{n.Self},
		}
		err := n.Client.Create(ctx, rb)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			// Binding a ClusterRole takes "bind" on it by name (or holding
			// all it grants): the API server's refusal lists the rules,
			// which would point the admin at the wrong fix.
			if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "attempting to grant RBAC permissions not currently held") {
				err = &permission.Error{Missing: []permission.Rule{{Verbs: []string{"bind"}, Group: rbacv1.GroupName, Resource: "clusterroles"}}, Err: err}
			}
			return fmt.Errorf("bind ClusterRole %s to oplab in namespace %s: %w", role, ns, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, bindWait, true, func(ctx context.Context) (bool, error) {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Namespace: ns},
		}}
		if err := n.Client.Create(ctx, r); err != nil {
			return false, err
		}
		return r.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("wait for oplab's RoleBindings in namespace %s to take effect: %w", ns, err)
	}
	return nil
}

// bindWait bounds the wait for the authorizer to see new RoleBindings.
const bindWait = 10 * time.Second

// createLimits creates ns's LimitRange: a container that names no requests
// or limits gets the Database Pods' own, and none may ask for more than
// twice their limits. With it, the quota on requests counts every Pod.
func (n KubeNamespaces) createLimits(ctx context.Context, ns string) error {
	two := func(q resource.Quantity) resource.Quantity { q.Add(q); return q }
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: LimitRangeName, Namespace: ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: podRequestCPU, corev1.ResourceMemory: podRequestMemory},
			Default:        corev1.ResourceList{corev1.ResourceCPU: podLimitCPU, corev1.ResourceMemory: podLimitMemory},
			Max:            corev1.ResourceList{corev1.ResourceCPU: two(podLimitCPU), corev1.ResourceMemory: two(podLimitMemory)},
		}}},
	}
	if err := client.IgnoreAlreadyExists(n.Client.Create(ctx, lr)); err != nil {
		return fmt.Errorf("create limit range %s: %w", LimitRangeName, err)
	}
	return nil
}

// quotaHard is the quota of a lab namespace: its Databases, and the Pods
// and requests of that many Databases at their largest; and storage, which
// oplab's Databases do not claim (their data is an emptyDir) but a
// learner's own reconciler may, through a StatefulSet's volume claim
// templates: a claim per Pod at most, and controller.MaxClaimStorage in
// all, the most one claim may ask for.
func (n KubeNamespaces) quotaHard() corev1.ResourceList {
	maxDBs := n.MaxDatabases
	if maxDBs <= 0 {
		maxDBs = 5
	}
	pods := int64(MaxPods(maxDBs))
	times := func(q resource.Quantity) resource.Quantity {
		return *resource.NewMilliQuantity(q.MilliValue()*pods, q.Format)
	}
	return corev1.ResourceList{
		DatabaseQuotaResource:                 resource.MustParse(strconv.Itoa(maxDBs)),
		corev1.ResourcePods:                   *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceRequestsCPU:            times(podRequestCPU),
		corev1.ResourceRequestsMemory:         times(podRequestMemory),
		corev1.ResourcePersistentVolumeClaims: *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceRequestsStorage:        controller.MaxClaimStorage,
	}
}

func (n KubeNamespaces) createQuota(ctx context.Context, ns string) error {
	hard := n.quotaHard()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
	if err := n.Client.Create(ctx, q); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create quota %s: %w", QuotaName, err)
	}
	// The API server enforces a quota only once its status lists the
	// resource: until then creates are refused ("status unknown"). The
	// quota controller's first count of the new quota must happen while the
	// namespace is still empty: run during a learner's first burst of
	// kubectl apply, it counts from a cache that lags the creates, writes a
	// lower usage over the API server's own increments, and lets a sixth
	// Database in. So the namespace is handed over only after that count.
	// With no controller (minimal mode), or one that does not count
	// Databases in time (its discovery predates the CRD), oplab writes the
	// count of an empty namespace itself; a conflict means the controller
	// was first.
	if !n.NoQuotaController && n.countedByController(ctx, ns) {
		return nil
	}
	used := corev1.ResourceList{}
	for r := range hard {
		used[r] = resource.MustParse("0")
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if err := n.Client.Status().Update(ctx, q); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("write the status of quota %s: %w", QuotaName, err)
	}
	return nil
}

// countedByController waits, at most quotaCountWait, for the quota
// controller to list the Database count in the status of ns's quota.
func (n KubeNamespaces) countedByController(ctx context.Context, ns string) bool {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, quotaCountWait, true, func(ctx context.Context) (bool, error) {
		var q corev1.ResourceQuota
		if err := n.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: QuotaName}, &q); err != nil {
			return false, nil
		}
		_, counted := q.Status.Used[DatabaseQuotaResource]
		return counted, nil
	})
	return err == nil
}

// MarkActed annotates the namespace as used by its session.
func (n KubeNamespaces) MarkActed(ctx context.Context, name string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ActedAnnotation: "true"}}})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return client.IgnoreNotFound(n.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)))
}

// SaveLearner writes data (session.Saved's JSON) to the namespace's
// LearnerAnnotation.
func (n KubeNamespaces) SaveLearner(ctx context.Context, name string, data []byte) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{LearnerAnnotation: string(data)}}})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := n.Client.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("save the learner of namespace %s: %w", name, err)
	}
	return nil
}

// List returns this instance's lab namespaces (by label) that are not
// already being deleted.
func (n KubeNamespaces) List(ctx context.Context) ([]Namespace, error) {
	var list corev1.NamespaceList
	if err := n.Client.List(ctx, &list, client.MatchingLabels(n.labels())); err != nil {
		return nil, err
	}
	adopted, err := n.adoptUnlabelled(ctx)
	if err != nil {
		return nil, err
	}
	list.Items = append(list.Items, adopted...)
	out := []Namespace{}
	for _, ns := range list.Items {
		if ns.DeletionTimestamp != nil || !n.ours(&ns) || ns.Labels[RoleLabel] == RoleClass {
			continue
		}
		// A namespace that cannot be brought up to date (a permission
		// oplab lacks) still has its learner: the log names what is missing.
		if err := n.upgrade(ctx, &ns); err != nil && !apierrors.IsNotFound(err) {
			n.Logger.Error(permission.Explain(err), "Failed to make an older oplab's lab namespace a sandbox", "namespace", ns.Name)
		}
		out = append(out, Namespace{
			Name: ns.Name, Created: ns.CreationTimestamp.Time,
			CookieHash: ns.Annotations[CookieHashAnnotation], Acted: ns.Annotations[ActedAnnotation] == "true",
		})
		if l := ns.Annotations[LearnerAnnotation]; l != "" {
			out[len(out)-1].Learner = []byte(l)
		}
	}
	return out, nil
}

// upgrade makes a lab namespace an older oplab made the sandbox a new one
// is: its LimitRange, its quota's Pod and request caps, then the instance
// and Pod Security labels. Without it, the learners whose sessions outlive an
// upgrade keep a namespace where their kubectl can run a privileged Pod
// until their session ends. The labels go last, so that a namespace that
// has them has the rest; one that has them is left alone, so that a
// restart costs no writes.
func (n KubeNamespaces) upgrade(ctx context.Context, ns *corev1.Namespace) error {
	want := n.newLabels()
	if labelled(ns, want) {
		return nil
	}
	// The LimitRange and the quota are tried first, so that the labels,
	// which a later start takes to mean "done", come last; but a refusal
	// of either does not hold back the labels, which keep privileged Pods
	// out.
	errs := []error{n.createLimits(ctx, ns.Name), n.raiseQuota(ctx, ns.Name)}
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	for k, v := range want {
		ns.Labels[k] = v
	}
	if err := n.Client.Patch(ctx, ns, patch); err != nil {
		return errors.Join(append(errs, fmt.Errorf("label namespace %s with Pod Security %q: %w", ns.Name, PodSecurityLevel, err))...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n.Logger.Info("Made an older oplab's lab namespace a sandbox", "namespace", ns.Name, "podSecurity", PodSecurityLevel)
	return nil
}

// labelled reports whether ns carries every label of want.
func labelled(ns *corev1.Namespace, want map[string]string) bool {
	for k, v := range want {
		if ns.Labels[k] != v {
			return false
		}
	}
	return true
}

// raiseQuota writes the quota's hard caps of a new namespace into an
// existing one, or creates it: an older oplab's quota counted Databases
// only.
func (n KubeNamespaces) raiseQuota(ctx context.Context, ns string) error {
	var q corev1.ResourceQuota
	err := n.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: QuotaName}, &q)
	if apierrors.IsNotFound(err) {
		return n.createQuota(ctx, ns)
	}
	if err != nil {
		return fmt.Errorf("read quota %s: %w", QuotaName, err)
	}
	patch := client.MergeFrom(q.DeepCopy())
	q.Spec.Hard = n.quotaHard()
	if err := n.Client.Patch(ctx, &q, patch); err != nil {
		return fmt.Errorf("raise quota %s in namespace %s to a new namespace's caps: %w", QuotaName, ns, err)
	}
	return nil
}

// Delete deletes the namespace and, with it, everything in it; one already
// gone is fine, one of another instance is refused.
func (n KubeNamespaces) Delete(ctx context.Context, name string) error {
	return n.deleteOurs(ctx, name)
}
