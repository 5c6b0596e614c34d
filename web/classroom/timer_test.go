package classroom

import (
	"strings"
	"testing"
	"time"
)

func TestTimerIsPublishedToEveryoneAndCleared(t *testing.T) {
	c, rec, tick := newTest(t)
	if err := c.StartTimer("  10 min exercise ", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	got := rec.last().Timer
	// The test clock stands at 1000 ms.
	if got == nil || got.Label != "10 min exercise" || got.Ends != 1000+600_000 || got.Seconds != 600 {
		t.Fatalf("published timer %+v, want 10 min exercise ending at 601000", got)
	}
	if tm, ok := c.Timer(); !ok || tm != *got {
		t.Errorf("Timer() = %+v, %v; want the published one", tm, ok)
	}
	// A second timer replaces the first, with a new id even in the same
	// millisecond, so every page announces its end.
	tick()
	if err := c.StartTimer("", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	second := rec.last().Timer
	if second == nil || second.ID <= got.ID || second.Label != "Class timer" {
		t.Errorf("second timer %+v after %+v: want a new id and the default label", second, got)
	}
	tick()
	c.ClearTimer()
	if rec.last().Timer != nil {
		t.Errorf("cleared, yet published %+v", rec.last().Timer)
	}
	if _, ok := c.Timer(); ok {
		t.Error("Timer() still has one after ClearTimer")
	}
	n := rec.count()
	tick()
	c.ClearTimer() // nothing to clear: nothing published
	if rec.count() != n {
		t.Errorf("clearing no timer published %d states", rec.count()-n)
	}
}

func TestTimerRefusesWhatIsNotAClassTimer(t *testing.T) {
	c, rec, _ := newTest(t)
	for _, bad := range []struct {
		label string
		d     time.Duration
		say   string
	}{
		{"x", time.Second, "duration"},
		{"x", 9 * time.Hour, "duration"},
		{strings.Repeat("a", MaxTimerLabel+1), time.Minute, "label"},
		{"a\u0007b", time.Minute, "control character"},
	} {
		err := c.StartTimer(bad.label, bad.d)
		if err == nil || !strings.Contains(err.Error(), bad.say) {
			t.Errorf("StartTimer(%q, %s) = %v, want an error naming the %s", bad.label, bad.d, err, bad.say)
		}
	}
	if rec.count() != 0 {
		t.Errorf("refused timers published %d states", rec.count())
	}
}
