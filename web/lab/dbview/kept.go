// The snapshots kept after a delete, as the state watcher's owner
// goroutine tracks them: the final-snapshot ConfigMaps listed, and the
// Databases deleted without one (lost), per namespace.

package dbview

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// refreshKept publishes the snapshots of ns whose Database is gone, and a
// nil state for those no longer kept (deleted, or their Database is back,
// which shows the snapshot in its owner tree again).
func (o *owner) refreshKept(ctx context.Context, ns string) {
	var cms corev1.ConfigMapList
	// Every ConfigMap of ns: a learner's own code may write its snapshots
	// without oplab's label.
	if err := o.w.opts.Cache.List(ctx, &cms, client.InNamespace(ns)); err != nil {
		o.w.opts.Logger.Error(err, "Failed to list ConfigMaps", "namespace", ns)
		return
	}
	var dbs v1alpha1.DatabaseList
	if err := o.w.opts.Cache.List(ctx, &dbs, client.InNamespace(ns)); err != nil {
		o.w.opts.Logger.Error(err, "Failed to list Databases", "namespace", ns)
		return
	}
	present := map[string]bool{}
	for _, db := range dbs.Items {
		present[db.Name] = true
	}
	for _, db := range o.gone[ns] {
		if !snapshotTaken(db, cms.Items) {
			o.addLost(lostSnapshot(db, o.w.opts.Now(), o.w.opts.YourCode != nil && o.w.opts.YourCode(ns)))
		}
	}
	delete(o.gone, ns)
	shown, answered := withLost(keptSnapshots(cms.Items, present), o.lostIn(ns), cms.Items)
	for _, s := range answered {
		delete(o.lost, types.NamespacedName{Namespace: ns, Name: s.Name})
	}
	now := map[types.NamespacedName]bool{}
	for _, s := range shown {
		key := types.NamespacedName{Namespace: ns, Name: s.Name}
		now[key] = true
		o.publishKept(key, s)
	}
	for key := range o.kept {
		if key.Namespace == ns && !now[key] {
			delete(o.kept, key)
			delete(o.keptJSON, key)
			o.w.opts.Publisher.PublishRendered(snapshotRef(key), nil, nil)
		}
	}
}

// addLost remembers s, a Database gone without a snapshot, in place of an
// earlier one of that name; beyond maxLost in its namespace, or maxLostAll
// in all, the oldest are forgotten.
func (o *owner) addLost(s Snapshot) {
	o.lost[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	if l := o.lostIn(s.Namespace); len(l) > maxLost {
		o.dropOldest(l, len(l)-maxLost)
	}
	if len(o.lost) > maxLostAll {
		all := make([]Snapshot, 0, len(o.lost))
		for _, l := range o.lost {
			all = append(all, l)
		}
		o.dropOldest(all, len(all)-maxLostAll)
	}
}

func (o *owner) dropOldest(l []Snapshot, n int) {
	slices.SortFunc(l, func(a, b Snapshot) int { return a.Time.Compare(b.Time) })
	for _, s := range l[:n] {
		delete(o.lost, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
	}
}

func (o *owner) lostIn(ns string) []Snapshot {
	var out []Snapshot
	for key, s := range o.lost {
		if key.Namespace == ns {
			out = append(out, s)
		}
	}
	return out
}

func snapshotRef(key types.NamespacedName) controller.ObjectRef {
	return controller.ObjectRef{Kind: "ConfigMap", Namespace: key.Namespace, Name: key.Name}
}

// publishKept sends s unless it is what was sent last.
func (o *owner) publishKept(key types.NamespacedName, s Snapshot) {
	o.kept[key] = s
	b, err := json.Marshal(s)
	if err != nil {
		o.w.opts.Logger.Error(err, "Failed to encode snapshot state", "configmap", key)
		return
	}
	if string(b) == string(o.keptJSON[key]) {
		return
	}
	o.keptJSON[key] = b
	var html string
	if r := o.w.opts.Render; r != nil {
		if html, err = r.RenderSnapshot(s); err != nil {
			o.w.opts.Logger.Error(err, "Failed to render snapshot", "configmap", key)
		}
	}
	o.w.opts.Publisher.PublishRendered(snapshotRef(key), withHTML(b, html), b)
}

func (o *owner) listKept(ns string) []Snapshot {
	out := []Snapshot{}
	for key, s := range o.kept {
		if key.Namespace == ns {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Snapshot) int { return strings.Compare(a.Name, b.Name) })
	return out
}
