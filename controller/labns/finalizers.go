package labns

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// ClearFinalizers removes every finalizer from the objects being deleted in
// namespace ns, of every resource the API server lists there, and returns
// how many objects it changed. It is the way out when the finalizers'
// owners will not act (a learner's made-up finalizer, a stopped
// controller): nothing they would have done (a Database's final snapshot)
// happens.
func ClearFinalizers(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, ns string) (int, error) {
	lists, err := disc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return 0, fmt.Errorf("discover the resources of namespace %s: %w", ns, err)
	}
	var errs []error
	n := 0
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !hasVerbs(res.Verbs, "list", "patch") {
				continue
			}
			ri := dyn.Resource(gv.WithResource(res.Name)).Namespace(ns)
			objs, lerr := ri.List(ctx, metav1.ListOptions{})
			if lerr != nil {
				if !apierrors.IsNotFound(lerr) && !apierrors.IsForbidden(lerr) && !apierrors.IsMethodNotSupported(lerr) {
					errs = append(errs, fmt.Errorf("list %s in %s: %w", res.Name, ns, lerr))
				}
				continue
			}
			for _, obj := range objs.Items {
				if obj.GetDeletionTimestamp() == nil || len(obj.GetFinalizers()) == 0 {
					continue
				}
				if perr := clearOne(ctx, ri, &obj); perr != nil {
					errs = append(errs, perr)
					continue
				}
				n++
			}
		}
	}
	return n, errors.Join(errs...)
}

// clearOne removes obj's finalizers, on the version read (a JSON patch that
// tests resourceVersion would refuse a change made meanwhile; a merge patch
// with the UID precondition is enough here: the finalizers go either way).
func clearOne(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	patch := fmt.Appendf(nil, `{"metadata":{"uid":%q,"finalizers":null}}`, obj.GetUID())
	_, err := ri.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove the finalizers %v of %s %s: %w", obj.GetFinalizers(), obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range verbs {
			if v == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
