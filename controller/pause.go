package controller

import (
	"sync"
	"time"

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

	// handovers are the namespaces handed to learner code (handover.go).
	handovers handovers
	// ending are the namespaces being deleted with their session, and
	// since when: nothing in them is reconciled any more.
	ending map[string]time.Time
}

func newPauseGate() *pauseGate {
	return &pauseGate{paused: map[string]map[types.NamespacedName]struct{}{}, ending: map[string]time.Time{}}
}

// endingKept is how long a namespace stays marked as ending: long past
// the time a namespace takes to go, so that a late retry finds it.
const endingKept = time.Hour

// end marks ns as ending, forgetting those marked long ago.
func (g *pauseGate) end(ns string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for n, at := range g.ending {
		if now.Sub(at) > endingKept {
			delete(g.ending, n)
		}
	}
	g.ending[ns] = now
	delete(g.paused, ns)
}

// isEnding reports whether ns is being deleted with its session.
func (g *pauseGate) isEnding(ns string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.ending[ns]
	return ok
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
