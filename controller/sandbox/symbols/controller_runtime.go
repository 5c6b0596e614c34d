package symbols

// Written by hand rather than by `yaegi extract`: extracting
// controller-runtime's packages type-checks their whole dependency graph
// (the manager, the metrics server, client-go's transports), which takes
// tens of minutes, for a dozen symbols. The tables have no interface
// wrappers, which extract would add so that interpreted types can
// implement these interfaces: learner code never implements a client, it
// only calls the one it is given.

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

func init() {
	Symbols["sigs.k8s.io/controller-runtime/controllerruntime"] = map[string]reflect.Value{
		"Request": reflect.ValueOf((*controllerruntime.Request)(nil)),
		"Result":  reflect.ValueOf((*controllerruntime.Result)(nil)),
	}
	Symbols["sigs.k8s.io/controller-runtime/pkg/client/client"] = map[string]reflect.Value{
		// The interfaces learner code names.
		"Client":            reflect.ValueOf((*Client)(nil)),
		"Reader":            reflect.ValueOf((*client.Reader)(nil)),
		"Writer":            reflect.ValueOf((*client.Writer)(nil)),
		"StatusWriter":      reflect.ValueOf((*client.StatusWriter)(nil)),
		"SubResourceWriter": reflect.ValueOf((*client.SubResourceWriter)(nil)),
		"Object":            reflect.ValueOf((*client.Object)(nil)),
		"ObjectList":        reflect.ValueOf((*client.ObjectList)(nil)),
		"Patch":             reflect.ValueOf((*client.Patch)(nil)),
		"ObjectKey":         reflect.ValueOf((*client.ObjectKey)(nil)),
		"GetOption":         reflect.ValueOf((*client.GetOption)(nil)),
		"ListOption":        reflect.ValueOf((*client.ListOption)(nil)),
		"CreateOption":      reflect.ValueOf((*client.CreateOption)(nil)),
		"UpdateOption":      reflect.ValueOf((*client.UpdateOption)(nil)),
		"PatchOption":       reflect.ValueOf((*client.PatchOption)(nil)),
		"DeleteOption":      reflect.ValueOf((*client.DeleteOption)(nil)),
		// Options and helpers: pure functions and value types.
		"ObjectKeyFromObject":         reflect.ValueOf(client.ObjectKeyFromObject),
		"MergeFrom":                   reflect.ValueOf(client.MergeFrom),
		"MergeFromWithOptions":        reflect.ValueOf(client.MergeFromWithOptions),
		"MergeFromWithOptimisticLock": reflect.ValueOf((*client.MergeFromWithOptimisticLock)(nil)),
		"MergeFromOption":             reflect.ValueOf((*client.MergeFromOption)(nil)),
		"InNamespace":                 reflect.ValueOf((*client.InNamespace)(nil)),
		"MatchingLabels":              reflect.ValueOf((*client.MatchingLabels)(nil)),
		"HasLabels":                   reflect.ValueOf((*client.HasLabels)(nil)),
		"IgnoreNotFound":              reflect.ValueOf(client.IgnoreNotFound),
		"IgnoreAlreadyExists":         reflect.ValueOf(client.IgnoreAlreadyExists),
		"FieldOwner":                  reflect.ValueOf((*client.FieldOwner)(nil)),
		"PropagationPolicy":           reflect.ValueOf((*client.PropagationPolicy)(nil)),
		"GracePeriodSeconds":          reflect.ValueOf((*client.GracePeriodSeconds)(nil)),
	}
	Symbols["sigs.k8s.io/controller-runtime/pkg/controller/controllerutil/controllerutil"] = map[string]reflect.Value{
		"SetControllerReference": reflect.ValueOf(controllerutil.SetControllerReference),
		"SetOwnerReference":      reflect.ValueOf(controllerutil.SetOwnerReference),
		"AddFinalizer":           reflect.ValueOf(controllerutil.AddFinalizer),
		"RemoveFinalizer":        reflect.ValueOf(controllerutil.RemoveFinalizer),
		"ContainsFinalizer":      reflect.ValueOf(controllerutil.ContainsFinalizer),
		"CreateOrUpdate":         reflect.ValueOf(createOrUpdate),
		"CreateOrPatch":          reflect.ValueOf(createOrPatch),
		"MutateFn":               reflect.ValueOf((*controllerutil.MutateFn)(nil)),
		"OperationResult":        reflect.ValueOf((*controllerutil.OperationResult)(nil)),
		"OperationResultNone":    reflect.ValueOf(controllerutil.OperationResultNone),
		"OperationResultCreated": reflect.ValueOf(controllerutil.OperationResultCreated),
		"OperationResultUpdated": reflect.ValueOf(controllerutil.OperationResultUpdated),
		"AlreadyOwnedError":      reflect.ValueOf((*controllerutil.AlreadyOwnedError)(nil)),
	}
}

// Client is what learner code knows as client.Client. It is a struct that
// embeds an interface rather than the interface itself because yaegi
// v0.16.1 calls a method promoted from an embedded binary interface with
// its arguments shifted by one ("cannot use type context.Context as type
// types.NamespacedName" for r.Get(ctx, …) on a struct embedding
// client.Client), while methods promoted from a binary struct work.
//
// It has every method of client.Client but Scheme: yaegi takes the
// kubebuilder reconciler's own Scheme field and a promoted Scheme method
// for an ambiguous selector, where Go picks the shallower field. The
// helpers that take a client.Client (CreateOrUpdate, CreateOrPatch) take a
// Client here and pass on the whole client.
type Client struct {
	clientWithoutScheme
	full client.Client
}

type clientWithoutScheme interface {
	client.Reader
	client.Writer
	client.StatusClient
	client.SubResourceClientConstructor
	RESTMapper() meta.RESTMapper
	GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error)
	IsObjectNamespaced(obj runtime.Object) (bool, error)
}

// NewClient wraps c for learner code.
func NewClient(c client.Client) Client { return Client{clientWithoutScheme: c, full: c} }

func createOrUpdate(ctx context.Context, c Client, obj client.Object, f controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	return controllerutil.CreateOrUpdate(ctx, c.full, obj, f)
}

func createOrPatch(ctx context.Context, c Client, obj client.Object, f controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	return controllerutil.CreateOrPatch(ctx, c.full, obj, f)
}
