package session

import (
	"math"
	"sync"
	"time"
)

// Throttle slows down guessing a secret (the join code, the instructor
// token) from one client address: each address may fail Burst times, then
// once more every Every (a token bucket refilled by failures' absence).
// While an address has no try left, its guesses are not even compared:
// they are answered 429 with Retry-After. A correct guess costs nothing.
// With Take instead of Fail it is a rate limit: every request spends a
// try.
type Throttle struct {
	burst int
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tries float64
	at    time.Time
}

// maxThrottled bounds the addresses a Throttle remembers; past it, the
// addresses whose buckets are full again are forgotten.
const maxThrottled = 10000

// NewThrottle returns a Throttle of burst failures, then one every every;
// now is the clock (nil: time.Now).
func NewThrottle(burst int, every time.Duration, now func() time.Time) *Throttle {
	if now == nil {
		now = time.Now
	}
	return &Throttle{burst: burst, every: every, now: now, buckets: map[string]*bucket{}}
}

// refill brings b up to date; the caller holds t.mu.
func (t *Throttle) refill(b *bucket, now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tries = math.Min(float64(t.burst), b.tries+float64(elapsed)/float64(t.every))
	}
	b.at = now
}

// Wait returns how long addr must wait before its next guess is compared;
// zero means now.
func (t *Throttle) Wait(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.buckets[addr]
	if !ok {
		return 0
	}
	t.refill(b, t.now())
	if b.tries >= 1 {
		return 0
	}
	return time.Duration((1 - b.tries) * float64(t.every))
}

// Fail records a wrong guess by addr.
func (t *Throttle) Fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bucket(addr, t.now())
	b.tries = math.Max(0, b.tries-1)
}

// Take spends one of key's tries and returns zero, or, when key has none
// left, spends nothing and returns how long until it has one.
func (t *Throttle) Take(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bucket(key, t.now())
	if b.tries < 1 {
		return time.Duration((1 - b.tries) * float64(t.every))
	}
	b.tries--
	return 0
}

// bucket returns key's bucket, brought up to now, making a full one for a
// key not seen before; the caller holds t.mu.
func (t *Throttle) bucket(key string, now time.Time) *bucket {
	b, ok := t.buckets[key]
	if !ok {
		if len(t.buckets) >= maxThrottled {
			t.forgetFull(now)
		}
		b = &bucket{tries: float64(t.burst), at: now}
		t.buckets[key] = b
	}
	t.refill(b, now)
	return b
}

// forgetFull drops the addresses that have all their tries again; the
// caller holds t.mu.
func (t *Throttle) forgetFull(now time.Time) {
	for addr, b := range t.buckets {
		if t.refill(b, now); b.tries >= float64(t.burst) {
			delete(t.buckets, addr)
		}
	}
}
