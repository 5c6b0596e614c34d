package labns

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// An ended session's namespace is deleted with everything in it, so what
// its learner did is kept elsewhere: in the instance's class namespace,
// <prefix>class, one ConfigMap per ended session. The class namespace is
// labelled as the instance's lab namespaces are (oplab may write only
// there), and RoleLabel=class, which List, Restore and Reclaim skip. No
// learner has a binding there, and its quota lets nothing run.

// RoleLabel marks a namespace of the instance that is not a learner's.
const RoleLabel = "oplab.dev/role"

// RoleClass is RoleLabel's value on the class namespace.
const RoleClass = "class"

// endedLabel marks the ConfigMaps of ended sessions.
const endedLabel = "oplab.dev/ended"

// Keys of an ended session's ConfigMap.
const (
	endedKey  = "ended.json"
	exportKey = "export.json.gz"
)

// MaxKeptExport bounds an ended session's export, compressed: a
// ConfigMap holds 1 MiB at most, and the record beside it a few KiB.
const MaxKeptExport = 900 << 10

// ClassNamespace is the name of the instance's class namespace. A
// learner's is the prefix and eight random characters; "class" has five,
// so no learner's namespace ever takes this name.
func (n KubeNamespaces) ClassNamespace() string { return n.prefix() + "class" }

// ensureClass makes the class namespace, with oplab's RoleBindings and a
// quota that lets nothing run there; an existing one is fine.
func (n KubeNamespaces) ensureClass(ctx context.Context) error {
	name := n.ClassNamespace()
	var ns corev1.Namespace
	if err := n.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err == nil && ns.DeletionTimestamp == nil {
		return nil
	}
	labels := n.newLabels()
	maps.Copy(labels, map[string]string{RoleLabel: RoleClass})
	ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := client.IgnoreAlreadyExists(n.Client.Create(ctx, &ns)); err != nil {
		return fmt.Errorf("create the class namespace %s: %w", name, err)
	}
	if err := n.bindSelf(ctx, name); err != nil {
		return err
	}
	zero := resource.MustParse("0")
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: zero, DatabaseQuotaResource: zero}},
	}
	if err := client.IgnoreAlreadyExists(n.Client.Create(ctx, q)); err != nil {
		return fmt.Errorf("create the quota of the class namespace %s: %w", name, err)
	}
	return nil
}

func endedName(namespace string) string { return "ended-" + namespace }

// Keep saves an ended session's record (data, session.Ended's JSON) and,
// when not nil, its export, compressed, in the class namespace; a second
// Keep of the same namespace replaces the record and keeps an export
// already there when given none.
func (n KubeNamespaces) Keep(ctx context.Context, namespace string, data, export []byte) error {
	if err := n.ensureClass(ctx); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: endedName(namespace), Namespace: n.ClassNamespace(),
		Labels: map[string]string{endedLabel: "true"}}, Data: map[string]string{endedKey: string(data)}}
	if export != nil {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(export) // a bytes.Buffer does not fail
		_ = zw.Close()
		if b.Len() > MaxKeptExport {
			return fmt.Errorf("the export of namespace %s is %d KiB compressed, more than the %d KiB kept", namespace, b.Len()>>10, MaxKeptExport>>10)
		}
		cm.BinaryData = map[string][]byte{exportKey: b.Bytes()}
	}
	err := n.Client.Create(ctx, cm)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("keep the ended session of %s: %w", namespace, err)
		}
		return nil
	}
	var old corev1.ConfigMap
	if err := n.Client.Get(ctx, client.ObjectKeyFromObject(cm), &old); err != nil {
		return fmt.Errorf("keep the ended session of %s: %w", namespace, err)
	}
	old.Data = cm.Data
	if export != nil {
		old.BinaryData = cm.BinaryData
	}
	if err := n.Client.Update(ctx, &old); err != nil {
		return fmt.Errorf("keep the ended session of %s: %w", namespace, err)
	}
	return nil
}

// Kept returns the records of every ended session kept (session.Ended's
// JSON each), without their exports.
func (n KubeNamespaces) Kept(ctx context.Context) ([][]byte, error) {
	// Before the first session ended there is no class namespace, and
	// oplab's RoleBindings to list in it are not there either.
	if err := n.Client.Get(ctx, client.ObjectKey{Name: n.ClassNamespace()}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		return nil, nil
	}
	var list corev1.ConfigMapList
	err := n.Client.List(ctx, &list, client.InNamespace(n.ClassNamespace()), client.MatchingLabels{endedLabel: "true"})
	if err != nil {
		return nil, fmt.Errorf("list the ended sessions kept in %s: %w", n.ClassNamespace(), err)
	}
	out := make([][]byte, 0, len(list.Items))
	for _, cm := range list.Items {
		if d := cm.Data[endedKey]; d != "" {
			out = append(out, []byte(d))
		}
	}
	return out, nil
}

// Export returns the export kept with namespace's ended session,
// decompressed; nil when none was kept.
func (n KubeNamespaces) Export(ctx context.Context, namespace string) ([]byte, error) {
	var cm corev1.ConfigMap
	if err := n.Client.Get(ctx, client.ObjectKey{Namespace: n.ClassNamespace(), Name: endedName(namespace)}, &cm); err != nil {
		return nil, fmt.Errorf("read the export kept of %s: %w", namespace, err)
	}
	gz := cm.BinaryData[exportKey]
	if gz == nil {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("read the export kept of %s: %w", namespace, err)
	}
	return io.ReadAll(io.LimitReader(zr, 64<<20))
}

// Forget deletes what is kept of namespace's ended session.
func (n KubeNamespaces) Forget(ctx context.Context, namespace string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: endedName(namespace), Namespace: n.ClassNamespace()}}
	if err := client.IgnoreNotFound(n.Client.Delete(ctx, cm)); err != nil {
		return fmt.Errorf("forget the ended session of %s: %w", namespace, err)
	}
	return nil
}

// ReleaseDatabases removes the controller's finalizer from every Database
// in namespace ns, which its session's end is about to delete: the
// controller no longer reconciles it (controller.Runner.EndNamespace), and
// a final snapshot there would go with the namespace. Without it the
// namespace would wait, Terminating, for a finalizer nobody removes.
func (n KubeNamespaces) ReleaseDatabases(ctx context.Context, ns string) error {
	var list v1alpha1.DatabaseList
	if err := n.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("list the Databases of %s: %w", ns, err)
	}
	var errs []error
	for i := range list.Items {
		db := &list.Items[i]
		if !controllerutil.ContainsFinalizer(db, controller.Finalizer) {
			continue
		}
		patch := client.MergeFrom(db.DeepCopy())
		controllerutil.RemoveFinalizer(db, controller.Finalizer)
		if err := client.IgnoreNotFound(n.Client.Patch(ctx, db, patch)); err != nil {
			errs = append(errs, fmt.Errorf("release Database %s/%s: %w", ns, db.Name, err))
		}
	}
	return errors.Join(errs...)
}
