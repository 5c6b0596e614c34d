package tester

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// errConflictInjected is the 409 the conflict schedules answer once.
var errConflictInjected = errors.New("the tester answered this write 409 Conflict, as the API server does when someone wrote the object since it was read")

// kindName names obj's kind, as the trace does.
func kindName(obj client.Object) string {
	switch obj.(type) {
	case *dbv1.Database:
		return "Database"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *corev1.Service:
		return "Service"
	case *corev1.Secret:
		return "Secret"
	case *corev1.ConfigMap:
		return "ConfigMap"
	}
	return fmt.Sprintf("%T", obj)
}

// withWatch lends a client the Watch the interceptor's type requires; the
// learner's code never watches.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("learner code does not watch")
}

// faults sits under the trace, around the learner code's client (a
// controller.Driver's Around): every call the code makes passes it, so it
// counts the writes, remembers what the code has seen, and puts in the
// schedule's one fault. It is the only place faults go in, as the facade
// is the only way the code reaches the cluster.
type faults struct {
	mu sync.Mutex
	// writes counts the code's writes that the API server accepted, in
	// the whole schedule.
	writes int
	// afterWrite, when set, runs after the code's n-th accepted write
	// (counted from 1): the crash that follows a write.
	afterWrite func(n int)
	// conflictAt answers the code's conflictAt-th write attempt with 409
	// Conflict, unsent; zero: none.
	conflictAt int
	attempts   int
	conflicted bool
	// stale, while set, answers reads from view (a lagging cache).
	stale bool
	view  map[objKey]client.Object
	// seen is every object as the code last read or wrote it: the view
	// of a cache as current as the code itself.
	seen map[objKey]client.Object
}

type objKey struct {
	kind, name string
}

func keyOf(obj client.Object) objKey {
	return objKey{kind: kindName(obj), name: obj.GetName()}
}

func newFaults() *faults {
	return &faults{seen: map[objKey]client.Object{}}
}

// freeze takes the view a lagging cache would answer from next: what the
// code had seen so far.
func (f *faults) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.view = map[objKey]client.Object{}
	for k, o := range f.seen {
		f.view[k] = o.DeepCopyObject().(client.Object)
	}
}

// setStale turns the stale answers on or off.
func (f *faults) setStale(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stale = on
}

// written is how many writes the API server has accepted from the code.
func (f *faults) written() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

func (f *faults) remember(obj client.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[keyOf(obj)] = obj.DeepCopyObject().(client.Object)
}

func (f *faults) forget(obj client.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.seen, keyOf(obj))
}

// staleGet answers key from the frozen view: what was there, or NotFound
// for what was not; handled is false when reads are fresh.
func (f *faults) staleGet(key client.ObjectKey, obj client.Object) (handled bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stale {
		return false, nil
	}
	old, ok := f.view[objKey{kind: kindName(obj), name: key.Name}]
	if !ok {
		return true, apierrors.NewNotFound(schema.GroupResource{Resource: kindName(obj)}, key.Name)
	}
	if reflect.TypeOf(old) != reflect.TypeOf(obj) {
		return false, nil
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(old.DeepCopyObject()).Elem())
	return true, nil
}

// attempt counts a write attempt and says whether to refuse it with 409.
func (f *faults) attempt(obj client.Object) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	if f.conflictAt > 0 && f.attempts == f.conflictAt && !f.conflicted {
		f.conflicted = true
		return apierrors.NewConflict(schema.GroupResource{Resource: kindName(obj)}, obj.GetName(),
			errConflictInjected)
	}
	return nil
}

// accepted counts an accepted write and runs the crash that follows it.
func (f *faults) accepted(obj client.Object) {
	f.mu.Lock()
	f.writes++
	n, after := f.writes, f.afterWrite
	f.seen[keyOf(obj)] = obj.DeepCopyObject().(client.Object)
	f.mu.Unlock()
	if after != nil {
		after(n)
	}
}

// wrap is the Driver's Around.
func (f *faults) wrap(c client.Client) client.Client {
	write := func(obj client.Object, do func() error) error {
		if err := f.attempt(obj); err != nil {
			return err
		}
		if err := do(); err != nil {
			return err
		}
		f.accepted(obj)
		return nil
	}
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if handled, err := f.staleGet(key, obj); handled {
				return err
			}
			err := c.Get(ctx, key, obj, opts...)
			switch {
			case err == nil:
				f.remember(obj)
			case apierrors.IsNotFound(err):
				f.forget(obj)
			}
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return write(obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return write(obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return write(obj, func() error { return c.Patch(ctx, obj, patch, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := write(obj, func() error { return c.Delete(ctx, obj, opts...) })
			if err == nil {
				f.forget(obj)
			}
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return write(obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return write(obj, func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
	})
}
