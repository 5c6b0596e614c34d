package quiz

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Before FSRS, oplab scheduled cards with SM-2, and browsers still hold
// SM-2 states in localStorage. This file reads them and carries them over,
// so a learner's progress survives the change of scheduler.

// The limits SM-2 states were kept within.
const (
	SM2DefaultEase  = 2.5
	SM2MinEase      = 1.3
	SM2MaxEase      = 5.0
	SM2MaxInterval  = 3650
	sm2RelearnDelay = time.Minute
)

// SM2State is a card's state as the SM-2 scheduler stored it.
type SM2State struct {
	// Reps counted successful reviews since the card was new or last forgotten.
	Reps int `json:"reps"`
	// Lapses counted how often the card was forgotten.
	Lapses int `json:"lapses"`
	// Ease multiplied the interval after each Good; 0 meant SM2DefaultEase.
	Ease float64 `json:"ease"`
	// Interval was the days until the next review; 0 while relearning.
	Interval int `json:"interval"`
	// Due was when the card should next be shown; zero meant now.
	Due time.Time `json:"due"`
}

// Validate names the first field a stored SM-2 state cannot have.
func (s SM2State) Validate() error {
	switch {
	case s.Reps < 0:
		return fmt.Errorf("reps %d is negative", s.Reps)
	case s.Lapses < 0:
		return fmt.Errorf("lapses %d is negative", s.Lapses)
	case s.Interval < 0 || s.Interval > SM2MaxInterval:
		return fmt.Errorf("interval %d days is outside 0–%d", s.Interval, SM2MaxInterval)
	case s.Ease != 0 && (s.Ease < SM2MinEase || s.Ease > SM2MaxEase || math.IsNaN(s.Ease)):
		return fmt.Errorf("ease %g is outside %g–%g (or 0 for a new card)", s.Ease, SM2MinEase, SM2MaxEase)
	case (s.Interval > 0 || s.Reps > 0 || s.Lapses > 0) && s.Due.IsZero():
		return fmt.Errorf("a reviewed card (interval %d days) has no due time", s.Interval)
	}
	return nil
}

// FromSM2 converts an SM-2 state into an FSRS one. The mapping is
// deterministic and keeps the card's schedule: it falls due when SM-2 said.
//
//   - A card never reviewed (no reps, lapses, interval or due) is new.
//   - Stability is SM-2's interval in days. SM-2 chose the interval as the
//     time the card would still be recalled, which is what stability means
//     at 90% retention (the interval equals S there). A card SM-2 was
//     relearning (interval 0) gets S0(again), the stability FSRS gives a
//     card just forgotten.
//   - Difficulty maps ease linearly: SM-2's starting ease 2.5 becomes D0(good),
//     FSRS's start for a card first rated Good, and SM-2's floor 1.3 (a card
//     often forgotten) becomes 10; higher eases become easier, down to 1.
//   - The last review was Due minus the interval (SM-2 set Due = review +
//     interval), or minus SM-2's one-minute relearning delay.
//   - Reps, lapses, interval and due carry over.
func FromSM2(old SM2State) (State, error) {
	if err := old.Validate(); err != nil {
		return State{}, err
	}
	if old.Reps == 0 && old.Lapses == 0 && old.Interval == 0 && old.Due.IsZero() {
		return State{}, nil
	}
	w := &DefaultWeights
	ease := old.Ease
	if ease == 0 {
		ease = SM2DefaultEase
	}
	start := clampDifficulty(w.initialDifficulty(Good))
	d := start + (SM2DefaultEase-ease)*(10-start)/(SM2DefaultEase-SM2MinEase)
	s := State{
		Difficulty: clampDifficulty(d),
		Reps:       old.Reps,
		Lapses:     old.Lapses,
		Interval:   old.Interval,
		Due:        old.Due,
	}
	if old.Interval == 0 {
		s.Stability = w.initialStability(Again)
		s.Last = old.Due.Add(-sm2RelearnDelay)
	} else {
		s.Stability = clampStability(float64(old.Interval))
		s.Last = old.Due.Add(-time.Duration(old.Interval) * day)
	}
	return s, nil
}

// storedState has the fields of both State and SM2State, so that one
// decode tells which the browser sent: only SM-2 states have an ease.
type storedState struct {
	Stability  *float64  `json:"stability"`
	Difficulty *float64  `json:"difficulty"`
	Ease       *float64  `json:"ease"`
	Reps       int       `json:"reps"`
	Lapses     int       `json:"lapses"`
	Interval   int       `json:"interval"`
	Last       time.Time `json:"last"`
	Due        time.Time `json:"due"`
}

// DecodeState reads a card's state as the browser stored it: an FSRS State,
// or an SM-2 one from before, which it converts with FromSM2 (and reports
// so in converted). Empty input or null is a new card. Unknown fields, or
// a mix of SM-2's ease with FSRS's stability or difficulty, are errors.
func DecodeState(data []byte) (s State, converted bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return State{}, false, nil
	}
	var st storedState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return State{}, false, fmt.Errorf("not a card state: %w", err)
	}
	if dec.More() {
		return State{}, false, errors.New("not a card state: data after the JSON object")
	}
	if st.Ease != nil {
		if st.Stability != nil || st.Difficulty != nil || !st.Last.IsZero() {
			return State{}, false, errors.New("has both SM-2's ease and FSRS's stability, difficulty or last review")
		}
		s, err := FromSM2(SM2State{Reps: st.Reps, Lapses: st.Lapses, Ease: *st.Ease, Interval: st.Interval, Due: st.Due})
		if err != nil {
			return State{}, false, fmt.Errorf("%w (an SM-2 state)", err)
		}
		return s, true, nil
	}
	s = State{Reps: st.Reps, Lapses: st.Lapses, Interval: st.Interval, Last: st.Last, Due: st.Due}
	if st.Stability != nil {
		s.Stability = *st.Stability
	}
	if st.Difficulty != nil {
		s.Difficulty = *st.Difficulty
	}
	if err := s.Validate(); err != nil {
		return State{}, false, err
	}
	return s, false, nil
}
