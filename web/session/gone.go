package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/oplab-dev/oplab/controller/labns"
)

// A lab namespace can be deleted behind oplab's back (an admin's kubectl
// delete namespace, a cleanup script). Left alone, the lab would keep naming
// it, every create would fail with the API server's raw refusal, and the
// roster would list a namespace that is gone. The Guard below watches this
// instance's namespaces and, for one whose session is still in the table,
// makes it again (namespace, quota; the learner's kubectl identity is
// granted again when they next download a kubeconfig) and tells the
// learner; when it cannot, it ends the session, so the roster stops listing
// it and the learner's next page starts a new one.
//
// The Guard also unblocks namespace deletes: objects whose finalizers nobody
// will ever remove (a learner's evil.example/never, or the controller's own
// while it is stopped) keep a namespace Terminating for ever. After a
// bounded wait it removes the finalizers still left in it.

// GoneMessage is what a learner is told when their namespace was deleted
// outside oplab and made again.
const GoneMessage = "Your lab namespace was deleted outside oplab (kubectl delete namespace, or an administrator); a new, empty one with the same name was made. Its Databases are gone; download your kubeconfig again, the old one no longer works."

// finalizerGrace is how long a deleted namespace may stay Terminating
// before the Guard removes the finalizers left in it: long enough for the
// controller to finalize Databases (a final snapshot takes well under a
// second), short enough that a learner waits seconds, not for ever.
const finalizerGrace = 15 * time.Second

// goneRecreateLimit bounds how long the Guard tries to make a deleted
// namespace again (it must wait until the old one is fully gone).
const goneRecreateLimit = 2 * time.Minute

// endedGoneLimit bounds how long the Guard watches a namespace oplab
// deleted itself: the namespace controller works through a whole class
// ending at once (300 namespaces took nearly 3 minutes on two cores), and
// only a namespace still there after this is worth an error.
const endedGoneLimit = 15 * time.Minute

// Guard watches this instance's lab namespaces for deletes oplab did not
// make, and clears the finalizers that hold a deleted namespace.
type Guard struct {
	m    *Manager
	cs   kubernetes.Interface
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	// onGone, when set, is told of every namespace made again, so the
	// learner's timeline can say so.
	onGone func(namespace string)
	// Grace is how long a deleted namespace may stay Terminating before
	// the finalizers left in it are removed; NewGuard sets finalizerGrace.
	Grace time.Duration

	mu      sync.Mutex
	pending map[string]bool // namespaces being made again or unblocked
}

// NewGuard returns a Guard for m's namespaces, through cfg; onGone may be
// nil. Hook it up with m.SetGuard and start it with Run.
func NewGuard(m *Manager, cfg *rest.Config, onGone func(namespace string)) (*Guard, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("namespace guard: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("namespace guard: %w", err)
	}
	return &Guard{m: m, cs: cs, dyn: dyn, disc: cs.Discovery(), onGone: onGone, Grace: finalizerGrace, pending: map[string]bool{}}, nil
}

// Run watches the namespaces labelled with m's instance until ctx is done.
func (g *Guard) Run(ctx context.Context) {
	sel := labns.InstanceLabel + "=" + labns.Instance(g.m.opts.NamespacePrefix)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return g.cs.CoreV1().Namespaces().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return g.cs.CoreV1().Namespaces().Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Namespace{}, 0, toolscache.Indexers{})
	seen := func(obj any, deleted bool) {
		ns, ok := obj.(*corev1.Namespace)
		if tomb, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
			ns, ok = tomb.Obj.(*corev1.Namespace)
		}
		if ok && (deleted || ns.DeletionTimestamp != nil) {
			go g.deleted(ctx, ns.Name, ns.UID)
		}
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen(obj, false) },
		UpdateFunc: func(_, obj any) { seen(obj, false) },
		DeleteFunc: func(obj any) { seen(obj, true) },
	})
	inf.RunWithContext(ctx)
}

// deleted handles a namespace being deleted: when oplab did not end its
// session, the namespace is made again once gone; either way, finalizers
// still holding it after finalizerGrace are removed.
func (g *Guard) deleted(ctx context.Context, name string, uid types.UID) {
	g.mu.Lock()
	if g.pending[name] {
		g.mu.Unlock()
		return
	}
	g.pending[name] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.pending, name)
		g.mu.Unlock()
	}()

	hash, ours := g.m.sessionOf(ctx, name)
	log := g.m.opts.Logger.WithValues("namespace", name)
	if ours {
		log.Info("A learner's namespace was deleted outside oplab; making it again")
	}
	limit := goneRecreateLimit
	if !ours {
		limit = endedGoneLimit
	}
	if err := g.waitGone(ctx, name, uid, limit); err != nil {
		log.Error(err, "A deleted lab namespace did not go")
		if ours {
			g.m.endGone(ctx, hash, name)
		}
		return
	}
	if !ours {
		return
	}
	if err := g.recreate(ctx, name, hash); err != nil {
		log.Error(err, "Could not make a deleted learner namespace again; ending its session")
		g.m.endGone(ctx, hash, name)
		return
	}
	g.m.flashGone(ctx, hash)
	if g.onGone != nil {
		g.onGone(name)
	}
	log.Info("Made a deleted learner namespace again")
}

// waitGone waits until the namespace (uid) no longer exists, removing the
// finalizers left in it each time it has been Terminating for g.Grace.
func (g *Guard) waitGone(ctx context.Context, name string, uid types.UID, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// Cleared at most once a grace: a finalizer put back (or an object
	// made meanwhile) is cleared on the next round.
	last := time.Now()
	// A learner waits for their namespace made again: look often. A class
	// ending waits for no one: 300 namespaces looked at every 250 ms were
	// 1,200 requests a second on the API server while it deleted them.
	every := 250 * time.Millisecond
	if limit > goneRecreateLimit {
		every = 2 * time.Second
	}
	for {
		ns, err := g.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err == nil && ns.UID != uid:
			return nil // already made again (by a Create racing this)
		case err == nil && time.Since(last) >= g.Grace:
			last = time.Now()
			n, cerr := labns.ClearFinalizers(ctx, g.dyn, g.disc, name)
			if cerr != nil {
				g.m.opts.Logger.Error(cerr, "Could not remove every finalizer holding a deleted namespace", "namespace", name)
			}
			if n > 0 {
				g.m.opts.Logger.Info("Removed finalizers that held a deleted namespace", "namespace", name, "objects", n)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still there after %s: %w", name, limit, ctx.Err())
		case <-time.After(every):
		}
	}
}

// recreate makes the namespace again with its quota, retrying while the
// API server still refuses (the old one's last objects going).
func (g *Guard) recreate(ctx context.Context, name, hash string) error {
	ctx, cancel := context.WithTimeout(ctx, goneRecreateLimit)
	defer cancel()
	for {
		err := g.m.opts.Namespaces.Create(ctx, name, hash)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("make namespace %s again: %w", name, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Unblock, called after oplab deleted a namespace, removes the finalizers
// still left in it after finalizerGrace, so an ended session never leaves
// its namespace Terminating. It returns at once; the work goes on.
func (g *Guard) Unblock(ctx context.Context, name string) {
	ns, err := g.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return // gone already, or unreadable: nothing to unblock
	}
	go g.deleted(context.WithoutCancel(ctx), name, ns.UID)
}

// SetGuard hooks g up: every namespace m deletes from then on is unblocked
// by it (see Guard.Unblock).
func (m *Manager) SetGuard(g *Guard) { m.guard.Store(g) }

// sessionOf returns the cookie hash of the session whose namespace is ns.
func (m *Manager) sessionOf(ctx context.Context, ns string) (string, bool) {
	var hash string
	_ = m.do(ctx, func(t *table) {
		for h, e := range t.sessions {
			if e.namespace == ns {
				hash = h
			}
		}
	})
	return hash, hash != ""
}

// flashGone tells the learner of session hash, on their next page, that
// their namespace was made again.
func (m *Manager) flashGone(ctx context.Context, hash string) {
	_ = m.do(ctx, func(t *table) {
		if e, ok := t.sessions[hash]; ok {
			e.flash = &Flash{Error: true, Message: GoneMessage}
		}
	})
}

// endGone ends the session whose namespace is gone for good: the roster
// stops listing it, and the learner's next page starts a new session.
func (m *Manager) endGone(ctx context.Context, hash, ns string) {
	var ended bool
	_ = m.do(ctx, func(t *table) {
		if e, ok := t.sessions[hash]; ok && e.namespace == ns {
			t.remove(hash)
			ended = true
		}
	})
	if ended && m.opts.OnExpire != nil {
		m.opts.OnExpire(ns)
	}
}
