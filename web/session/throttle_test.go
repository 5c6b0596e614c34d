package session

import (
	"testing"
	"time"
)

func TestThrottleGivesBurstThenOneAnInterval(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	th := NewThrottle(3, 10*time.Second, clk.Now)
	for i := range 3 {
		if w := th.Wait("a"); w != 0 {
			t.Fatalf("try %d: wait %v, want none within the burst", i, w)
		}
		th.Fail("a")
	}
	if w := th.Wait("a"); w != 10*time.Second {
		t.Errorf("after the burst: wait %v, want 10s", w)
	}
	if w := th.Wait("b"); w != 0 {
		t.Errorf("another address waits %v, want none", w)
	}
	clk.Add(4 * time.Second)
	if w := th.Wait("a"); w != 6*time.Second {
		t.Errorf("4 s later: wait %v, want 6s", w)
	}
	clk.Add(6 * time.Second)
	if w := th.Wait("a"); w != 0 {
		t.Errorf("an interval later: wait %v, want one try", w)
	}
	th.Fail("a")
	if w := th.Wait("a"); w == 0 {
		t.Error("the one try was used, yet no wait")
	}
}

// Take is the same bucket as a rate limit: each call spends a try, and a
// refused one spends nothing.
func TestThrottleTakeSpendsATryARequest(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	th := NewThrottle(2, time.Second, clk.Now)
	for i := range 2 {
		if w := th.Take("s"); w != 0 {
			t.Fatalf("take %d: wait %v, want none within the burst", i, w)
		}
	}
	for range 3 {
		if w := th.Take("s"); w != time.Second {
			t.Fatalf("after the burst: wait %v, want 1s (a refusal spends nothing)", w)
		}
	}
	if w := th.Take("other"); w != 0 {
		t.Errorf("another key waits %v, want none", w)
	}
	clk.Add(time.Second)
	if w := th.Take("s"); w != 0 {
		t.Errorf("a second later: wait %v, want a try", w)
	}
}
