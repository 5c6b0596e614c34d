package quiz

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var t0 = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)

func days(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }

// approx compares the floats of two states to 1e-9, the precision of the
// expected values below (worked out by hand from the published formulas,
// not by this code).
var approx = cmpopts.EquateApprox(0, 1e-9)

// The published identity of the forgetting curve: whatever the stability,
// the chance of recall after S days is 90%, and the interval at 90%
// retention is S.
func TestRetrievabilityAtStabilityIsNinetyPercent(t *testing.T) {
	w := &DefaultWeights
	for _, s := range []float64{MinStability, 0.212, 1, 2.3065, 10, 365, MaxInterval} {
		if r := w.Retrievability(s, s); math.Abs(r-0.9) > 1e-12 {
			t.Errorf("R(%g, %g) = %.15f, want 0.9", s, s, r)
		}
		if i := w.IntervalDays(s, DesiredRetention); math.Abs(i-s) > 1e-9*s {
			t.Errorf("I(%g, 0.9) = %.12f, want %g", s, i, s)
		}
	}
	// The curve starts at certainty, falls, and inverts.
	if r := w.Retrievability(0, 5); r != 1 {
		t.Errorf("R(0, 5) = %g, want 1", r)
	}
	if a, b := w.Retrievability(1, 5), w.Retrievability(20, 5); !(a > 0.9 && b < 0.9 && b > 0) {
		t.Errorf("R(1, 5) = %g and R(20, 5) = %g, want one above 0.9 and one below", a, b)
	}
	if i := w.IntervalDays(5, w.Retrievability(12, 5)); math.Abs(i-12) > 1e-9 {
		t.Errorf("I(5, R(12, 5)) = %g, want 12", i)
	}
	// F is 0.9^(−1/w20) − 1.
	if f := w.factor(); math.Abs(f-0.9803464944134797) > 1e-12 {
		t.Errorf("F = %.16f", f)
	}
}

func TestFirstReview(t *testing.T) {
	w := DefaultWeights
	tests := []struct {
		r    Rating
		want State
	}{
		// S0(G) = w[G−1]; D0(G) = w4 − e^(w5·(G−1)) + 1, clamped to 1–10.
		{Again, State{Stability: w[0], Difficulty: w[4], Reps: 1, Last: t0, Due: t0.Add(AgainDelay)}},
		{Hard, State{Stability: w[1], Difficulty: 5.112170705601055, Reps: 1, Interval: 1, Last: t0, Due: days(1)}},
		// The first Good and Easy intervals are w2 and w3 rounded: 2.3065 and 8.2956 days.
		{Good, State{Stability: w[2], Difficulty: 2.118103970459015, Reps: 1, Interval: 2, Last: t0, Due: days(2)}},
		{Easy, State{Stability: w[3], Difficulty: 1, Reps: 1, Interval: 8, Last: t0, Due: days(8)}},
	}
	for _, tt := range tests {
		t.Run(tt.r.String(), func(t *testing.T) {
			got, err := Schedule(State{}, tt.r, t0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Schedule(new, %s) (-want +got):\n%s", tt.r, diff)
			}
		})
	}
	if got, _ := Schedule(State{}, Good, t0); got.Interval != int(math.Round(w[2])) {
		t.Errorf("first Good interval %d, want round(w2 = %g)", got.Interval, w[2])
	}
	if got, _ := Schedule(State{}, Easy, t0); got.Interval != int(math.Round(w[3])) {
		t.Errorf("first Easy interval %d, want round(w3 = %g)", got.Interval, w[3])
	}
}

// A card of stability 10 and difficulty 5, reviewed on time (R = 0.9),
// rated each way.
func TestReviewOnTime(t *testing.T) {
	in := State{Stability: 10, Difficulty: 5, Reps: 3, Interval: 10, Last: t0, Due: days(10)}
	tests := []struct {
		name string
		r    Rating
		want State
	}{
		{"lapse: stability falls, difficulty rises, back in a minute", Again,
			State{Stability: 1.3919869729546932, Difficulty: 8.341762369296838, Reps: 4, Lapses: 1, Last: days(10), Due: days(10).Add(AgainDelay)}},
		{"hard: penalised increase", Hard,
			State{Stability: 23.246875110466817, Difficulty: 6.665995369296838, Reps: 4, Interval: 23, Last: days(10), Due: days(33)}},
		{"good", Good,
			State{Stability: 32.02672948198673, Difficulty: 4.9902283692968386, Reps: 4, Interval: 32, Last: days(10), Due: days(42)}},
		{"easy: bonus, easier", Easy,
			State{Stability: 51.25386164681294, Difficulty: 3.3144613692968385, Reps: 4, Interval: 51, Last: days(10), Due: days(61)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Schedule(in, tt.r, days(10))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A recall after a longer gap (lower R) strengthens memory more.
func TestLateRecallGainsMore(t *testing.T) {
	in := State{Stability: 10, Difficulty: 5, Reps: 3, Interval: 10, Last: t0, Due: days(10)}
	late, err := Schedule(in, Good, days(20))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(late.Stability-44.69823365208452) > 1e-9 {
		t.Errorf("Good at R(20, 10) gave S %.12f, want 44.698233652085", late.Stability)
	}
	onTime, _ := Schedule(in, Good, days(10))
	if late.Stability <= onTime.Stability {
		t.Errorf("late recall S %g not above on-time %g", late.Stability, onTime.Stability)
	}
}

// A review less than a day after the last uses the short-term formula
// S·e^(w17·(G−3+w18))·S^(−w19); Good and Easy never lower S.
func TestSameDayReview(t *testing.T) {
	first, err := Schedule(State{}, Good, t0)
	if err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	tests := []struct {
		r                    Rating
		stability, difficult float64
		interval             int
	}{
		{Again, 0.7750839828558983, 7.394502741279718, 0},
		{Hard, 1.3333787168039835, 4.752858488532556, 1},
		// e^(w17·w18)·S^(−w19) is below 1 here, so Good keeps S as it was.
		{Good, 2.3065, 2.1112142357853942, 2},
		{Easy, 3.9460540679694778, 1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.r.String(), func(t *testing.T) {
			got, err := Schedule(first, tt.r, later)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Stability-tt.stability) > 1e-9 || math.Abs(got.Difficulty-tt.difficult) > 1e-9 || got.Interval != tt.interval {
				t.Errorf("S %.12f D %.12f interval %d, want S %.12f D %.12f interval %d",
					got.Stability, got.Difficulty, got.Interval, tt.stability, tt.difficult, tt.interval)
			}
			// Forgetting a card scheduled for days is a lapse.
			if want := map[bool]int{true: 1}[tt.r == Again]; got.Lapses != want {
				t.Errorf("lapses %d, want %d", got.Lapses, want)
			}
		})
	}
	// With a large S the same-day gain of Good would be below 1: it is held at 1.
	big := State{Stability: 100, Difficulty: 5, Reps: 9, Interval: 100, Last: t0}
	got, _ := Schedule(big, Good, later)
	if got.Stability != 100 {
		t.Errorf("same-day Good on S 100 gave %g, want 100 (never lower)", got.Stability)
	}
	got, _ = Schedule(big, Again, later)
	if math.Abs(got.Stability-26.22271415731674) > 1e-9 {
		t.Errorf("same-day Again on S 100 gave %.12f, want 26.222714157317", got.Stability)
	}
}

// Difficulty reverts slowly towards D0(easy), and is clamped to 1–10.
func TestDifficultyMeanReversionAndClamps(t *testing.T) {
	tests := []struct {
		name string
		d    float64
		r    Rating
		want float64
	}{
		// Good does not move D by itself (G−3 = 0): only the reversion does,
		// w7·D0(4) + (1−w7)·D, with D0(4) = −4.7716… unclamped.
		{"good reverts a hard card", 10, Good, 9.985228369296838},
		{"good reverts a middling card", 5, Good, 4.9902283692968386},
		// At 10 the linear damping (10−D)/9 stops Again from raising D further.
		{"again at the ceiling", 10, Again, 9.985228369296838},
		{"easy at the floor stays at 1", 1, Easy, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := State{Stability: 10, Difficulty: tt.d, Reps: 5, Interval: 10, Last: t0}
			got, err := Schedule(in, tt.r, days(10))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Difficulty-tt.want) > 1e-9 {
				t.Errorf("D %g rated %s became %.15f, want %.15f", tt.d, tt.r, got.Difficulty, tt.want)
			}
		})
	}
	// Many Goods in a row bring a hard card's difficulty down, never below 1.
	s := State{Stability: 10, Difficulty: 10, Reps: 5, Interval: 10, Last: t0}
	prev := s.Difficulty
	for i := range 50 {
		next, err := Schedule(s, Good, s.Last.Add(time.Duration(s.Interval)*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if next.Difficulty >= prev || next.Difficulty < 1 {
			t.Fatalf("review %d: D %g after %g, want lower and at least 1", i, next.Difficulty, prev)
		}
		prev, s = next.Difficulty, next
	}
}

func TestIntervalsAreClamped(t *testing.T) {
	// The longest interval is 36,500 days, however stable the card.
	s := State{Stability: MaxInterval, Difficulty: 1, Reps: 20, Interval: MaxInterval, Last: t0}
	got, err := Schedule(s, Easy, t0.Add(MaxInterval*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got.Interval != MaxInterval || got.Stability != MaxInterval {
		t.Errorf("interval %d, stability %g; want both %d", got.Interval, got.Stability, MaxInterval)
	}
	// The shortest is a day, even when S is a fraction of one.
	s = State{Stability: MinStability, Difficulty: 10, Reps: 2, Last: t0}
	got, err = Schedule(s, Hard, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Interval != MinInterval || got.Stability < MinStability {
		t.Errorf("interval %d, stability %g; want 1 day and at least %g", got.Interval, got.Stability, MinStability)
	}
	// A lapse of the least stable card keeps S at the floor, not below.
	got, err = Schedule(s, Again, days(30))
	if err != nil {
		t.Fatal(err)
	}
	if got.Stability != MinStability {
		t.Errorf("lapse of S %g gave %g, want %g", MinStability, got.Stability, MinStability)
	}
}

// Reviewing a card Good every time it falls due must space it out further
// each time; one Again sends it back to relearning.
func TestIntervalsGrowWithGoodAndResetWithAgain(t *testing.T) {
	s, now := State{}, t0
	var got []int
	for range 8 {
		next, err := Schedule(s, Good, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 && next.Interval <= got[len(got)-1] {
			t.Fatalf("interval did not grow: %v then %d", got, next.Interval)
		}
		got = append(got, next.Interval)
		s, now = next, next.Due
	}
	want := []int{2, 11, 46, 163, 497, 1346, 3292, 7398}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Good intervals (-want +got):\n%s", diff)
	}
	before := s.Stability
	s, err := Schedule(s, Again, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Interval != 0 || s.Lapses != 1 || !s.Due.Equal(now.Add(AgainDelay)) || s.Stability >= before {
		t.Errorf("after Again: %+v, want interval 0, one lapse, due in %s, stability below %g", s, AgainDelay, before)
	}
	s, err = Schedule(s, Good, s.Due)
	if err != nil {
		t.Fatal(err)
	}
	if s.Interval < 1 || s.Lapses != 1 {
		t.Errorf("Good after relearning: %+v, want an interval of days and still one lapse", s)
	}
	// A new card forgotten at once has not lapsed: it was never learnt.
	if s, _ := Schedule(State{}, Again, t0); s.Lapses != 0 {
		t.Errorf("Again on a new card counted %d lapses", s.Lapses)
	}
}

// Easy ≥ Good ≥ Hard > Again for any state, on time, late and same day.
func TestRatingsAreOrdered(t *testing.T) {
	states := []State{
		{},
		{Stability: 2.3, Difficulty: 2.1, Reps: 1, Interval: 2, Last: t0.Add(-2 * 24 * time.Hour)},
		{Stability: 10, Difficulty: 9.5, Reps: 3, Interval: 10, Last: t0.Add(-30 * 24 * time.Hour)},
		{Stability: 200, Difficulty: 3, Reps: 6, Interval: 200, Last: t0.Add(-3 * time.Hour)},
	}
	for _, s := range states {
		var due []time.Time
		for _, r := range []Rating{Again, Hard, Good, Easy} {
			next, err := Schedule(s, r, t0)
			if err != nil {
				t.Fatal(err)
			}
			due = append(due, next.Due)
		}
		for i := 1; i < len(due); i++ {
			if due[i].Before(due[i-1]) {
				t.Errorf("state %+v: %s due %s before %s due %s", s, Rating(i+1), due[i], Rating(i), due[i-1])
			}
		}
		if !due[1].After(due[0]) {
			t.Errorf("state %+v: Hard is not later than Again", s)
		}
	}
}

func TestRecall(t *testing.T) {
	if _, ok := (State{}).Recall(t0); ok {
		t.Error("a new card has a predicted recall")
	}
	s, _ := Schedule(State{}, Good, t0)
	for _, tt := range []struct {
		at   time.Time
		want float64
	}{
		{t0, 1},
		{t0.Add(12 * time.Hour), 0.9707228862993217},
		{t0.Add(time.Duration(s.Stability * float64(24*time.Hour))), 0.9},
		{t0.Add(-time.Hour), 1}, // a clock that went back
	} {
		got, ok := s.Recall(tt.at)
		if !ok || math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("Recall at %s = %g, %v; want %g", tt.at, got, ok, tt.want)
		}
	}
}

func TestScheduleRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		s       State
		r       Rating
		now     time.Time
		wantErr string
	}{
		{"rating zero", State{}, 0, t0, "rating 0 is not 1 (again) to 4 (easy)"},
		{"rating five", State{}, 5, t0, "rating 5 is not 1 (again) to 4 (easy)"},
		{"negative reps", State{Reps: -1}, Good, t0, "card state: reps -1 is negative"},
		{"negative lapses", State{Lapses: -2}, Good, t0, "card state: lapses -2 is negative"},
		{"negative interval", State{Interval: -3}, Good, t0, "interval -3 days is outside"},
		{"huge interval", State{Interval: MaxInterval + 1}, Good, t0, "interval 36501 days is outside"},
		{"stability too small", State{Stability: 0.001, Difficulty: 5, Last: t0}, Good, t0, "stability 0.001 days is outside"},
		{"stability NaN", State{Stability: math.NaN(), Difficulty: 5, Last: t0}, Good, t0, "stability NaN days is outside"},
		{"difficulty too high", State{Stability: 3, Difficulty: 11, Last: t0}, Good, t0, "difficulty 11 is outside 1–10"},
		{"difficulty without stability", State{Difficulty: 4}, Good, t0, "must both be 0 (a new card) or both be set"},
		{"reviewed but no last time", State{Stability: 3, Difficulty: 4}, Good, t0, "has no last review time"},
		{"no time", State{}, Good, time.Time{}, "review time is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Schedule(tt.s, tt.r, tt.now)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestIsDue(t *testing.T) {
	if !(State{}).IsDue(t0) {
		t.Error("a new card is not due")
	}
	s := State{Due: days(1)}
	if s.IsDue(t0) || !s.IsDue(days(1)) || !s.IsDue(days(2)) {
		t.Errorf("due %s: IsDue wrong around it", s.Due)
	}
}

// The browser stores State as JSON; it must come back unchanged, and read
// back through DecodeState as the same FSRS state.
func TestStateRoundTripsThroughJSON(t *testing.T) {
	s, err := Schedule(State{Stability: 6, Difficulty: 4, Reps: 2, Interval: 6, Last: t0}, Hard, days(6))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip of %s (-want +got):\n%s", b, diff)
	}
	decoded, err := DecodeState(b)
	if err != nil {
		t.Fatalf("DecodeState(%s): %v", b, err)
	}
	if diff := cmp.Diff(s, decoded); diff != "" {
		t.Errorf("DecodeState(%s) (-want +got):\n%s", b, diff)
	}
	// A new card's JSON has no times in it.
	if b, _ := json.Marshal(State{}); strings.Contains(string(b), "0001") {
		t.Errorf("new card marshals a zero time: %s", b)
	}
}

// Preview is Schedule for each rating, in button order.
func TestPreviewMatchesSchedule(t *testing.T) {
	now := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	reviewed := State{Stability: 10, Difficulty: 5, Reps: 3, Interval: 10, Last: now.Add(-10 * day), Due: now}
	for _, s := range []State{{}, reviewed} {
		got, err := Preview(s, now)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range Ratings {
			want, err := Schedule(s, r, now)
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != want {
				t.Errorf("preview of %s on %+v: %+v, Schedule gives %+v", r, s, got[i], want)
			}
		}
		// Each better rating waits at least as long as the one before.
		for i := 1; i < len(got); i++ {
			if got[i].Due.Before(got[i-1].Due) {
				t.Errorf("%s comes back before %s: %s < %s", Ratings[i], Ratings[i-1], got[i].Due, got[i-1].Due)
			}
		}
	}
	if _, err := Preview(State{Stability: -1, Difficulty: 3}, now); err == nil {
		t.Error("Preview accepted a negative stability")
	}
}

func TestDecodeState(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		want    State
		wantErr string
	}{
		{name: "empty is new", json: ``, want: State{}},
		{name: "null is new", json: `null`, want: State{}},
		{name: "empty object is new", json: `{}`, want: State{}},
		{name: "fsrs", json: `{"stability":2.3065,"difficulty":2.1,"reps":1,"lapses":0,"interval":2,"last":"2026-09-01T10:00:00Z","due":"2026-09-03T10:00:00Z"}`,
			want: State{Stability: 2.3065, Difficulty: 2.1, Reps: 1, Interval: 2, Last: t0, Due: days(2)}},
		{name: "unknown field", json: `{"stabilty":3}`, wantErr: `unknown field "stabilty"`},
		{name: "not an object", json: `[1,2]`, wantErr: "not a card state"},
		{name: "trailing", json: `{}{}`, wantErr: "data after the JSON object"},
		{name: "bad fsrs", json: `{"stability":3,"difficulty":42,"last":"2026-09-01T10:00:00Z"}`, wantErr: "difficulty 42 is outside 1–10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeState([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
