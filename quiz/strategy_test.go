package quiz

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode"
)

// A quiz measures knowledge only if a learner who knows nothing cannot pass
// it by a rule of thumb. The strategies below are the ones test-wise people
// use on multiple choice: pick the longest option (the one the author took
// most care over), the shortest, or the one that echoes the question's
// words, or always the same position. Each is played over the quiz and must
// not score more than maxEdge above blind guessing.

// maxEdge is how far above chance, as a fraction, a strategy may score.
const maxEdge = 0.15

// strategy scores every option of a question; the learner picks the
// option(s) scoring highest.
type strategy struct {
	name  string
	score func(q Question, i int) float64
	// single says the strategy has no pick-all analogue: "always the
	// second option" says nothing about which set to tick.
	single bool
}

var strategies = []strategy{
	{"longest option", func(q Question, i int) float64 { return float64(len([]rune(q.Choices[i].Text))) }, false},
	{"shortest option", func(q Question, i int) float64 { return -float64(len([]rune(q.Choices[i].Text))) }, false},
	{"option sharing most words with the question", func(q Question, i int) float64 {
		return float64(sharedWords(q.Prompt+" "+q.Code, q.Choices[i].Text))
	}, false},
	{"always the first option", position(0), true},
	{"always the second option", position(1), true},
	{"always the third option", position(2), true},
	{"always the last option", func(q Question, i int) float64 { return float64(i) }, true},
}

// position prefers option p, and otherwise the earliest one, as a learner
// who always ticks "B" would on a question with fewer options.
func position(p int) func(Question, int) float64 {
	return func(_ Question, i int) float64 {
		if i == p {
			return 1
		}
		return -float64(i)
	}
}

// singleScore is the expected score of picking the top-scoring option, ties
// broken at random: 1/k when the right option is one of k tied at the top.
func singleScore(q Question, s strategy) float64 {
	best := math.Inf(-1)
	var top []int
	for i := range q.Choices {
		switch v := s.score(q, i); {
		case v > best:
			best, top = v, []int{i}
		case v == best:
			top = append(top, i)
		}
	}
	for _, i := range top {
		if q.Choices[i].Correct {
			return 1 / float64(len(top))
		}
	}
	return 0
}

// multiScore plays a strategy on a pick-all question the way a test-wise
// learner would: tick every option scoring above the question's mean (the
// longer ones, say). It scores 1 only when that is exactly the right set.
func multiScore(q Question, s strategy) float64 {
	var mean float64
	for i := range q.Choices {
		mean += s.score(q, i)
	}
	mean /= float64(len(q.Choices))
	for i, c := range q.Choices {
		if (s.score(q, i) > mean) != c.Correct {
			return 0
		}
	}
	return 1
}

// play returns the strategy's mean score over qs, and blind guessing's:
// 1/options for a single answer, 1/(2^options − 1) for a pick-all question
// (any non-empty set of options).
func play(qs []Question, s strategy, multi bool) (score, chance float64) {
	for _, q := range qs {
		if multi {
			score += multiScore(q, s)
			chance += 1 / (math.Pow(2, float64(len(q.Choices))) - 1)
		} else {
			score += singleScore(q, s)
			chance += 1 / float64(len(q.Choices))
		}
	}
	return score / float64(len(qs)), chance / float64(len(qs))
}

func split(qs []Question) (single, multi []Question) {
	for _, q := range qs {
		if q.Multi() {
			multi = append(multi, q)
		} else {
			single = append(single, q)
		}
	}
	return single, multi
}

// stopWords are too common to count as echoing the question.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by for from in is it its of on or so that the
		this to was what when which who why with does do you your how not no`) {
		stopWords[w] = true
	}
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !stopWords[w] {
			out[w] = true
		}
	}
	return out
}

// sharedWords counts the distinct words of option that are also in prompt.
func sharedWords(prompt, option string) int {
	p := words(prompt)
	n := 0
	for w := range words(option) {
		if p[w] {
			n++
		}
	}
	return n
}

// report plays every strategy over qs and returns the lines describing
// each and the ones scoring above chance + maxEdge.
func report(qs []Question) (lines, failures []string) {
	single, multi := split(qs)
	for _, set := range []struct {
		kind  string
		qs    []Question
		multi bool
	}{{"single-answer", single, false}, {"pick-all", multi, true}} {
		if len(set.qs) == 0 {
			continue
		}
		for _, s := range strategies {
			if set.multi && s.single {
				continue
			}
			score, chance := play(set.qs, s, set.multi)
			line := fmt.Sprintf("%s, %d questions: %q scores %.0f%% (chance %.0f%%, limit %.0f%%)",
				set.kind, len(set.qs), s.name, 100*score, 100*chance, 100*(chance+maxEdge))
			lines = append(lines, line)
			if score > chance+maxEdge {
				failures = append(failures, line)
			}
		}
	}
	return lines, failures
}

func TestNoTestWiseStrategyPassesTheQuiz(t *testing.T) {
	b := mustLoad(t)
	lines, failures := report(b.Questions)
	for _, l := range lines {
		t.Log(l)
	}
	for _, f := range failures {
		t.Errorf("a learner who knows nothing beats chance by more than %.0f points: %s", 100*maxEdge, f)
	}
}

// The check can fail: a quiz whose right answer is always the longest,
// always first and always repeats the question is caught by each strategy
// that exploits it.
func TestStrategiesCatchATellingQuiz(t *testing.T) {
	var qs []Question
	for i := range 10 {
		qs = append(qs, Question{ID: fmt.Sprintf("q%d", i), Prompt: "Why put a finalizer on a custom resource?", Choices: []Choice{
			{Text: "A finalizer on a custom resource holds its deletion back until cleanup is done.", Correct: true},
			{Text: "For speed."}, {Text: "To label it."}, {Text: "Never."},
		}})
	}
	_, failures := report(qs)
	for _, want := range []string{"longest option", "option sharing most words", "always the first option"} {
		found := false
		for _, f := range failures {
			found = found || strings.Contains(f, want)
		}
		if !found {
			t.Errorf("strategy %q was not caught on a quiz made for it; failures: %q", want, failures)
		}
	}
	for _, f := range failures {
		if strings.Contains(f, "shortest option") {
			t.Errorf("shortest option caught on a quiz where it always loses: %s", f)
		}
	}
}
