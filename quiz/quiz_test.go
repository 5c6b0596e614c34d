package quiz

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
)

func mustLoad(t *testing.T) Bank {
	t.Helper()
	b, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return b
}

// The embedded data must be complete, and every link in it must lead to a
// real lesson section and a real lab scenario.
func TestDataIsValidAndLinksResolve(t *testing.T) {
	b := mustLoad(t)
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatalf("load lessons: %v", err)
	}
	if n := len(b.Questions); n < 30 {
		t.Errorf("%d questions, want at least 30 (3 from the material + 27)", n)
	}
	if n := len(b.Cards); n < 12 {
		t.Errorf("%d cards, want at least 12", n)
	}
	for _, q := range b.Questions {
		if len(q.Correct()) == 0 {
			t.Errorf("question %s has no correct answer", q.ID)
		}
		if err := course.Resolve(q.Lesson); err != nil {
			t.Errorf("question %s: %v", q.ID, err)
		}
		if !strings.Contains(q.Lesson, "#") && q.ID != "operator-definition" {
			t.Errorf("question %s links a whole lesson, not a section: %s", q.ID, q.Lesson)
		}
		if err := course.Resolve(q.DemoURL()); err != nil {
			t.Errorf("question %s: %v", q.ID, err)
		}
	}
	for _, c := range b.Cards {
		if err := course.Resolve(c.Lesson); err != nil {
			t.Errorf("card %s: %v", c.ID, err)
		}
	}
}

// The material's own three questions and four cards are in the bank.
func TestMaterialIsCovered(t *testing.T) {
	b := mustLoad(t)
	for _, id := range []string{"level-triggered", "already-exists", "why-finalizer"} {
		if !slices.ContainsFunc(b.Questions, func(q Question) bool { return q.ID == id }) {
			t.Errorf("question %s missing", id)
		}
	}
	for _, id := range []string{"level-triggered", "observed-generation", "owner-references", "finalizer-vs-owner"} {
		if !slices.ContainsFunc(b.Cards, func(c Card) bool { return c.ID == id }) {
			t.Errorf("card %s missing", id)
		}
	}
}

// The quiz should cover every lesson section listed in the issue.
func TestQuestionsCoverEverySection(t *testing.T) {
	b := mustLoad(t)
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, q := range b.Questions {
		linked[q.Lesson] = true
	}
	for _, l := range course.Kind(lessons.KindLesson) {
		for _, s := range l.Sections {
			if !linked[l.URL()+"#"+s.ID] {
				t.Errorf("no question links section %s#%s", l.URL(), s.ID)
			}
		}
	}
}

var sample = []Question{
	{ID: "one", Prompt: "p", Explanation: "e", Lesson: "/lessons/x", Demo: "finalizer",
		Choices: []Choice{{Text: "a"}, {Text: "b", Correct: true}, {Text: "c"}}},
	{ID: "many", Prompt: "p", Explanation: "e", Lesson: "/lessons/x", Demo: "finalizer",
		Choices: []Choice{{Text: "a", Correct: true}, {Text: "b"}, {Text: "c", Correct: true}}},
}

func TestGrade(t *testing.T) {
	tests := []struct {
		name      string
		answers   Answers
		wantScore int
		wantMiss  []string
		wantErr   string
	}{
		{name: "all right", answers: Answers{"one": {1}, "many": {2, 0}}, wantScore: 2},
		{name: "nothing answered", answers: Answers{}, wantMiss: []string{"one", "many"}},
		{name: "single wrong", answers: Answers{"one": {0}, "many": {0, 2}}, wantScore: 1, wantMiss: []string{"one"}},
		{name: "pick-all partly right is wrong", answers: Answers{"one": {1}, "many": {0}}, wantScore: 1, wantMiss: []string{"many"}},
		{name: "pick-all with an extra is wrong", answers: Answers{"one": {1}, "many": {0, 1, 2}}, wantScore: 1, wantMiss: []string{"many"}},
		{name: "repeats are ignored", answers: Answers{"one": {1, 1}, "many": {2, 0, 2}}, wantScore: 2},
		{name: "unknown question", answers: Answers{"zzz": {0}}, wantErr: `answer to question "zzz", which is not in this quiz`},
		{name: "choice out of range", answers: Answers{"one": {3}}, wantErr: `question "one" has choices 0 to 2, not 3`},
		{name: "negative choice", answers: Answers{"one": {-1}}, wantErr: `question "one" has choices 0 to 2, not -1`},
		{name: "two answers to a single", answers: Answers{"one": {0, 1}}, wantErr: `question "one" takes one answer, got 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Grade(sample, tt.answers)
			if !checkErr(t, err, tt.wantErr) {
				return
			}
			if r.Score != tt.wantScore || r.Total != 2 {
				t.Errorf("score %d/%d, want %d/2", r.Score, r.Total, tt.wantScore)
			}
			if diff := cmp.Diff(tt.wantMiss, r.Missed()); diff != "" {
				t.Errorf("missed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGradeReportsEachItem(t *testing.T) {
	r, err := Grade(sample, Answers{"many": {2, 0}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Graded{
		{Question: sample[0]},
		{Question: sample[1], Picked: []int{0, 2}, Answered: true, Correct: true},
	}
	if diff := cmp.Diff(want, r.Items); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
}

func TestGradeOne(t *testing.T) {
	tests := []struct {
		name    string
		q       Question
		picked  []int
		want    bool
		wantErr string
	}{
		{name: "right", q: sample[0], picked: []int{1}, want: true},
		{name: "wrong", q: sample[0], picked: []int{2}},
		{name: "pick-all right in any order", q: sample[1], picked: []int{2, 0}, want: true},
		{name: "pick-all partly", q: sample[1], picked: []int{0}},
		{name: "nothing picked", q: sample[0], wantErr: `no choice picked for question "one"`},
		{name: "out of range", q: sample[0], picked: []int{7}, wantErr: `question "one" has choices 0 to 2, not 7`},
		{name: "two on a single", q: sample[0], picked: []int{0, 1}, wantErr: `question "one" takes one answer, got 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := GradeOne(tt.q, tt.picked)
			if !checkErr(t, err, tt.wantErr) {
				return
			}
			if g.Correct != tt.want || !g.Answered {
				t.Errorf("graded %+v, want correct %v", g, tt.want)
			}
		})
	}
	if _, err := Find(sample, "many"); err != nil {
		t.Error(err)
	}
	if _, err := Find(sample, "zzz"); err == nil || !strings.Contains(err.Error(), `no question has id "zzz"`) {
		t.Errorf("Find(zzz) = %v", err)
	}
}

func TestParseForm(t *testing.T) {
	tests := []struct {
		name    string
		form    url.Values
		want    Answers
		wantErr string
	}{
		{name: "radio and checkboxes", form: url.Values{"q.one": {"1"}, "q.many": {"0", "2"}, "only": {"one"}}, want: Answers{"one": {1}, "many": {0, 2}}},
		{name: "empty", form: url.Values{}, want: Answers{}},
		{name: "not a number", form: url.Values{"q.one": {"b"}}, wantErr: `answer "b" to question "one" is not a choice number`},
		{name: "unknown question", form: url.Values{"q.nope": {"0"}}, wantErr: `question "nope", which is not in this quiz`},
		{name: "out of range", form: url.Values{"q.many": {"9"}}, wantErr: `question "many" has choices 0 to 2, not 9`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseForm(sample, tt.form)
			if !checkErr(t, err, tt.wantErr) {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name    string
		ids     []string
		want    []string
		wantErr string
	}{
		{name: "none means all", ids: nil, want: []string{"one", "many"}},
		{name: "keeps quiz order", ids: []string{"many", "one"}, want: []string{"one", "many"}},
		{name: "subset", ids: []string{"many"}, want: []string{"many"}},
		{name: "unknown", ids: []string{"one", "nope"}, wantErr: `no question has id "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(sample, tt.ids)
			if !checkErr(t, err, tt.wantErr) {
				return
			}
			var ids []string
			for _, q := range got {
				ids = append(ids, q.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("got %v, want %v", ids, tt.want)
			}
		})
	}
}

func TestParseRejectsBadData(t *testing.T) {
	const good = "- id: a\n  prompt: p\n  explanation: e\n  lesson: /lessons/x\n  demo: finalizer\n  choices:\n  - text: x\n    correct: true\n  - text: y\n"
	tests := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{"good", good, ""},
		{"empty", "[]", "no questions"},
		{"not yaml list", "a: b", "decode questions"},
		{"unknown field", strings.Replace(good, "prompt:", "promt:", 1), `unknown field "promt"`},
		{"no correct", strings.Replace(good, "    correct: true\n", "", 1), "no choice is marked correct"},
		{"all correct", good + "    correct: true\n", "every choice is marked correct"},
		{"one choice", strings.Replace(good, "  - text: y\n", "", 1), "has 1 choices, needs at least 2"},
		{"empty choice", strings.Replace(good, "text: y", `text: ""`, 1), "choice 2 is empty"},
		{"no prompt", strings.Replace(good, "prompt: p", `prompt: ""`, 1), "prompt is empty"},
		{"no explanation", strings.Replace(good, "explanation: e", `explanation: ""`, 1), "explanation is empty"},
		{"bad lesson link", strings.Replace(good, "/lessons/x", "/quiz", 1), `lesson link "/quiz" must start with /lessons/`},
		{"bad id", strings.Replace(good, "id: a", "id: A B", 1), `id "A B" must be lowercase`},
		{"no demo", strings.Replace(good, "demo: finalizer", `demo: ""`, 1), `demo "" must name a lab scenario`},
		{"bad challenge", good + "  challenge: Not A Slug\n", `challenge "Not A Slug" must be lowercase`},
		{"good challenge", good + "  challenge: interview-walk-through\n", ""},
		{"duplicate id", good + strings.Replace(good, "- id: a", "- id: a", 1), `question 2: id "a" is used twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQuestions([]byte(tt.yaml))
			checkErr(t, err, tt.wantErr)
		})
	}
}

func TestParseCardsRejectsBadData(t *testing.T) {
	const good = "- id: a\n  front: f\n  back: b\n  lesson: /lessons/x\n"
	tests := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{"good", good, ""},
		{"empty", "[]", "no cards"},
		{"no back", strings.Replace(good, "back: b", `back: ""`, 1), `card 1 ("a"): front and back must both have text`},
		{"duplicate", good + good, `card 2: id "a" is used twice`},
		{"bad link", strings.Replace(good, "/lessons/x", "x", 1), `lesson link "x" must start with /lessons/`},
		{"unknown field", good + "  extra: 1\n", `unknown field "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCards([]byte(tt.yaml))
			checkErr(t, err, tt.wantErr)
		})
	}
}

// checkErr fails t unless err matches want (a substring; "" for no error)
// and reports whether the test should go on to check the result.
func checkErr(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
	return want == ""
}

// The challenges' own questions load with the quiz's checks, and none is a
// quiz question (the quiz shows its answers after a wrong try).
func TestChallengeQuestionsAreApart(t *testing.T) {
	b, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.ChallengeQuestions) == 0 {
		t.Fatal("no challenge questions: the operator-or-chart challenge asks one")
	}
	for _, q := range b.ChallengeQuestions {
		if _, err := Find(b.Questions, q.ID); err == nil {
			t.Errorf("challenge question %s is also on the quiz", q.ID)
		}
	}
}

// Some questions make the learner read what the lab or kubectl shows and
// say what happens next; their excerpt is data of its own, not prose in the
// prompt, so the page can show it verbatim.
func TestSomeQuestionsReadATraceOrAnObject(t *testing.T) {
	b := mustLoad(t)
	var ids []string
	for _, q := range b.Questions {
		if q.Code == "" {
			continue
		}
		ids = append(ids, q.ID)
		if strings.TrimSpace(q.Code) != q.Code {
			t.Errorf("question %s: code starts or ends with blank space", q.ID)
		}
		if !strings.Contains(q.Prompt, "next") {
			t.Errorf("question %s shows an excerpt but does not ask what happens next: %q", q.ID, q.Prompt)
		}
	}
	if len(ids) < 4 {
		t.Errorf("%d questions with an excerpt (%v), want at least 4", len(ids), ids)
	}
}

// The README counts the quiz's questions; the count is a promise to the
// teams choosing oplab, so it must follow the data.
func TestReadmeCountsTheQuiz(t *testing.T) {
	b := mustLoad(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`The quiz has (\d+) questions \((\d+) single-answer, (\d+) pick-all\)`).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md no longer says "The quiz has N questions (S single-answer, P pick-all)"`)
	}
	multi, code := 0, 0
	for _, q := range b.Questions {
		if q.Multi() {
			multi++
		}
		if q.Code != "" {
			code++
		}
	}
	got := fmt.Sprintf("%d %d %d", len(b.Questions), len(b.Questions)-multi, multi)
	if want := fmt.Sprintf("%s %s %s", m[1], m[2], m[3]); got != want {
		t.Errorf("README counts questions, single-answer, pick-all as %s; the quiz has %s", want, got)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), fmt.Sprintf("pick-all); %s of them show a timeline excerpt", numberWord(code))) {
		t.Errorf("README does not say %q of the questions show a timeline excerpt or an object", numberWord(code))
	}
}

func numberWord(n int) string {
	if words := []string{"none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}; n < len(words) {
		return words[n]
	}
	return fmt.Sprint(n)
}
