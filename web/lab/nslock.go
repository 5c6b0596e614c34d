package lab

import (
	"context"
	"fmt"
	"sync"
)

// nsLocks serialises work per namespace. The cap on Databases is a count
// followed by a create, two API calls the API server cannot make atomic, so
// concurrent creates in one namespace take turns here and the second sees
// the first's Database. An entry lives only while someone holds or waits
// for it, so namespaces that come and go leave nothing behind.
type nsLocks struct {
	mu    sync.Mutex
	locks map[string]*nsLock
}

type nsLock struct {
	held  chan struct{} // a one-slot semaphore, so waiting can be cancelled
	users int           // holders and waiters; guarded by nsLocks.mu
}

// lock waits for ns's turn, or for ctx to end, and returns the unlock.
func (l *nsLocks) lock(ctx context.Context, ns string) (unlock func(), err error) {
	e := l.join(ns)
	select {
	case e.held <- struct{}{}:
		return func() { <-e.held; l.leave(ns, e) }, nil
	case <-ctx.Done():
		l.leave(ns, e)
		return nil, fmt.Errorf("wait for another change to namespace %s: %w", ns, ctx.Err())
	}
}

func (l *nsLocks) join(ns string) *nsLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks == nil {
		l.locks = map[string]*nsLock{}
	}
	e := l.locks[ns]
	if e == nil {
		e = &nsLock{held: make(chan struct{}, 1)}
		l.locks[ns] = e
	}
	e.users++
	return e
}

func (l *nsLocks) leave(ns string, e *nsLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.users--
	if e.users == 0 {
		delete(l.locks, ns)
	}
}
