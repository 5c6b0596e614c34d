package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// pauseGate holds reconciles of the Databases in paused namespaces. It
// belongs to the Runner, not to a manager, so a namespace stays paused
// across a whole-controller Stop and Start.
//
// While a namespace is paused its watch events are still traced (the
// learner sees them arrive and be held) but not queued, and a request that
// reaches a worker anyway (a resync or a retry already scheduled) is put
// aside. Nothing needs replaying on resume: the controller is level-
// triggered, so reconciling every Database of the namespace once catches up
// with everything that happened meanwhile. The gate remembers the keys it
// held only so that a Database deleted meanwhile is reconciled too.
//
// Event handlers and workers ask the gate from many goroutines; a mutex
// guards its one map and is never held for more than a map operation.
type pauseGate struct {
	mu     sync.Mutex
	paused map[string]map[types.NamespacedName]struct{} // namespace → keys held

	// overrides are the namespaces handed to learner code (override.go).
	overrides overrides
	// ignored are namespaces the controller leaves alone entirely: the
	// reconciler tester's scratch namespaces, which it drives itself.
	ignored sync.Map // namespace → struct{}
}

// ignoring reports whether the controller leaves ns alone.
func (g *pauseGate) ignoring(ns string) bool {
	_, ok := g.ignored.Load(ns)
	return ok
}

func newPauseGate() *pauseGate {
	return &pauseGate{paused: map[string]map[types.NamespacedName]struct{}{}}
}

// pause pauses ns and reports whether it was running.
func (g *pauseGate) pause(ns string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.paused[ns]; ok {
		return false
	}
	g.paused[ns] = map[types.NamespacedName]struct{}{}
	return true
}

// resume releases ns and returns the keys held meanwhile; ok is false when
// ns was not paused.
func (g *pauseGate) resume(ns string) (held []types.NamespacedName, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	keys, ok := g.paused[ns]
	if !ok {
		return nil, false
	}
	delete(g.paused, ns)
	for k := range keys {
		held = append(held, k)
	}
	return held, true
}

// isPaused reports whether ns is paused.
func (g *pauseGate) isPaused(ns string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.paused[ns]
	return ok
}

// hold puts key aside when its namespace is paused and reports whether it did.
func (g *pauseGate) hold(key types.NamespacedName) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	keys, ok := g.paused[key.Namespace]
	if ok {
		keys[key] = struct{}{}
	}
	return ok
}
