package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingStore holds Databases in memory, so its count follows its
// creates. Counting yields before answering, widening the window in which
// concurrent creates would all count below the cap without the lock.
type countingStore struct {
	recordingStore
	mu      sync.Mutex
	created map[string][]string // namespace -> names
}

func (s *countingStore) CountDatabases(_ context.Context, ns string) (int, error) {
	s.mu.Lock()
	n := len(s.created[ns])
	s.mu.Unlock()
	time.Sleep(time.Millisecond)
	return n, nil
}

func (s *countingStore) CreateDatabase(_ context.Context, ns string, in CreateInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created[ns] = append(s.created[ns], in.Name)
	return nil
}

func TestCapHoldsUnderConcurrentCreates(t *testing.T) {
	const limit, tries = 3, 24
	store := &countingStore{created: map[string][]string{}}
	h := newHarnessOpts(t, Options{Store: store, MaxDatabases: limit})

	start := make(chan struct{})
	results := make([]Result, tries)
	codes := make([]int, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			<-start
			w := h.post("/lab/databases", url.Values{"name": {fmt.Sprintf("db%d", i)}, "replicas": {"1"}}, true)
			codes[i] = w.Code
			if err := json.Unmarshal(w.Body.Bytes(), &results[i]); err != nil {
				results[i].Message = fmt.Sprintf("answer is not JSON: %v: %s", err, w.Body)
			}
		})
	}
	close(start)
	wg.Wait()

	created, refused := 0, 0
	wantRefusal := fmt.Sprintf("already has %d Databases and may hold at most %d", limit, limit)
	for i, res := range results {
		switch {
		case codes[i] == 200 && res.OK:
			created++
		case codes[i] == 422 && res.Field == "name" && strings.Contains(res.Message, wantRefusal):
			refused++
		default:
			t.Errorf("create %d: got %d %+v; want 200, or 422 on name saying %q", i, codes[i], res, wantRefusal)
		}
	}
	if created != limit || refused != tries-limit {
		t.Errorf("%d created and %d refused; want %d and %d", created, refused, limit, tries-limit)
	}
	if got := len(store.created[h.ns]); got != limit {
		t.Errorf("the namespace holds %d Databases, want %d: %v", got, limit, store.created[h.ns])
	}
}

func TestNamespaceLocks(t *testing.T) {
	var l nsLocks
	unlockA, err := l.lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another namespace does not wait for a.
	unlockB, err := l.lock(t.Context(), "b")
	if err != nil {
		t.Fatalf("locking b while a is held: %v", err)
	}
	unlockB()

	// A second holder of a waits until its context ends, and says why.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.lock(ctx, "a"); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "namespace a") {
		t.Errorf("locking a held namespace with a cancelled context: %v; want context.Canceled naming namespace a", err)
	}

	// Released, a is free again, and no entry is left behind.
	unlockA()
	unlock, err := l.lock(t.Context(), "a")
	if err != nil {
		t.Fatalf("locking a after its release: %v", err)
	}
	unlock()
	if len(l.locks) != 0 {
		t.Errorf("%d lock entries left after every unlock, want 0", len(l.locks))
	}
}
