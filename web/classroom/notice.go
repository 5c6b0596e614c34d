package classroom

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the instructor tells the whole class, on every page: a broadcast
// message, who stopped the controller and why, and that the class ended.
// Each rides in the one global state, as the timer does, so a page opened
// late shows it too.

// Message is the instructor's broadcast, shown on every page until
// cleared; ID tells one message from the next, so a page says each once.
type Message struct {
	Text string `json:"text"`
	From string `json:"from"`
	ID   int64  `json:"id"`
}

// Halt says the instructor stopped the controller for everyone: who, why
// and since when (Unix ms). Nil while it runs.
type Halt struct {
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	Since  int64  `json:"since"`
}

// End says the instructor ended the class at At (Unix ms): every page with
// a lab session goes to the page of its ended session.
type End struct {
	At int64 `json:"at"`
}

// MaxMessageLen bounds a broadcast and a stop's reason: a line or two on
// every learner's screen.
const MaxMessageLen = 280

// CleanMessage checks a broadcast or a reason: trimmed, one or two lines
// of plain text, at most MaxMessageLen characters. field names it in the
// error.
func CleanMessage(field, text string) (string, error) {
	text = strings.TrimSpace(text)
	if !utf8.ValidString(text) {
		return "", fmt.Errorf("%s: not valid UTF-8 text", field)
	}
	if n := utf8.RuneCountInString(text); n > MaxMessageLen {
		return "", fmt.Errorf("%s: %d characters, at most %d", field, n, MaxMessageLen)
	}
	if i := strings.IndexFunc(text, func(r rune) bool { return r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(text[i:])
		return "", fmt.Errorf("%s: holds the control character %U: use plain text", field, r)
	}
	return text, nil
}

// Broadcast shows text, from from (CleanName), on every page; an empty
// text clears it. The text must have passed CleanMessage.
func (c *Classroom) Broadcast(text, from string) {
	id := c.opts.Now().UnixMilli()
	c.do(func(s *State) bool {
		if text == "" {
			changed := s.Message != nil
			s.Message = nil
			return changed
		}
		if s.Message != nil {
			id = max(id, s.Message.ID+1)
		}
		s.Message = &Message{Text: text, From: CleanName(from), ID: id}
		return true
	})
}

// Halted tells every page that by stopped the controller, for reason;
// Resumed that it runs again.
func (c *Classroom) Halted(by, reason string) {
	since := c.opts.Now().UnixMilli()
	c.do(func(s *State) bool {
		s.Halt = &Halt{By: CleanName(by), Reason: reason, Since: since}
		return true
	})
}

// Resumed takes the Halt away.
func (c *Classroom) Resumed() {
	c.do(func(s *State) bool {
		changed := s.Halt != nil
		s.Halt = nil
		return changed
	})
}

// Ended tells every page the class ended now.
func (c *Classroom) Ended() {
	at := c.opts.Now().UnixMilli()
	c.do(func(s *State) bool {
		s.End = &End{At: at}
		s.Halt, s.Message, s.Timer, s.Goto = nil, nil, nil, nil
		return true
	})
}

// Begun forgets an ended class: a page opened from now on is not sent
// away. Learners joining after an end start a new class.
func (c *Classroom) Begun() {
	c.do(func(s *State) bool {
		changed := s.End != nil
		s.End = nil
		return changed
	})
}
