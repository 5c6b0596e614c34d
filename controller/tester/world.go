package tester

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// dbName is the Database every schedule creates.
const dbName = "db"

// world is one schedule's scratch namespace as the user and the tester
// see it: the user's actions, made with oplab's own client as the lab's
// forms make them, and the state the oracle reads.
type world struct {
	ns string
	c  client.Client
	// changes signals a watch event in the namespace since the last
	// drain: what wakes a controller.
	changes chan struct{}
	// uid is the Database's, once created (the last one, after a delete
	// and create again).
	uid types.UID
}

// watch starts watches of the Database and the kinds the code writes in
// w's namespace, until ctx ends, signalling each event on the channel it
// returns (which holds one signal: many events, one wake-up, as a work
// queue coalesces them).
func (w *world) watch(ctx context.Context, wc client.WithWatch) (chan struct{}, error) {
	changes := make(chan struct{}, 1)
	for _, list := range []client.ObjectList{&dbv1.DatabaseList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{},
		&corev1.SecretList{}, &corev1.ConfigMapList{}} {
		wi, err := wc.Watch(ctx, list, client.InNamespace(w.ns))
		if err != nil {
			return nil, fmt.Errorf("watching the scratch namespace %s: %w", w.ns, err)
		}
		go func() {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case e, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					if e.Type == watch.Bookmark {
						continue
					}
					select {
					case changes <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return changes, nil
}

// drain forgets the events signalled so far.
func (w *world) drain() {
	select {
	case <-w.changes:
	default:
	}
}

// The user's actions.

func (w *world) create(ctx context.Context) error {
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: dbName},
		Spec: dbv1.DatabaseSpec{Engine: dbv1.EnginePostgres, Replicas: 1}}
	if err := w.c.Create(ctx, db); err != nil {
		return fmt.Errorf("creating Database %s: %w", dbName, err)
	}
	w.uid = db.UID
	return nil
}

func (w *world) scale(ctx context.Context, replicas int32) error {
	return w.merge(ctx, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
}

func (w *world) respec(ctx context.Context) error {
	return w.merge(ctx, `{"spec":{"storage":"2Gi"}}`)
}

func (w *world) merge(ctx context.Context, patch string) error {
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: dbName}}
	if err := w.c.Patch(ctx, db, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("patching Database %s with %s: %w", dbName, patch, err)
	}
	return nil
}

func (w *world) delete(ctx context.Context) error {
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: dbName}}
	if err := w.c.Delete(ctx, db); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Database %s: %w", dbName, err)
	}
	return nil
}

// deleteChild deletes a child by hand, as drift.
func (w *world) deleteChild(ctx context.Context, c child) error {
	obj := newOf(c.kind)
	obj.SetNamespace(w.ns)
	obj.SetName(c.name)
	if err := w.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s by hand: %w", c.kind, c.name, err)
	}
	return nil
}

// editStatefulSet scales a StatefulSet behind the reconciler's back.
func (w *world) editStatefulSet(ctx context.Context, name string, replicas int32) error {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
	if err := w.c.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))); err != nil {
		return fmt.Errorf("scaling StatefulSet %s to %d by hand: %w", name, replicas, err)
	}
	return nil
}

func newOf(kind string) client.Object {
	switch kind {
	case "StatefulSet":
		return &appsv1.StatefulSet{}
	case "Service":
		return &corev1.Service{}
	case "Secret":
		return &corev1.Secret{}
	}
	return &corev1.ConfigMap{}
}

// What the oracle reads.

// child is an object of a kind the learner's code writes, as the oracle
// sees it.
type child struct {
	kind, name string
	// owner is its controller owner's kind and name, "" when none, and
	// ownerUID that owner's uid.
	owner    string
	ownerUID types.UID
	// replicas is a StatefulSet's.
	replicas *int32
}

func (c child) String() string { return c.kind + " " + c.name }

// state is the namespace as the oracle reads it after a phase.
type state struct {
	db       *dbv1.Database // nil: gone
	children []child
	// snapshot is the final snapshot ConfigMap, if any.
	snapshot *corev1.ConfigMap
	// objects is every object read, for the trace's history.
	objects []client.Object
}

// clusterOwned are objects the cluster makes in every namespace.
func clusterOwned(kind, name string) bool {
	return kind == "ConfigMap" && name == "kube-root-ca.crt"
}

func (w *world) read(ctx context.Context) (state, error) {
	var st state
	db := &dbv1.Database{}
	switch err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: dbName}, db); {
	case err == nil:
		st.db = db
		st.objects = append(st.objects, db)
	case !apierrors.IsNotFound(err):
		return st, err
	}
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{"StatefulSet", &appsv1.StatefulSetList{}}, {"Service", &corev1.ServiceList{}},
		{"Secret", &corev1.SecretList{}}, {"ConfigMap", &corev1.ConfigMapList{}},
	}
	for _, l := range lists {
		if err := w.c.List(ctx, l.list, client.InNamespace(w.ns)); err != nil {
			return st, err
		}
		items, err := meta.ExtractList(l.list)
		if err != nil {
			return st, err
		}
		for _, it := range items {
			obj := it.(client.Object)
			if clusterOwned(l.kind, obj.GetName()) {
				continue
			}
			if s, ok := obj.(*corev1.Secret); ok && s.Type == corev1.SecretTypeServiceAccountToken {
				continue
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == controller.SnapshotName(dbName) {
				st.snapshot = cm
				st.objects = append(st.objects, cm)
				continue
			}
			c := child{kind: l.kind, name: obj.GetName()}
			if ref := metav1.GetControllerOf(obj); ref != nil {
				c.owner, c.ownerUID = ref.Kind+" "+ref.Name, ref.UID
			}
			if s, ok := obj.(*appsv1.StatefulSet); ok {
				c.replicas = s.Spec.Replicas
			}
			st.children = append(st.children, c)
			st.objects = append(st.objects, obj)
		}
	}
	sort.Slice(st.children, func(i, j int) bool { return st.children[i].String() < st.children[j].String() })
	return st, nil
}

// settled reports whether a phase's goal is reached: the Database Ready at
// its generation, or gone.
func settled(st state, gone bool) (bool, string) {
	if gone {
		if st.db != nil {
			return false, "the Database is still there (finalizers " + strings.Join(st.db.Finalizers, ", ") + ")"
		}
		return true, ""
	}
	if st.db == nil {
		return false, "the Database is gone"
	}
	ready := meta.FindStatusCondition(st.db.Status.Conditions, "Ready")
	switch {
	case ready == nil:
		return false, "no Ready condition"
	case ready.Status != metav1.ConditionTrue:
		return false, fmt.Sprintf("Ready is %s (%s)", ready.Status, ready.Reason)
	case st.db.Status.ObservedGeneration != st.db.Generation:
		return false, fmt.Sprintf("observedGeneration %d, generation %d", st.db.Status.ObservedGeneration, st.db.Generation)
	}
	return true, ""
}

// names lists children as "Kind name".
func names(cs []child) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// waitCollected waits, at most d, for the garbage collector to remove the
// children of a gone Database: its own work, not the reconciler's.
func (w *world) waitCollected(ctx context.Context, d time.Duration) (state, error) {
	end := time.Now().Add(d)
	for {
		st, err := w.read(ctx)
		if err != nil {
			return st, err
		}
		owned := slices.ContainsFunc(st.children, func(c child) bool { return c.ownerUID != "" })
		if !owned || time.Now().After(end) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
