package quiz

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// SM-2 states as the old scheduler stored them in localStorage carry over
// by the documented mapping: S = interval, D from ease, last = due −
// interval, schedule kept.
func TestFromSM2(t *testing.T) {
	d0 := 2.118103970459015 // D0(good)
	tests := []struct {
		name string
		in   SM2State
		want State
	}{
		{"never reviewed", SM2State{}, State{}},
		{"never reviewed, default ease stored", SM2State{Ease: 2.5}, State{}},
		{"first good", SM2State{Reps: 1, Ease: 2.5, Interval: 1, Due: days(1)},
			State{Stability: 1, Difficulty: d0, Reps: 1, Interval: 1, Last: t0, Due: days(1)}},
		{"well known and easy", SM2State{Reps: 5, Ease: 2.8, Interval: 95, Due: days(95)},
			State{Stability: 95, Difficulty: 1, Reps: 5, Interval: 95, Last: t0, Due: days(95)}},
		{"often hard", SM2State{Reps: 3, Lapses: 2, Ease: 1.9, Interval: 6, Due: days(6)},
			State{Stability: 6, Difficulty: 6.059051985229508, Reps: 3, Lapses: 2, Interval: 6, Last: t0, Due: days(6)}},
		{"at the ease floor", SM2State{Reps: 1, Lapses: 4, Ease: 1.3, Interval: 1, Due: days(1)},
			State{Stability: 1, Difficulty: 10, Reps: 1, Lapses: 4, Interval: 1, Last: t0, Due: days(1)}},
		{"relearning after Again", SM2State{Lapses: 1, Ease: 2.3, Due: t0.Add(time.Minute)},
			State{Stability: DefaultWeights[0], Difficulty: d0 + 0.2*(10-d0)/1.2, Lapses: 1, Last: t0, Due: t0.Add(time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromSM2(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("FromSM2(%+v) (-want +got):\n%s", tt.in, diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("converted state is invalid: %v", err)
			}
			// The converted card can be reviewed at once, and the same
			// input always converts the same way.
			if _, err := Schedule(got, Good, t0.Add(time.Hour)); err != nil {
				t.Errorf("Schedule after conversion: %v", err)
			}
			again, _ := FromSM2(tt.in)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("conversion is not deterministic:\n%s", diff)
			}
		})
	}
}

// A converted card's predicted recall when SM-2 said it was due is the
// desired retention: the schedule the learner had is kept and means what
// FSRS means by it.
func TestFromSM2KeepsTheSchedule(t *testing.T) {
	s, err := FromSM2(SM2State{Reps: 3, Ease: 2.5, Interval: 15, Due: days(15)})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Recall(days(15)); !ok || r < 0.9-1e-9 || r > 0.9+1e-9 {
		t.Errorf("recall at the SM-2 due date = %g, want 0.9", r)
	}
	if s.IsDue(days(14)) || !s.IsDue(days(15)) {
		t.Errorf("due %s, want %s as SM-2 had it", s.Due, days(15))
	}
}

func TestDecodeState(t *testing.T) {
	tests := []struct {
		name          string
		json          string
		want          State
		wantConverted bool
		wantErr       string
	}{
		{name: "empty is new", json: ``, want: State{}},
		{name: "null is new", json: `null`, want: State{}},
		{name: "empty object is new", json: `{}`, want: State{}},
		{name: "fsrs", json: `{"stability":2.3065,"difficulty":2.1,"reps":1,"lapses":0,"interval":2,"last":"2026-09-01T10:00:00Z","due":"2026-09-03T10:00:00Z"}`,
			want: State{Stability: 2.3065, Difficulty: 2.1, Reps: 1, Interval: 2, Last: t0, Due: days(2)}},
		{name: "sm-2 as localStorage held it", json: `{"reps":2,"lapses":0,"ease":2.5,"interval":6,"due":"2026-09-07T10:00:00Z"}`,
			want: State{Stability: 6, Difficulty: 2.118103970459015, Reps: 2, Interval: 6, Last: t0, Due: days(6)}, wantConverted: true},
		{name: "sm-2 new card", json: `{"reps":0,"lapses":0,"ease":0,"interval":0,"due":"0001-01-01T00:00:00Z"}`, want: State{}, wantConverted: true},
		{name: "bad sm-2 ease", json: `{"ease":0.5}`, wantErr: "ease 0.5 is outside 1.3–5 (or 0 for a new card) (an SM-2 state)"},
		{name: "sm-2 interval without due", json: `{"ease":2.5,"reps":1,"interval":1}`, wantErr: "has no due time"},
		{name: "mixed", json: `{"ease":2.5,"stability":3}`, wantErr: "has both SM-2's ease and FSRS's stability"},
		{name: "unknown field", json: `{"stabilty":3}`, wantErr: `unknown field "stabilty"`},
		{name: "not an object", json: `[1,2]`, wantErr: "not a card state"},
		{name: "trailing", json: `{}{}`, wantErr: "data after the JSON object"},
		{name: "bad fsrs", json: `{"stability":3,"difficulty":42,"last":"2026-09-01T10:00:00Z"}`, wantErr: "difficulty 42 is outside 1–10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, converted, err := DecodeState([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if converted != tt.wantConverted {
				t.Errorf("converted %v, want %v", converted, tt.wantConverted)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The SM-2 limits are still enforced when reading old states.
func TestSM2StateValidate(t *testing.T) {
	tests := []struct {
		s       SM2State
		wantErr string
	}{
		{SM2State{Reps: -1}, "reps -1 is negative"},
		{SM2State{Lapses: -2}, "lapses -2 is negative"},
		{SM2State{Interval: -3}, "interval -3 days is outside"},
		{SM2State{Interval: SM2MaxInterval + 1, Due: t0}, "interval 3651 days is outside"},
		{SM2State{Ease: 1.0}, "ease 1 is outside 1.3–5"},
		{SM2State{Ease: 50}, "ease 50 is outside"},
	}
	for _, tt := range tests {
		if err := tt.s.Validate(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.s, err, tt.wantErr)
		}
	}
}
