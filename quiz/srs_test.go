package quiz

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)

func days(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }

func TestSchedule(t *testing.T) {
	tests := []struct {
		name string
		in   State
		r    Rating
		want State
	}{
		{"new, good", State{}, Good, State{Reps: 1, Ease: 2.5, Interval: 1, Due: days(1)}},
		{"new, easy", State{}, Easy, State{Reps: 1, Ease: 2.65, Interval: 4, Due: days(4)}},
		{"new, hard", State{}, Hard, State{Reps: 1, Ease: 2.35, Interval: 1, Due: days(1)}},
		{"new, again", State{}, Again, State{Lapses: 1, Ease: 2.3, Due: t0.Add(AgainDelay)}},
		{"second good is six days", State{Reps: 1, Ease: 2.5, Interval: 1}, Good, State{Reps: 2, Ease: 2.5, Interval: 6, Due: days(6)}},
		{"third good multiplies by ease", State{Reps: 2, Ease: 2.5, Interval: 6}, Good, State{Reps: 3, Ease: 2.5, Interval: 15, Due: days(15)}},
		{"hard grows by 1.2", State{Reps: 3, Ease: 2.5, Interval: 15}, Hard, State{Reps: 4, Ease: 2.35, Interval: 18, Due: days(18)}},
		{"easy beats good", State{Reps: 2, Ease: 2.5, Interval: 6}, Easy, State{Reps: 3, Ease: 2.65, Interval: 20, Due: days(20)}},
		{"again after a streak resets", State{Reps: 5, Lapses: 1, Ease: 2.5, Interval: 90}, Again, State{Lapses: 2, Ease: 2.3, Due: t0.Add(AgainDelay)}},
		{"good after a lapse starts over", State{Lapses: 2, Ease: 2.3, Due: t0}, Good, State{Reps: 1, Lapses: 2, Ease: 2.3, Interval: 1, Due: days(1)}},
		{"ease never drops below the floor", State{Reps: 2, Ease: MinEase, Interval: 6}, Again, State{Lapses: 1, Ease: MinEase, Due: t0.Add(AgainDelay)}},
		{"hard at the floor still adds a day", State{Reps: 4, Ease: MinEase, Interval: 2}, Hard, State{Reps: 5, Ease: MinEase, Interval: 3, Due: days(3)}},
		{"ease stops at the ceiling", State{Reps: 1, Ease: MaxEase, Interval: 4}, Easy, State{Reps: 2, Ease: MaxEase, Interval: 8, Due: days(8)}},
		{"interval is capped", State{Reps: 9, Ease: 2.5, Interval: 3000}, Good, State{Reps: 10, Ease: 2.5, Interval: MaxInterval, Due: days(MaxInterval)}},
		{"inconsistent zero interval still grows", State{Reps: 3, Ease: 2.5}, Good, State{Reps: 4, Ease: 2.5, Interval: 1, Due: days(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Schedule(tt.in, tt.r, t0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Schedule(%+v, %s) (-want +got):\n%s", tt.in, tt.r, diff)
			}
		})
	}
}

// Reviewing a card Good every time it falls due must space it out further
// each time; one Again sends it back to the start.
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
	want := []int{1, 6, 15, 38, 95, 238, 595, 1488}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Good intervals (-want +got):\n%s", diff)
	}
	s, err := Schedule(s, Again, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Interval != 0 || s.Reps != 0 || !s.Due.Equal(now.Add(AgainDelay)) {
		t.Errorf("after Again: %+v, want interval 0, reps 0, due in %s", s, AgainDelay)
	}
	s, err = Schedule(s, Good, s.Due)
	if err != nil {
		t.Fatal(err)
	}
	if s.Interval != 1 {
		t.Errorf("first Good after Again gave %d days, want 1", s.Interval)
	}
}

// Easy ≥ Good ≥ Hard > Again for any state.
func TestRatingsAreOrdered(t *testing.T) {
	states := []State{{}, {Reps: 1, Ease: 2.5, Interval: 1}, {Reps: 3, Ease: 1.3, Interval: 10}, {Reps: 6, Ease: 3.1, Interval: 200}}
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
		{"huge interval", State{Interval: MaxInterval + 1}, Good, t0, "interval 3651 days is outside"},
		{"ease too low", State{Ease: 1.0}, Good, t0, "ease 1 is outside 1.3–5"},
		{"ease too high", State{Ease: 50}, Good, t0, "ease 50 is outside"},
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

func TestParseRating(t *testing.T) {
	tests := []struct {
		in      string
		want    Rating
		wantErr bool
	}{
		{"1", Again, false}, {"2", Hard, false}, {"3", Good, false}, {"4", Easy, false},
		{"again", Again, false}, {" Good ", Good, false}, {"EASY", Easy, false},
		{"0", 0, true}, {"5", 0, true}, {"great", 0, true}, {"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseRating(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRating(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
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

// The browser stores State as JSON; it must come back unchanged.
func TestStateRoundTripsThroughJSON(t *testing.T) {
	s, err := Schedule(State{Reps: 2, Ease: 2.5, Interval: 6}, Hard, t0)
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
}
