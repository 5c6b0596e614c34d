// Package content is the course as written, embedded: the lesson pages
// (lessons/), the challenges (challenges/), the instructor's scripted demos
// (demos/) and the quiz (quiz/). It only holds the files; each kind has an
// engine that reads, checks and serves it: package lessons the lessons,
// lessons/judge the challenges, web/demo the demos and package quiz the
// questions and flashcards.
package content

import (
	"embed"
	"io/fs"
)

//go:embed lessons/*.md challenges/*.md demos/*.md
var files embed.FS

// Lessons, Challenges and Demos hold their kind's markdown files at their
// root: one lesson page per file, named by its order and slug; one
// challenge or demo per file, named by its id.
var (
	Lessons    = sub("lessons")
	Challenges = sub("challenges")
	Demos      = sub("demos")
)

// Questions, Cards and ChallengeQuestions are the quiz's three files as
// written: the questions, the flashcards and the questions only
// challenges ask.
var (
	//go:embed quiz/questions.yaml
	Questions []byte
	//go:embed quiz/cards.yaml
	Cards []byte
	//go:embed quiz/challenge-questions.yaml
	ChallengeQuestions []byte
)

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil { // only for a name fs.Sub refuses; these are constants
		panic(err)
	}
	return f
}
