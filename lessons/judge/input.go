package judge

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// An input task makes the learner find or read something and type it: the
// endpoint a Database publishes, the Secret it names, the ID of the
// reconcile that did a thing. A check that turns done by itself cannot tell
// whether the learner looked; an answer can. The answer is judged against
// what exists in the learner's namespace and trace when it is sent, never
// against a string written in a challenge file.

// Input is one kind of typed answer, registered by name from init() and
// named by a task's `input:`.
type Input struct {
	// Label names the field on the page ("Endpoint").
	Label string
	// Shape says in words what a well-formed answer looks like, for the
	// error a malformed one gets ("a host:port").
	Shape string
	// MaxLen bounds the answer in characters.
	MaxLen int
	// Pattern is the shape itself; an answer that does not match it is
	// refused before it is judged.
	Pattern *regexp.Regexp
	// Judge says whether answer (trimmed, well-formed) is right in env. A
	// wrong answer's Detail says what to look at, never the answer. An
	// error means the judge could not look, not that the answer is wrong.
	Judge func(ctx context.Context, env Env, answer string) (Result, error)
}

// InputError is Submit's error for an answer that is empty, too long or
// not of the input's shape: the learner fixes the answer, nothing was
// judged. Its text names what is wrong, for the page to show as it is.
type InputError struct{ Reason string }

// Error returns the reason, as the page shows it.
func (e *InputError) Error() string { return e.Reason }

// ErrNotStarted is Submit's error before the learner's Start: there is
// nothing of the challenge's in the namespace to judge an answer against.
var ErrNotStarted = errors.New("press Start first: an answer is judged against what your namespace holds since the start")

// RegisterInput makes in known by name to challenge files. It panics on a
// duplicate name or an input without a judge, label, shape or length: a
// programming error found at start.
func RegisterInput(name string, in Input) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" || in.Judge == nil || in.Label == "" || in.Shape == "" || in.MaxLen <= 0 || in.Pattern == nil {
		panic(fmt.Sprintf("challenge: RegisterInput %q needs a name, label, shape, length, pattern and judge", name))
	}
	if _, dup := registry.inputs[name]; dup {
		panic(fmt.Sprintf("challenge: input %q registered twice", name))
	}
	registry.inputs[name] = in
}

// LookupInput returns the input kind registered under name.
func LookupInput(name string) (Input, bool) {
	registry.RLock()
	defer registry.RUnlock()
	in, ok := registry.inputs[name]
	return in, ok
}

// InputNames lists the registered input kinds, sorted.
func InputNames() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.inputs))
	for n := range registry.inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// noun is the label inside a sentence: "Reconcile ID" reads "reconcile
// ID"; a kind's name (Database) keeps its capital.
func (in Input) noun() string {
	first, rest, _ := strings.Cut(in.Label, " ")
	if first == "Database" {
		return in.Label
	}
	return strings.TrimSpace(strings.ToLower(first) + " " + rest)
}

// Validate trims answer and checks it against the input's length and
// shape; the error, an *InputError, names what is wrong.
func (in Input) Validate(answer string) (string, error) {
	a := strings.TrimSpace(answer)
	what := in.noun()
	switch {
	case a == "":
		return "", &InputError{fmt.Sprintf("the %s is empty: type %s", what, in.Shape)}
	case !utf8.ValidString(a):
		return "", &InputError{fmt.Sprintf("the %s is not valid text: type %s", what, in.Shape)}
	case utf8.RuneCountInString(a) > in.MaxLen:
		return "", &InputError{fmt.Sprintf("the %s is %d characters long, more than the %d it can be: type %s",
			what, utf8.RuneCountInString(a), in.MaxLen, in.Shape)}
	case !in.Pattern.MatchString(a):
		return "", &InputError{fmt.Sprintf("%q is not %s", a, in.Shape)}
	}
	return a, nil
}

// Submit judges answer for input task taskID against env. It refuses (with
// an error naming what is wrong) a task that does not exist or is not an
// input, an answer before Start (ErrNotStarted), and an answer that is
// empty, too long or of the wrong shape (an *InputError). Like Answer, it
// does not know what the learner has done: a caller refuses a task that
// Evaluate finds locked before it asks.
func (c *Challenge) Submit(ctx context.Context, env Env, taskID, answer string) (Answered, error) {
	i := slices.IndexFunc(c.Tasks, func(t Task) bool { return t.ID == taskID })
	if i < 0 {
		return Answered{}, fmt.Errorf("challenge %s has no task %q: %w", c.ID, taskID, ErrNoTask)
	}
	t := c.Tasks[i]
	if t.Input == "" {
		return Answered{}, fmt.Errorf("task %q of challenge %s takes no typed answer", taskID, c.ID)
	}
	in, ok := LookupInput(t.Input)
	if !ok { // Load refuses such a file; a Challenge built by hand may still say it
		return Answered{}, fmt.Errorf("task %q: input %q is not registered", taskID, t.Input)
	}
	a, err := in.Validate(answer)
	if err != nil {
		return Answered{}, err
	}
	if env.NotStarted {
		return Answered{}, ErrNotStarted
	}
	r, err := in.Judge(ctx, env, a)
	if err != nil {
		return Answered{}, fmt.Errorf("judge the %s: %w", in.noun(), err)
	}
	return Answered{Correct: r.Done, Detail: r.Detail}, nil
}
