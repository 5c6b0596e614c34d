package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/oplab-dev/oplab/controller/permission"
)

// NamespaceCaches keeps one informer cache per namespace of a set, for the
// kinds oplab may read only inside its own namespaces: Secrets. oplab's
// ServiceAccount holds no cluster-wide Secret permission (a Secret list
// across the cluster would hand it every token in kube-system), so a
// cluster-wide informer cannot run; instead, each namespace the instance's
// label selects gets a cache of its own while it exists, listing and
// watching in that namespace only, where oplab's RoleBinding grants it.
//
// Follow ties the set to a Namespace informer; handlers added with
// AddEventHandler see the events of every namespace's cache, those opened
// before and after.
type NamespaceCaches struct {
	cfg  *rest.Config
	opts cache.Options
	kind client.Object
	log  logr.Logger

	mu       sync.Mutex
	ctx      context.Context
	caches   map[string]*namespaceCache
	handlers []toolscache.ResourceEventHandler
}

type namespaceCache struct {
	cache  cache.Cache
	inf    cache.Informer
	cancel context.CancelFunc
}

// NewNamespaceCaches returns caches of kind, one per namespace, built with
// opts (its DefaultNamespaces is set per namespace; ByObject may select
// kind by label).
func NewNamespaceCaches(cfg *rest.Config, opts cache.Options, kind client.Object, log logr.Logger) (*NamespaceCaches, error) {
	// One HTTP client and one REST mapper for all of them: a namespace's
	// cache then costs no discovery of its own.
	var err error
	if opts.HTTPClient == nil {
		if opts.HTTPClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("create HTTP client for namespace caches: %w", err)
		}
	}
	if opts.Mapper == nil {
		if opts.Mapper, err = apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient); err != nil {
			return nil, fmt.Errorf("create REST mapper for namespace caches: %w", err)
		}
	}
	return &NamespaceCaches{cfg: cfg, opts: opts, kind: kind, log: log, caches: map[string]*namespaceCache{}}, nil
}

// Follow opens a namespace's cache when namespaces (an informer of the
// instance's Namespaces) adds it, and closes it when it is deleted; all
// of them close when ctx ends.
func (n *NamespaceCaches) Follow(ctx context.Context, namespaces cache.Informer) error {
	n.mu.Lock()
	n.ctx = ctx
	n.mu.Unlock()
	name := func(obj any) string {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if ns, ok := obj.(*corev1.Namespace); ok {
			return ns.Name
		}
		return ""
	}
	_, err := namespaces.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.open(name(obj)) },
		DeleteFunc: func(obj any) { n.close(name(obj)) },
	})
	if err != nil {
		return fmt.Errorf("follow namespaces: %w", err)
	}
	go func() {
		<-ctx.Done()
		n.mu.Lock()
		defer n.mu.Unlock()
		for ns, c := range n.caches {
			c.cancel()
			delete(n.caches, ns)
		}
	}()
	return nil
}

// AddEventHandler adds h to every namespace's informer, open or to come.
func (n *NamespaceCaches) AddEventHandler(h toolscache.ResourceEventHandler) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handlers = append(n.handlers, h)
	for ns, c := range n.caches {
		if _, err := c.inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("add event handler in namespace %s: %w", ns, err)
		}
	}
	return nil
}

// ErrNotSynced says a namespace's cache has not yet listed its objects:
// ask again later. A new namespace's first list can be refused until
// oplab's RoleBinding there exists, and the reflector then backs off for
// seconds.
var ErrNotSynced = errors.New("the namespace's cache has not synced yet")

// List lists from namespace's cache; a namespace without one (not the
// instance's, or not yet seen) holds nothing. It never waits for a cache
// to sync, as an informer cache's List does: a namespace deleted before its
// first list would hold the caller until its context ends.
func (n *NamespaceCaches) List(ctx context.Context, list client.ObjectList, namespace string) error {
	n.mu.Lock()
	c := n.caches[namespace]
	n.mu.Unlock()
	if c == nil {
		return apimeta.SetList(list, nil)
	}
	if !c.inf.HasSynced() {
		return fmt.Errorf("list in namespace %s: %w", namespace, ErrNotSynced)
	}
	return c.cache.List(ctx, list, client.InNamespace(namespace))
}

func (n *NamespaceCaches) open(ns string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ns == "" || n.ctx == nil || n.ctx.Err() != nil || n.caches[ns] != nil {
		return
	}
	opts := n.opts
	opts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	// A new namespace's cache may list before oplab's RoleBinding there
	// exists (the session makes it right after the namespace), and the
	// reflector retries: the first refusal is said quietly, a second one
	// (about a second later) in words, as a permission oplab lacks.
	var failures atomic.Int32
	opts.DefaultWatchErrorHandler = func(ctx context.Context, r *toolscache.Reflector, err error) {
		explained := permission.Explain(err)
		if !permission.Explained(explained) {
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
			return
		}
		if failures.Add(1) == 1 {
			n.log.V(1).Info("Refused a watch in a namespace; retrying", "namespace", ns, "error", explained.Error())
			return
		}
		n.log.Error(explained, "Failed to watch in a learner namespace; retrying", "namespace", ns, "type", r.TypeDescription())
	}
	c, err := cache.New(n.cfg, opts)
	if err != nil {
		n.log.Error(err, "Failed to make a namespace's cache", "namespace", ns)
		return
	}
	ctx, cancel := context.WithCancel(n.ctx)
	inf, err := c.GetInformer(ctx, n.kind, cache.BlockUntilSynced(false))
	if err != nil {
		cancel()
		n.log.Error(err, "Failed to make a namespace's informer", "namespace", ns)
		return
	}
	for _, h := range n.handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			n.log.Error(err, "Failed to add an event handler", "namespace", ns)
		}
	}
	n.caches[ns] = &namespaceCache{cache: c, inf: inf, cancel: cancel}
	go func() {
		if err := c.Start(ctx); err != nil {
			n.log.Error(err, "Stopped a namespace's cache with an error", "namespace", ns)
		}
	}()
}

func (n *NamespaceCaches) close(ns string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.caches[ns]; c != nil {
		c.cancel()
		delete(n.caches, ns)
	}
}

// InstanceNamespaces is the cache option that limits the Namespace
// informer to the namespaces selector selects (an instance's label).
func InstanceNamespaces(selector labels.Selector) cache.ByObject {
	return cache.ByObject{Label: selector}
}

// namespaceSource feeds the controller's handler from NamespaceCaches,
// as source.Kind does from one cache.
type namespaceSource struct {
	caches *NamespaceCaches
	h      handler.EventHandler
}

var _ source.Source = namespaceSource{}

func (s namespaceSource) Start(ctx context.Context, q queue) error {
	obj := func(o any) (client.Object, bool) {
		if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		c, ok := o.(client.Object)
		return c, ok
	}
	return s.caches.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if c, ok := obj(o); ok {
				s.h.Create(ctx, event.CreateEvent{Object: c}, q)
			}
		},
		UpdateFunc: func(old, o any) {
			oc, ok1 := obj(old)
			c, ok2 := obj(o)
			if ok1 && ok2 {
				s.h.Update(ctx, event.UpdateEvent{ObjectOld: oc, ObjectNew: c}, q)
			}
		},
		DeleteFunc: func(o any) {
			if c, ok := obj(o); ok {
				s.h.Delete(ctx, event.DeleteEvent{Object: c}, q)
			}
		},
	})
}

// inScope is the controller's filter in an instance's namespaces: an
// object counts only when its namespace is in the Namespace cache, which
// holds the instance's namespaces only.
func inScope(c cache.Cache) func(client.Object) bool {
	return func(o client.Object) bool {
		var ns corev1.Namespace
		return c.Get(context.Background(), client.ObjectKey{Name: o.GetNamespace()}, &ns) == nil
	}
}
