package lab

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/labns"
)

// Store is every change the lab makes in the cluster. Each method acts in
// one namespace, the caller's lab namespace, and returns the API server's
// error unchanged so the page can show it as the server worded it.
type Store interface {
	CountDatabases(ctx context.Context, ns string) (int, error)
	CreateDatabase(ctx context.Context, ns string, in CreateInput) error
	EditDatabase(ctx context.Context, ns, name string, in EditInput) error
	DeleteDatabase(ctx context.Context, ns, name string) error
	SetPitfall(ctx context.Context, ns, name, pitfall string) error
	SetPods(ctx context.Context, ns, name, mode string) error
	RemoveFinalizers(ctx context.Context, ns, name string) error
	DeleteChild(ctx context.Context, ns, name string, kind ChildKind) error
	ScaleStatefulSet(ctx context.Context, ns, name string, replicas int32) error
	// CreateUnownedService makes a headless Service that no Database owns,
	// as another actor would: the already-exists scenario's starting point.
	CreateUnownedService(ctx context.Context, ns, name string, port int32) error
}

// KubeStore is the Store over a controller-runtime client that talks to the
// API server directly (not through a cache), so a write is checked against
// the latest state.
type KubeStore struct {
	Client client.Client
}

var _ Store = KubeStore{}

// NewDatabase returns the Database a CreateInput describes: the object the
// YAML preview shows and CreateDatabase creates.
func NewDatabase(ns string, in CreateInput) *v1alpha1.Database {
	db := &v1alpha1.Database{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Database"},
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Namespace: ns},
		Spec: v1alpha1.DatabaseSpec{
			Engine: v1alpha1.Engine(in.Engine), Version: in.Version, Replicas: in.Replicas,
		},
	}
	if in.Pitfall != "" {
		db.Annotations = map[string]string{controller.PitfallAnnotation: in.Pitfall}
	}
	return db
}

// CountDatabases counts the Databases in ns.
func (s KubeStore) CountDatabases(ctx context.Context, ns string) (int, error) {
	var list v1alpha1.DatabaseList
	if err := s.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("list Databases in %s: %w", ns, err)
	}
	return len(list.Items), nil
}

// CreateDatabase creates the Database in describes.
func (s KubeStore) CreateDatabase(ctx context.Context, ns string, in CreateInput) error {
	return s.Client.Create(ctx, NewDatabase(ns, in))
}

// EditDatabase changes the fields in sets with a merge patch, which touches
// only those; an empty version removes the field so the engine's default
// applies.
func (s KubeStore) EditDatabase(ctx context.Context, ns, name string, in EditInput) error {
	spec := map[string]any{}
	if in.Replicas != nil {
		spec["replicas"] = *in.Replicas
	}
	if in.Version != nil {
		spec["version"] = nil
		if *in.Version != "" {
			spec["version"] = *in.Version
		}
	}
	return s.mergePatch(ctx, database(ns, name), map[string]any{"spec": spec})
}

// DeleteDatabase asks for deletion; with the finalizer in place the
// Database then stays, Terminating, until the controller has cleaned up.
func (s KubeStore) DeleteDatabase(ctx context.Context, ns, name string) error {
	return s.Client.Delete(ctx, database(ns, name))
}

// SetPitfall switches a pitfall on, or off when pitfall is "". Either way
// the learner chose it, so a hidden pitfall is hidden no more.
func (s KubeStore) SetPitfall(ctx context.Context, ns, name, pitfall string) error {
	var value any
	if pitfall != "" {
		value = pitfall
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		controller.PitfallAnnotation: value, controller.PitfallHiddenAnnotation: nil,
	}}}
	return s.mergePatch(ctx, database(ns, name), patch)
}

// SetPods sets the Database's pods mode (controller.PodsAnnotation), or
// removes it when mode is "".
func (s KubeStore) SetPods(ctx context.Context, ns, name, mode string) error {
	var value any
	if mode != "" {
		value = mode
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{controller.PodsAnnotation: value}}}
	return s.mergePatch(ctx, database(ns, name), patch)
}

// RemoveFinalizers is the escape hatch, the equivalent of
// kubectl patch database NAME --type=merge -p '{"metadata":{"finalizers":null}}'.
func (s KubeStore) RemoveFinalizers(ctx context.Context, ns, name string) error {
	_, err := labns.RemoveFinalizers(ctx, s.Client, database(ns, name))
	return err
}

// DeleteChild deletes the child of the given kind that the Database owns.
// It finds the child by ownerReference, as the garbage collector would,
// rather than by a naming convention.
func (s KubeStore) DeleteChild(ctx context.Context, ns, name string, kind ChildKind) error {
	child, err := s.ownedChild(ctx, ns, name, kind)
	if err != nil {
		return err
	}
	return s.Client.Delete(ctx, child)
}

// ScaleStatefulSet sets the replicas of the Database's StatefulSet behind
// the controller's back: drift the next reconcile should undo.
func (s KubeStore) ScaleStatefulSet(ctx context.Context, ns, name string, replicas int32) error {
	child, err := s.ownedChild(ctx, ns, name, ChildStatefulSet)
	if err != nil {
		return err
	}
	return s.mergePatch(ctx, child, map[string]any{"spec": map[string]any{"replicas": replicas}})
}

// CreateUnownedService creates a headless Service with no labels and no
// owner, so the controller's cache (which holds only the children it
// labelled) does not see it and its Create meets AlreadyExists. It selects
// other Pods than the Database's: a headless Service without a selector
// would be given both IP families, which a single-stack cluster refuses to
// keep once the controller adds its selector.
func (s KubeStore) CreateUnownedService(ctx context.Context, ns, name string, port int32) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{"app": "made-by-hand"},
			Ports:     []corev1.ServicePort{{Name: "made-by-hand", Port: port, Protocol: corev1.ProtocolTCP}},
		},
	}
	return s.Client.Create(ctx, svc)
}

func (s KubeStore) ownedChild(ctx context.Context, ns, name string, kind ChildKind) (client.Object, error) {
	var db v1alpha1.Database
	if err := s.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &db); err != nil {
		return nil, err
	}
	list, items := listFor(kind)
	if err := s.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list %ss in %s: %w", kind, ns, err)
	}
	for _, o := range items() {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.UID == db.UID {
			return o, nil
		}
	}
	return nil, &FieldError{Field: "kind", Message: fmt.Sprintf("Database %s owns no %s right now (already deleted? the controller recreates it on its next reconcile)", name, kind)}
}

// listFor returns an empty list of kind and a function reading its items.
// Secrets are listed as metadata only: the lab never reads Secret data.
func listFor(kind ChildKind) (client.ObjectList, func() []client.Object) {
	switch kind {
	case ChildStatefulSet:
		l := &appsv1.StatefulSetList{}
		return l, func() []client.Object { return objects(l.Items) }
	case ChildService:
		l := &corev1.ServiceList{}
		return l, func() []client.Object { return objects(l.Items) }
	default:
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		return l, func() []client.Object {
			out := objects(l.Items)
			for _, o := range out {
				o.(*metav1.PartialObjectMetadata).SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
			}
			return out
		}
	}
}

// objects returns pointers to items as client.Objects.
func objects[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

func database(ns, name string) *v1alpha1.Database {
	return &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func (s KubeStore) mergePatch(ctx context.Context, obj client.Object, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	return s.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b))
}
