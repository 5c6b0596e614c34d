package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// QuotaName is the ResourceQuota in every lab namespace that caps its
// Databases.
const QuotaName = "databases"

// DatabaseQuotaResource is the object-count quota resource of Databases
// (count/<plural>.<group>).
const DatabaseQuotaResource corev1.ResourceName = "count/databases.db.oplab.dev"

// KubeNamespaces creates and deletes lab namespaces in the cluster: the
// Namespaces a Manager needs.
type KubeNamespaces struct {
	Client client.Client
	// MaxDatabases is the value of each namespace's Database quota; default 5.
	MaxDatabases int
	// Prefix is the Manager's namespace prefix; it decides the InstanceLabel
	// the namespaces get and the only ones List and Delete touch. Default
	// NamespacePrefix.
	Prefix string
	// NoQuotaController says the cluster runs no ResourceQuota controller
	// (the embedded minimal mode): Create writes the new quota's status
	// itself at once instead of waiting for the controller's first count.
	NoQuotaController bool
}

// quotaCountWait bounds how long Create waits for the quota controller's
// first count of a new quota before writing the status itself.
const quotaCountWait = 5 * time.Second

var _ Namespaces = KubeNamespaces{}

// Create creates the namespace, labelled as a lab namespace and annotated
// with the cookie hash, and its Database quota; existing ones are fine.
// The cap is a ResourceQuota so that the API server enforces it for every
// client, kubectl included, not only for the lab's forms.
func (n KubeNamespaces) Create(ctx context.Context, name, cookieHash string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: n.labels(),
		Annotations: map[string]string{CookieHashAnnotation: cookieHash},
	}}
	if err := client.IgnoreAlreadyExists(n.Client.Create(ctx, ns)); err != nil {
		return err
	}
	return n.createQuota(ctx, name)
}

func (n KubeNamespaces) createQuota(ctx context.Context, ns string) error {
	maxDBs := n.MaxDatabases
	if maxDBs <= 0 {
		maxDBs = 5
	}
	hard := corev1.ResourceList{DatabaseQuotaResource: resource.MustParse(strconv.Itoa(maxDBs))}
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
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{DatabaseQuotaResource: resource.MustParse("0")}}
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
		if ns.DeletionTimestamp != nil || !n.ours(&ns) {
			continue
		}
		out = append(out, Namespace{
			Name: ns.Name, Created: ns.CreationTimestamp.Time,
			CookieHash: ns.Annotations[CookieHashAnnotation], Acted: ns.Annotations[ActedAnnotation] == "true",
		})
	}
	return out, nil
}

// Delete deletes the namespace and, with it, everything in it; one already
// gone is fine, one of another instance is refused.
func (n KubeNamespaces) Delete(ctx context.Context, name string) error {
	return n.deleteOurs(ctx, name)
}
