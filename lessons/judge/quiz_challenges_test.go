package judge_test

import (
	"testing"

	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
	"github.com/oplab-dev/oplab/quiz"
)

// TestQuizChallengesExist checks that every quiz question tied to a
// challenge names one that exists, so its link /challenges/ID leads
// somewhere, and that each challenge listed below has a question.
func TestQuizChallengesExist(t *testing.T) {
	set, err := judgetest.LoadSet()
	if err != nil {
		t.Fatal(err)
	}
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	tied := map[string]int{}
	for _, q := range bank.Questions {
		if q.Challenge == "" {
			continue
		}
		if _, ok := set.Get(q.Challenge); !ok {
			t.Errorf("question %s: challenge %q does not exist (/challenges/%s leads nowhere)", q.ID, q.Challenge, q.Challenge)
		}
		tied[q.Challenge]++
	}
	for _, id := range []string{"died-mid-deletion", "drift-repair", "never-ready", "status-storm", "level-triggering", "backoff", "operator-or-chart"} {
		if tied[id] == 0 {
			t.Errorf("challenge %s: no quiz question is tied to it", id)
		}
	}
}
