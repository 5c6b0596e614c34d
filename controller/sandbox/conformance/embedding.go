package conformance

import (
	"context"
	"fmt"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type base struct {
	id   int
	kind string
}

func (b base) describe() string { return fmt.Sprint(b.kind, "#", b.id) }

func (b *base) renumber(n int) { b.id = n }

type named struct {
	base
	kind string // shadows base.kind
}

// EmbeddingPromotedFieldsAndMethods reads promoted fields, a shadowing
// field and promoted methods, value and pointer.
func EmbeddingPromotedFieldsAndMethods() string {
	n := named{base: base{id: 1, kind: "inner"}, kind: "outer"}
	n.renumber(2)
	n.id++
	return fmt.Sprint(n.kind, " ", n.base.kind, " ", n.describe(), " ", n.id)
}

type owner struct {
	*base
}

// EmbeddingPointer promotes through an embedded pointer.
func EmbeddingPointer() string {
	b := &base{id: 5, kind: "p"}
	o := owner{b}
	o.renumber(6)
	o.kind = "q"
	return fmt.Sprint(b.describe(), " ", o.describe())
}

type objectMetaHolder struct {
	metav1.ObjectMeta
	note string
}

// EmbeddingAPIStructs embeds ObjectMeta and uses its promoted methods
// and fields, as every API type does.
func EmbeddingAPIStructs() string {
	h := objectMetaHolder{note: "n"}
	h.Name = "shop"
	h.SetNamespace("ns")
	h.SetFinalizers(append(h.GetFinalizers(), "db.oplab.dev/final-snapshot"))
	db := dbv1.Database{}
	db.Name = "x"
	db.Spec.Replicas = 2
	var obj metav1.Object = &db
	return fmt.Sprint(h.GetName(), " ", h.GetNamespace(), " ", len(h.Finalizers), " ", obj.GetName(), db.Spec.Replicas, h.note)
}

type reconciler struct {
	client.Client
	prefix string
}

func (r *reconciler) fetch(ctx context.Context, key types.NamespacedName) string {
	var db dbv1.Database
	if err := r.Get(ctx, key, &db); err != nil {
		return r.prefix + fmt.Sprint(apierrors.IsNotFound(err))
	}
	return r.prefix + db.Name + fmt.Sprint(db.Spec.Replicas)
}

// EmbeddingClient calls the client's methods promoted through a struct
// that embeds client.Client, as the kubebuilder reconciler does, and
// through a method value.
func EmbeddingClient(ctx context.Context, c client.Client) string {
	r := &reconciler{Client: c, prefix: "got:"}
	found := r.fetch(ctx, types.NamespacedName{Namespace: "learner", Name: "shop"})
	missing := r.fetch(ctx, types.NamespacedName{Namespace: "learner", Name: "none"})
	get := r.Get
	var db dbv1.Database
	err := get(ctx, client.ObjectKey{Namespace: "learner", Name: "shop"}, &db)
	var list dbv1.DatabaseList
	lerr := r.List(ctx, &list, client.InNamespace("learner"))
	return fmt.Sprint(found, " ", missing, " ", err, db.Spec.Replicas, " ", lerr, len(list.Items))
}
