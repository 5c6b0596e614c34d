package labns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher patches an object in the cluster: a controller-runtime client.
type Patcher interface {
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error
}

// RemoveFinalizers takes obj's finalizers off, all of them, or all but
// keep, in one merge patch: the way out when their owners will not act (a
// learner's made-up finalizer, a stopped controller), as
//
//	kubectl patch KIND NAME --type=merge -p '{"metadata":{"finalizers":null}}'
//
// does. Nothing the finalizers' owners would have done (a Database's final
// snapshot) happens. It is the one way oplab removes finalizers: the
// challenges' Start, the lab's button, the roster's way out of a failed
// reset and a namespace held Terminating (ClearFinalizers) all call it.
//
// obj names the object (its namespace and name) and, when it carries one,
// its UID: the patch then changes that object only, never one made again
// with the same name (the API server answers a conflict). With keep, obj
// must carry the finalizers and resourceVersion read: those not kept are
// taken off that version only, so a finalizer added or removed meanwhile
// is never undone (a conflict again), and with none to take off nothing
// is sent. It returns the finalizers obj listed that it took off. An
// object already gone is an error apierrors.IsNotFound reports.
func RemoveFinalizers(ctx context.Context, p Patcher, obj client.Object, keep ...string) ([]string, error) {
	// In this order, the UID first: the same bytes the roster and the
	// namespace's clean-up sent before they called this.
	var meta struct {
		UID             types.UID `json:"uid,omitempty"`
		ResourceVersion string    `json:"resourceVersion,omitempty"`
		Finalizers      []string  `json:"finalizers"` // nil: null, all of them go
	}
	meta.UID = obj.GetUID()
	removed := obj.GetFinalizers()
	if len(keep) > 0 {
		meta.Finalizers = slices.DeleteFunc(slices.Clone(removed), func(f string) bool { return !slices.Contains(keep, f) })
		removed = slices.DeleteFunc(slices.Clone(removed), func(f string) bool { return slices.Contains(keep, f) })
		if len(removed) == 0 {
			return nil, nil
		}
		meta.ResourceVersion = obj.GetResourceVersion()
	}
	data, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("encode the finalizers' patch: %w", err)
	}
	if err := p.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		what := "the finalizers"
		if len(removed) > 0 {
			what = fmt.Sprintf("the finalizers %v", removed)
		}
		return nil, fmt.Errorf("remove %s of %s %s: %w", what, kindOf(obj), obj.GetName(), err)
	}
	return removed, nil
}

// kindOf names obj's kind for a message: its own, or its Go type's.
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := fmt.Sprintf("%T", obj)
	return t[strings.LastIndex(t, ".")+1:]
}

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

// clearOne removes obj's finalizers (RemoveFinalizers, with the UID
// precondition: the finalizers go whatever the version, but only this
// object's).
func clearOne(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := RemoveFinalizers(ctx, dynamicPatcher{ri}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// dynamicPatcher is a Patcher of one resource through the dynamic client,
// for the kinds ClearFinalizers finds by discovery.
type dynamicPatcher struct{ ri dynamic.ResourceInterface }

func (d dynamicPatcher) Patch(ctx context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	_, err = d.ri.Patch(ctx, obj.GetName(), patch.Type(), data, metav1.PatchOptions{})
	return err
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(verbs, w) {
			return false
		}
	}
	return true
}
