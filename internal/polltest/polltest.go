// Package polltest is the tests' one way to wait for what happens in its own
// time (a controller reconciling, a server starting, a viewer registering):
// call a condition until it holds, and fail with what was
// awaited and the condition's last reason when the time is up. The tests
// check that things happen, never how fast, so the bounds are generous and
// a bound is never an assertion.
package polltest

import (
	"context"
	"testing"
	"time"
)

// A condition is called again after First, then after twice as long each
// time up to Every: a condition in memory is seen within milliseconds, and
// one that asks an API server asks it ten times a second.
const (
	First = 5 * time.Millisecond
	Every = 100 * time.Millisecond
)

// Cond is a condition to poll, in the forms the tests write:
//   - func() bool holds when it returns true;
//   - func() error holds when it returns nil, and its error says why not yet;
//   - func() (bool, error) holds when it returns true, and an error with
//     false is why not yet (polling goes on);
//   - func(context.Context) error is func() error given a context that ends
//     when the wait does, for the calls it makes.
type Cond interface {
	func() bool | func() error | func() (bool, error) | func(context.Context) error
}

// Until polls cond until it holds, and fails tb, naming what and cond's
// last error, if it does not within the given time.
func Until[C Cond](tb testing.TB, within time.Duration, what string, cond C) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := Wait(ctx, cond); err != nil {
		tb.Fatalf("timed out after %s waiting for %s: %v", within, what, err)
	}
}

// Wait polls cond until it holds and returns nil, or until ctx ends and
// returns cond's last error (ctx's own when cond gave none). It is Until
// for a caller that bounds the wait with a context, or that has more to say
// when the wait fails.
func Wait[C Cond](ctx context.Context, cond C) error {
	pause := First
	var last error
	for {
		ok, err := check(ctx, cond)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return last
			}
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, Every)
	}
}

// check calls cond once: whether it holds, and if not, why, when it says.
func check[C Cond](ctx context.Context, cond C) (bool, error) {
	switch c := any(cond).(type) {
	case func() bool:
		return c(), nil
	case func() error:
		err := c()
		return err == nil, err
	case func() (bool, error):
		return c()
	case func(context.Context) error:
		err := c(ctx)
		return err == nil, err
	}
	panic("unreachable: Cond allows no other type")
}
