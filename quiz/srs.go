package quiz

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rating is the learner's verdict after seeing a card's answer.
type Rating int

// The four ratings, on keys 1–4 of the flashcard page.
const (
	Again Rating = iota + 1 // forgot: see it again shortly
	Hard                    // remembered with effort
	Good                    // remembered
	Easy                    // remembered without thinking
)

var ratingNames = map[Rating]string{Again: "again", Hard: "hard", Good: "good", Easy: "easy"}

// String returns the rating's lowercase name.
func (r Rating) String() string {
	if n, ok := ratingNames[r]; ok {
		return n
	}
	return "Rating(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is one of the four ratings.
func (r Rating) Valid() bool { return r >= Again && r <= Easy }

// ParseRating accepts a rating's number ("1"–"4") or name ("good").
func ParseRating(s string) (Rating, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if n, err := strconv.Atoi(s); err == nil && Rating(n).Valid() {
		return Rating(n), nil
	}
	for r, name := range ratingNames {
		if s == name {
			return r, nil
		}
	}
	return 0, fmt.Errorf("rating %q is not 1-4 or again, hard, good, easy", s)
}

// The scheduler's constants. These are SM-2's, with Anki's four buttons.
const (
	// DefaultEase is a new card's ease factor.
	DefaultEase = 2.5
	// MinEase keeps a hard card's intervals growing at all.
	MinEase = 1.3
	// MaxEase caps the ease, so a run of Easy cannot make the next
	// interval absurd; a stored state claiming more is rejected.
	MaxEase = 5.0
	// AgainDelay is how soon a forgotten card comes back, so it is seen
	// again in the same sitting.
	AgainDelay = time.Minute
	// MaxInterval caps intervals at ten years.
	MaxInterval = 3650
)

// State is what the scheduler knows of one card. The browser keeps it in
// localStorage as JSON; the zero State is a new card, due now.
type State struct {
	// Reps counts successful reviews since the card was new or last forgotten.
	Reps int `json:"reps"`
	// Lapses counts how often the card was forgotten.
	Lapses int `json:"lapses"`
	// Ease multiplies the interval after each Good; 0 means DefaultEase.
	Ease float64 `json:"ease"`
	// Interval is the days until the next review; 0 while relearning.
	Interval int `json:"interval"`
	// Due is when the card should next be shown; zero means now.
	Due time.Time `json:"due"`
}

// IsDue reports whether the card should be shown at now.
func (s State) IsDue(now time.Time) bool { return !s.Due.After(now) }

// Validate names the first field a stored state cannot have.
func (s State) Validate() error {
	switch {
	case s.Reps < 0:
		return fmt.Errorf("reps %d is negative", s.Reps)
	case s.Lapses < 0:
		return fmt.Errorf("lapses %d is negative", s.Lapses)
	case s.Interval < 0 || s.Interval > MaxInterval:
		return fmt.Errorf("interval %d days is outside 0–%d", s.Interval, MaxInterval)
	case s.Ease != 0 && (s.Ease < MinEase || s.Ease > MaxEase || math.IsNaN(s.Ease)):
		return fmt.Errorf("ease %g is outside %g–%g (or 0 for a new card)", s.Ease, MinEase, MaxEase)
	}
	return nil
}

// Schedule returns the card's state after a review rated r at now.
//
// It is SM-2 with four buttons:
//   - Again resets the run of successes: Reps 0, one more lapse, ease −0.20,
//     and the card comes back after AgainDelay.
//   - Good gives 1 day, then 6 days, then the last interval times the ease.
//   - Hard gives 1 day when new, otherwise 1.2× the last interval; ease −0.15.
//   - Easy gives 4 days when new, otherwise 1.3× what Good would give; ease +0.15.
//
// Every successful review lengthens the interval by at least a day, ease
// never drops below MinEase, and intervals stop at MaxInterval.
func Schedule(s State, r Rating, now time.Time) (State, error) {
	if !r.Valid() {
		return State{}, fmt.Errorf("rating %d is not 1 (again) to 4 (easy)", int(r))
	}
	if err := s.Validate(); err != nil {
		return State{}, fmt.Errorf("card state: %w", err)
	}
	if now.IsZero() {
		return State{}, fmt.Errorf("review time is not set")
	}
	ease := s.Ease
	if ease == 0 {
		ease = DefaultEase
	}
	if r == Again {
		return State{Lapses: s.Lapses + 1, Ease: clampEase(ease - 0.20), Due: now.Add(AgainDelay)}, nil
	}
	var days int
	switch r {
	case Hard:
		days = grow(s, 1, 1.2)
		ease -= 0.15
	case Good:
		days = goodInterval(s, ease)
	case Easy:
		days = 4
		if s.Reps > 0 {
			good := goodInterval(s, ease)
			days = max(good+1, roundDays(float64(good)*1.3))
		}
		ease += 0.15
	}
	days = min(days, MaxInterval)
	return State{
		Reps:     s.Reps + 1,
		Lapses:   s.Lapses,
		Ease:     clampEase(ease),
		Interval: days,
		Due:      now.Add(time.Duration(days) * 24 * time.Hour),
	}, nil
}

// goodInterval is SM-2's interval: 1 day, 6 days, then interval × ease.
func goodInterval(s State, ease float64) int {
	switch s.Reps {
	case 0:
		return 1
	case 1:
		return max(6, s.Interval+1)
	}
	return grow(s, 1, ease)
}

// grow multiplies the last interval by factor, adding at least a day, or
// returns first for a card with no successes yet.
func grow(s State, first int, factor float64) int {
	if s.Reps == 0 {
		return first
	}
	return max(s.Interval+1, roundDays(float64(s.Interval)*factor))
}

func roundDays(d float64) int { return int(math.Min(math.Round(d), MaxInterval)) }

// clampEase keeps ease within MinEase–MaxEase, rounded to hundredths so that
// repeated ±0.15 steps do not accumulate float noise in stored state.
func clampEase(e float64) float64 {
	return math.Min(MaxEase, math.Max(MinEase, math.Round(e*100)/100))
}
