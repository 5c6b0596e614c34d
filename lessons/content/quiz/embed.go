// Package quiz holds the quiz's content, embedded: the questions
// (questions.yaml), the flashcards (cards.yaml) and the questions only
// challenges ask (challenge-questions.yaml). Package quiz at the top level
// (github.com/oplab-dev/oplab/quiz) reads, checks and grades them.
package quiz

import _ "embed"

// Questions, Cards and ChallengeQuestions are the three files as written.
var (
	//go:embed questions.yaml
	Questions []byte
	//go:embed cards.yaml
	Cards []byte
	//go:embed challenge-questions.yaml
	ChallengeQuestions []byte
)
