package controller

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// ownWrites lets the reconciler read its own writes to Databases.
//
// The reconciler reads from the informer cache, which learns of a write
// only when its watch event arrives, a few milliseconds after the write
// returned. A write is also a watch event that queues the Database again,
// so the next reconcile often starts before the cache has caught up with
// the write that caused it, and acts on the copy from before: it writes the
// same status a second time, or, after its finalizer is gone, drains and
// snapshots a Database that no longer exists, and fails. Every reconciler
// reading from a cache has this race; the usual cost is a repeated write.
//
// ownWrites keeps, for each Database, the object the API server returned
// from our last write to it, and the resourceVersions that write replaced.
// While the cache still holds one of those, the cache is behind our own
// write, and a read gets our write instead. When removing the finalizer let
// the Database go, every cached copy of it (same UID) is older: a read gets
// NotFound. Otherwise, once the cache holds anything else, it is at least as
// new, and the entry is dropped. The reconciler's code stays
// the ordinary one: it reads, compares and writes.
type ownWrites struct {
	mu   sync.Mutex
	last map[types.NamespacedName]*ownWrite
}

type ownWrite struct {
	db       *dbv1.Database  // as the API server returned it
	gone     bool            // the write removed the last finalizer of a deleted Database
	replaced map[string]bool // resourceVersions older than the write
}

func newOwnWrites() *ownWrites {
	return &ownWrites{last: map[types.NamespacedName]*ownWrite{}}
}

// client wraps c, the cache-backed client, with ownWrites.
func (w *ownWrites) client(c client.Client) client.Client {
	return interceptor.NewClient(withoutWatch{c}, interceptor.Funcs{
		Get: w.get,
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			base := obj.GetResourceVersion()
			err := c.Patch(ctx, obj, patch, opts...)
			w.wrote(obj, base, err)
			return err
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			base := obj.GetResourceVersion()
			err := c.Update(ctx, obj, opts...)
			w.wrote(obj, base, err)
			return err
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			base := obj.GetResourceVersion()
			err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			w.wrote(obj, base, err)
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			base := obj.GetResourceVersion()
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			w.wrote(obj, base, err)
			return err
		},
	})
}

// wrote records a successful write of a Database made from a copy at base.
func (w *ownWrites) wrote(obj client.Object, base string, err error) {
	db, ok := obj.(*dbv1.Database)
	if !ok || err != nil {
		return
	}
	key := client.ObjectKeyFromObject(db)
	w.mu.Lock()
	defer w.mu.Unlock()
	next := &ownWrite{
		db:       db.DeepCopy(),
		gone:     !db.DeletionTimestamp.IsZero() && len(db.Finalizers) == 0,
		replaced: map[string]bool{base: true},
	}
	if prev := w.last[key]; prev != nil && prev.db.UID == db.UID {
		for rv := range prev.replaced {
			next.replaced[rv] = true
		}
		next.replaced[prev.db.ResourceVersion] = true
	}
	delete(next.replaced, db.ResourceVersion)
	w.last[key] = next
}

func (w *ownWrites) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Get(ctx, key, obj, opts...)
	db, ok := obj.(*dbv1.Database)
	if !ok {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	own := w.last[key]
	if own == nil {
		return err
	}
	if err == nil && own.gone && db.UID == own.db.UID {
		// Any copy of a Database our write let go is older than that
		// write. (The API server answers that write with the resourceVersion
		// the object had, so the version alone cannot tell.)
		return apierrors.NewNotFound(dbv1.GroupVersion.WithResource("databases").GroupResource(), key.Name)
	}
	if err != nil || !own.replaced[db.ResourceVersion] {
		// The cache has caught up (or moved past us, or lost the object).
		delete(w.last, key)
		return err
	}
	own.db.DeepCopyInto(db)
	return nil
}
