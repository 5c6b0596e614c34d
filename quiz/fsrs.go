package quiz

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// This file is the flashcard scheduler: FSRS-6 (the Free Spaced Repetition
// Scheduler, version 6), written here from its published formulas. FSRS
// models each card's memory with three numbers:
//
//   - stability S: the days until the chance of recall falls to 90%;
//   - difficulty D, from 1 to 10: how hard it is to raise S;
//   - retrievability R: the chance of recall now, which falls with the time
//     t since the last review along the forgetting curve R(t, S).
//
// A review rated G (1 again, 2 hard, 3 good, 4 easy) updates D and S, and
// the card comes back when R is predicted to have fallen to the desired
// retention. Nothing is fuzzed, so the schedule is deterministic and testable.

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

// Weights are FSRS-6's 21 parameters, w0 to w20. Their meaning:
//
//	w0–w3    initial stability after a first rating of again, hard, good, easy
//	w4, w5   initial difficulty
//	w6       how far one rating moves difficulty
//	w7       mean reversion of difficulty towards D0(easy)
//	w8–w10   stability after a recall; w15 hard penalty, w16 easy bonus
//	w11–w14  stability after a lapse
//	w17–w19  stability after a same-day review
//	w20      the forgetting curve's decay
type Weights [21]float64

// DefaultWeights are FSRS-6's published defaults, fitted by its authors to
// a large open collection of real reviews; they serve a learner with no
// review history of their own.
var DefaultWeights = Weights{
	0.212, 1.2931, 2.3065, 8.2956,
	6.4133, 0.8334,
	3.0194, 0.001,
	1.8722, 0.1666, 0.796,
	1.4835, 0.0614, 0.2629, 1.6483,
	0.6014, 1.8729,
	0.5425, 0.0912, 0.0658,
	0.1542,
}

// The scheduler's constants.
const (
	// DesiredRetention is the chance of recall at which a card falls due.
	DesiredRetention = 0.9
	// MinInterval and MaxInterval bound a remembered card's interval in days.
	MinInterval = 1
	MaxInterval = 36500
	// MinStability keeps the forgetting curve defined (S divides t).
	MinStability = 0.01
	// AgainDelay is how soon a forgotten card comes back, so it is seen
	// again in the same sitting (a relearning step, as Anki has one).
	AgainDelay = time.Minute
	// day is FSRS's unit of time.
	day = 24 * time.Hour
)

// factor is F = 0.9^(−1/w20) − 1, which makes R(S, S) = 0.9 for any decay.
func (w *Weights) factor() float64 { return math.Pow(0.9, -1/w[20]) - 1 }

// Retrievability is R(t, S) = (1 + F·t/S)^(−w20): the chance of recalling a
// card of stability s days, t days after its last review.
func (w *Weights) Retrievability(t, s float64) float64 {
	return math.Pow(1+w.factor()*math.Max(t, 0)/s, -w[20])
}

// IntervalDays is the t at which R(t, s) falls to r, the inverse of
// Retrievability: I = S/F·(r^(−1/w20) − 1). At r = 0.9 it is S itself.
func (w *Weights) IntervalDays(s, r float64) float64 {
	return s / w.factor() * (math.Pow(r, -1/w[20]) - 1)
}

// initialStability is S0(G) = w[G−1].
func (w *Weights) initialStability(g Rating) float64 { return math.Max(w[g-1], MinStability) }

// initialDifficulty is D0(G) = w4 − e^(w5·(G−1)) + 1, unclamped: the mean
// reversion aims at D0(easy) as it is, which lies below 1 with the defaults.
func (w *Weights) initialDifficulty(g Rating) float64 {
	return w[4] - math.Exp(w[5]*float64(g-1)) + 1
}

// nextDifficulty moves d by −w6·(G−3), damped linearly so that it slows
// down as d nears 10, then reverts it by the fraction w7 towards D0(easy),
// so that a card once found hard is not stuck at 10 for ever.
func (w *Weights) nextDifficulty(d float64, g Rating) float64 {
	delta := -w[6] * float64(g-3)
	damped := d + delta*(10-d)/9
	return clampDifficulty(w[7]*w.initialDifficulty(Easy) + (1-w[7])*damped)
}

// recallStability is S after a successful review:
// S·(1 + e^w8·(11−D)·S^(−w9)·(e^(w10·(1−R))−1)·penalty·bonus). The increase
// is larger for easier cards, smaller for already stable ones, and larger
// the lower R had fallen (a harder recall strengthens memory more).
func (w *Weights) recallStability(d, s, r float64, g Rating) float64 {
	factor := 1.0
	switch g {
	case Hard:
		factor = w[15]
	case Easy:
		factor = w[16]
	}
	inc := math.Exp(w[8]) * (11 - d) * math.Pow(s, -w[9]) * (math.Exp(w[10]*(1-r)) - 1) * factor
	return s * (1 + inc)
}

// lapseStability is S after a lapse:
// w11·D^(−w12)·((S+1)^w13 − 1)·e^(w14·(1−R)). A lapse must not leave the
// memory more stable than before, so it is capped at S/e^(w17·w18), the
// stability a same-day Again would leave.
func (w *Weights) lapseStability(d, s, r float64) float64 {
	sf := w[11] * math.Pow(d, -w[12]) * (math.Pow(s+1, w[13]) - 1) * math.Exp(w[14]*(1-r))
	return math.Min(sf, s/math.Exp(w[17]*w[18]))
}

// shortTermStability is S after a review on the same day as the last one,
// when the forgetting curve has barely moved: S·e^(w17·(G−3+w18))·S^(−w19).
// The S^(−w19) term makes the gain shrink as S grows; a Good or Easy never
// lowers S.
func (w *Weights) shortTermStability(s float64, g Rating) float64 {
	inc := math.Exp(w[17]*(float64(g)-3+w[18])) * math.Pow(s, -w[19])
	if g >= Good {
		inc = math.Max(inc, 1)
	}
	return s * inc
}

func clampDifficulty(d float64) float64 { return math.Min(10, math.Max(1, d)) }

func clampStability(s float64) float64 { return math.Min(MaxInterval, math.Max(MinStability, s)) }

// State is what the scheduler knows of one card. The browser keeps it in
// localStorage as JSON; the zero State is a new card, due now.
type State struct {
	// Stability is S in days; 0 for a new card.
	Stability float64 `json:"stability"`
	// Difficulty is D, 1–10; 0 for a new card.
	Difficulty float64 `json:"difficulty"`
	// Reps counts reviews of any rating.
	Reps int `json:"reps"`
	// Lapses counts how often a card with an interval of days was
	// forgotten (rated Again).
	Lapses int `json:"lapses"`
	// Interval is the days the last review scheduled; 0 after an Again,
	// whose card comes back after AgainDelay.
	Interval int `json:"interval"`
	// Last is when the card was last reviewed; zero for a new card.
	Last time.Time `json:"last,omitzero"`
	// Due is when the card should next be shown; zero means now.
	Due time.Time `json:"due,omitzero"`
}

// IsNew reports whether the card was never reviewed.
func (s State) IsNew() bool { return s.Stability == 0 }

// IsDue reports whether the card should be shown at now.
func (s State) IsDue(now time.Time) bool { return !s.Due.After(now) }

// Recall is the predicted chance of recalling the card at now, R(t, S);
// ok is false for a new card, which has no memory to predict.
func (s State) Recall(now time.Time) (r float64, ok bool) {
	if s.IsNew() {
		return 0, false
	}
	return DefaultWeights.Retrievability(elapsedDays(s.Last, now), s.Stability), true
}

// elapsedDays is the time from last to now in days. A clock that moved back
// gives 0 rather than an error, so a card can never become unreviewable.
func elapsedDays(last, now time.Time) float64 {
	return math.Max(0, now.Sub(last).Hours()/24)
}

// Validate names the first field a stored state cannot have.
func (s State) Validate() error {
	bad := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }
	switch {
	case s.Reps < 0:
		return fmt.Errorf("reps %d is negative", s.Reps)
	case s.Lapses < 0:
		return fmt.Errorf("lapses %d is negative", s.Lapses)
	case s.Interval < 0 || s.Interval > MaxInterval:
		return fmt.Errorf("interval %d days is outside 0–%d", s.Interval, MaxInterval)
	case bad(s.Stability) || s.Stability != 0 && (s.Stability < MinStability || s.Stability > MaxInterval):
		return fmt.Errorf("stability %g days is outside %g–%d (or 0 for a new card)", s.Stability, MinStability, MaxInterval)
	case bad(s.Difficulty) || s.Difficulty != 0 && (s.Difficulty < 1 || s.Difficulty > 10):
		return fmt.Errorf("difficulty %g is outside 1–10 (or 0 for a new card)", s.Difficulty)
	case (s.Stability == 0) != (s.Difficulty == 0):
		return fmt.Errorf("stability %g and difficulty %g must both be 0 (a new card) or both be set", s.Stability, s.Difficulty)
	case !s.IsNew() && s.Last.IsZero():
		return fmt.Errorf("a reviewed card (stability %g) has no last review time", s.Stability)
	}
	return nil
}

// DecodeState reads a card's state as the browser stored it. Empty input or
// null is a new card. Unknown fields, data after the object and a state
// Validate refuses are errors.
func DecodeState(data []byte) (State, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return State{}, nil
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return State{}, fmt.Errorf("not a card state: %w", err)
	}
	if dec.More() {
		return State{}, errors.New("not a card state: data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return State{}, err
	}
	return s, nil
}

// Schedule returns the card's state after a review rated r at now, with
// FSRS-6's default weights and a desired retention of 90%:
//
//   - A new card starts at S0(r) and D0(r).
//   - Otherwise D moves by the rating, and S follows the same-day formula
//     when less than a day has passed since the last review, the lapse
//     formula after an Again, and the recall formula otherwise, with R the
//     retrievability at now.
//   - Again brings the card back after AgainDelay; any other rating after
//     the interval at which R falls to 90%, rounded to whole days and kept
//     within MinInterval–MaxInterval.
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
	w := &DefaultWeights
	next := State{Reps: s.Reps + 1, Lapses: s.Lapses, Last: now}
	if s.IsNew() {
		next.Stability = w.initialStability(r)
		next.Difficulty = clampDifficulty(w.initialDifficulty(r))
	} else {
		t := elapsedDays(s.Last, now)
		// Stability is updated with the difficulty as it was before this
		// review; the review's own verdict moves difficulty for next time.
		switch {
		case t < 1:
			next.Stability = w.shortTermStability(s.Stability, r)
		case r == Again:
			next.Stability = w.lapseStability(s.Difficulty, s.Stability, w.Retrievability(t, s.Stability))
		default:
			next.Stability = w.recallStability(s.Difficulty, s.Stability, w.Retrievability(t, s.Stability), r)
		}
		next.Stability = clampStability(next.Stability)
		next.Difficulty = w.nextDifficulty(s.Difficulty, r)
		// A lapse is forgetting a card that had an interval of days; an
		// Again while relearning is the same lapse, not another.
		if r == Again && s.Interval > 0 {
			next.Lapses++
		}
	}
	if r == Again {
		next.Due = now.Add(AgainDelay)
		return next, nil
	}
	next.Interval = intervalDays(w, next.Stability)
	next.Due = now.Add(time.Duration(next.Interval) * day)
	return next, nil
}

// intervalDays is the whole number of days until R falls to the desired
// retention.
func intervalDays(w *Weights, s float64) int {
	d := math.Round(w.IntervalDays(s, DesiredRetention))
	return int(math.Min(MaxInterval, math.Max(MinInterval, d)))
}

// Ratings are the four ratings in the order the flashcard page offers them.
var Ratings = [4]Rating{Again, Hard, Good, Easy}

// Preview returns the state each rating would give s at now, in the order
// of Ratings: what the page shows on each button before the learner picks
// one. It is Schedule run four times, so a preview and the review that
// follows it at the same now cannot disagree.
func Preview(s State, now time.Time) ([4]State, error) {
	var out [4]State
	for i, r := range Ratings {
		next, err := Schedule(s, r, now)
		if err != nil {
			return [4]State{}, err
		}
		out[i] = next
	}
	return out, nil
}
