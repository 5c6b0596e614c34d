package session

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// ErrJoin is what every *JoinError is (errors.Is): a session was refused
// because the request did not carry this class's join code.
var ErrJoin = errors.New("join code required")

// JoinError says why a visitor without a session was refused one: no join
// code given, or a wrong one.
type JoinError struct {
	// Given is true when a code was given but is not the class's.
	Given bool
	// AskName is true when the right code came in a link (?join=) with no
	// name: the join form asks the name before the lab is made; Code is
	// the code, for the form.
	AskName bool
	Code    string
}

func (e *JoinError) Error() string {
	if e.AskName {
		return "give your name to join the class"
	}
	if e.Given {
		return "that join code is not this class's: check it with your instructor (it is case-sensitive)"
	}
	return "this class needs a join code to start a lab: ask your instructor for it"
}

// Is makes errors.Is(err, ErrJoin) true.
func (e *JoinError) Is(target error) bool { return target == ErrJoin }

// ThrottledError is a join code not even compared: the caller's address
// gave too many wrong ones lately (Options.JoinThrottle).
type ThrottledError struct {
	// Wait is how long until the address may try again.
	Wait time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many wrong join codes from your address: try again in %d s", int(math.Ceil(e.Wait.Seconds())))
}

// Is makes errors.Is(err, ErrJoin) true: the answer is the join form.
func (e *ThrottledError) Is(target error) bool { return target == ErrJoin }

// JoinField is the query parameter and form field carrying the join code.
const JoinField = "join"

// checkJoin refuses a request without the join code, when there is one.
// The comparison is of digests, so it takes the same time whatever the
// guess.
func (m *Manager) checkJoin(r *http.Request) error {
	if m.opts.JoinCode == "" {
		return nil
	}
	given := strings.TrimSpace(r.URL.Query().Get(JoinField))
	if given == "" && r.Method == http.MethodPost {
		given = strings.TrimSpace(r.PostFormValue(JoinField))
	}
	if given == "" {
		return &JoinError{}
	}
	// Guesses are throttled per address: a few, then one every few
	// seconds, so a join code cannot be guessed at the server's speed.
	client := m.opts.ClientOf(r)
	if wait := m.opts.JoinThrottle.Wait(client); wait > 0 {
		m.opts.Logger.Info("Throttled join code guesses", "client", client, "retryAfter", wait.Round(time.Second))
		return &ThrottledError{Wait: wait}
	}
	want, got := sha256.Sum256([]byte(m.opts.JoinCode)), sha256.Sum256([]byte(given))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		m.opts.JoinThrottle.Fail(client)
		m.opts.Logger.Info("Refused a wrong join code", "client", client)
		return &JoinError{Given: true}
	}
	return nil
}
