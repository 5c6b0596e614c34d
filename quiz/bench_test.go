package quiz

import (
	"testing"
	"time"
)

// BenchmarkSchedule measures one review, the work of POST /flashcards/review.
func BenchmarkSchedule(b *testing.B) {
	now := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	s := State{Stability: 15, Difficulty: 5, Reps: 3, Interval: 15, Last: now.Add(-15 * 24 * time.Hour)}
	for b.Loop() {
		if _, err := Schedule(s, Good, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrade measures grading the whole quiz, the work of POST /quiz.
func BenchmarkGrade(b *testing.B) {
	bank, err := Load()
	if err != nil {
		b.Fatal(err)
	}
	a := Answers{}
	for _, q := range bank.Questions {
		a[q.ID] = q.Correct()
	}
	for b.Loop() {
		if _, err := Grade(bank.Questions, a); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(bank.Questions)), "questions")
}
