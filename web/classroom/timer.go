package classroom

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Timer is the class timer everyone sees counting down: "10 min exercise",
// ending at Ends. A new timer gets a new ID, so a page announces each one's
// end once.
type Timer struct {
	Label string `json:"label"`
	// Ends is when the time is up, in Unix milliseconds.
	Ends int64 `json:"ends"`
	// Seconds is the duration the instructor set.
	Seconds int   `json:"seconds"`
	ID      int64 `json:"id"`
}

// EndsAt is Ends as a time.
func (t Timer) EndsAt() time.Time { return time.UnixMilli(t.Ends) }

// Bounds of a class timer: a second is a typo, a whole day is not a class
// exercise.
const (
	MinTimer      = 10 * time.Second
	MaxTimer      = 8 * time.Hour
	MaxTimerLabel = 80
)

// ValidateTimer says what is wrong with a timer's duration or label, or nil.
func ValidateTimer(label string, d time.Duration) error {
	if d < MinTimer || d > MaxTimer {
		return fmt.Errorf("timer duration %s: it must be from %s to %s", d, MinTimer, MaxTimer)
	}
	if n := utf8.RuneCountInString(label); n > MaxTimerLabel {
		return fmt.Errorf("timer label: %d characters, at most %d", n, MaxTimerLabel)
	}
	if strings.ContainsFunc(label, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("timer label %q: it holds a control character", label)
	}
	return nil
}

// StartTimer shows everyone a countdown of d labelled label (trimmed; "the
// timer" when empty), replacing any timer running.
func (c *Classroom) StartTimer(label string, d time.Duration) error {
	if err := ValidateTimer(label, d); err != nil {
		return err
	}
	label = strings.TrimSpace(label)
	if label == "" {
		label = "Class timer"
	}
	now := c.opts.Now()
	c.do(func(s *State) bool {
		id := now.UnixMilli()
		if s.Timer != nil {
			id = max(id, s.Timer.ID+1)
		}
		s.Timer = &Timer{Label: label, Ends: now.Add(d).UnixMilli(), Seconds: int(d.Seconds()), ID: id}
		return true
	})
	return nil
}

// ClearTimer takes the timer off every page, running or ended.
func (c *Classroom) ClearTimer() {
	c.do(func(s *State) bool {
		changed := s.Timer != nil
		s.Timer = nil
		return changed
	})
}

// Timer returns the class timer, if one is set (running or ended).
func (c *Classroom) Timer() (Timer, bool) {
	var t Timer
	var ok bool
	c.do(func(s *State) bool {
		if s.Timer != nil {
			t, ok = *s.Timer, true
		}
		return false
	})
	return t, ok
}

// TimerText is a timer's end as text for a page without script: the clock
// time in UTC, and how long after now (when the page is drawn).
func TimerText(t Timer, now time.Time) string {
	end := t.EndsAt()
	if !now.Before(end) {
		return "Time's up (it ended at " + end.UTC().Format("15:04:05") + " UTC)."
	}
	return "Ends at " + end.UTC().Format("15:04:05") + " UTC, " + end.Sub(now).Round(time.Second).String() + " after this page was drawn."
}
