package polltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records a failure instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestWaitReturnsOnceEachFormHolds(t *testing.T) {
	var n atomic.Int32
	third := func() bool { return n.Add(1) >= 3 }
	ctx := context.Background()
	if err := Wait(ctx, third); err != nil || n.Load() != 3 {
		t.Errorf("func() bool: Wait = %v after %d calls, want nil after 3", err, n.Load())
	}
	n.Store(0)
	if err := Wait(ctx, func() error {
		if !third() {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Errorf("func() error: Wait = %v", err)
	}
	n.Store(0)
	if err := Wait(ctx, func() (bool, error) { return third(), errors.New("ignored once it holds") }); err != nil {
		t.Errorf("func() (bool, error): Wait = %v", err)
	}
	n.Store(0)
	if err := Wait(ctx, func(c context.Context) error {
		if c == nil {
			return errors.New("no context")
		}
		if !third() {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Errorf("func(context.Context) error: Wait = %v", err)
	}
}

func TestWaitReturnsTheLastReasonWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*Every)
	defer cancel()
	var n atomic.Int32
	err := Wait(ctx, func() (bool, error) {
		i := n.Add(1)
		if i == 1 {
			return false, fmt.Errorf("reason %d", i)
		}
		return false, nil // no reason: the last one given stays
	})
	if err == nil || err.Error() != "reason 1" {
		t.Errorf("Wait = %v, want the last reason given, reason 1", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), Every)
	defer cancel2()
	if err := Wait(ctx2, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait without a reason = %v, want the context's", err)
	}
}

func TestUntilFailsNamingWhatAndWhy(t *testing.T) {
	f := &fakeTB{TB: t}
	start := time.Now()
	Until(f, 2*Every, "the answer", func() error { return errors.New("still 41") })
	if !strings.Contains(f.failed, "waiting for the answer: still 41") {
		t.Errorf("Until failed with %q, want what and why", f.failed)
	}
	if took := time.Since(start); took < 2*Every {
		t.Errorf("Until gave up after %s, before its %s", took, 2*Every)
	}
	f = &fakeTB{TB: t}
	Until(f, time.Minute, "a condition that holds", func() bool { return true })
	if f.failed != "" {
		t.Errorf("Until failed on a condition that holds: %s", f.failed)
	}
}
