package session

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/web/httpx"
)

// ErrJoin is what every *JoinError is (errors.Is): a session was refused
// because the request did not carry this class's join code.
var ErrJoin = errors.New("join code required")

// JoinError says why a visitor without a session was refused one: no join
// code given, or a wrong one.
type JoinError struct {
	// Given is true when a code was given but is not the class's.
	Given bool
}

func (e *JoinError) Error() string {
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

// join answers the join form: it checks the name and the code, starts the
// session and sends the learner on to the lab page they asked for.
func (m *Manager) join(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		writeJoin(w, r, m.opts.Logger, http.StatusBadRequest, Join{Error: "the join form could not be read: " + err.Error()})
		return
	}
	next := labPath(r.PostFormValue("next"))
	raw := r.PostFormValue("name")
	name, err := ValidateName(raw)
	if err != nil {
		writeJoin(w, r, m.opts.Logger, http.StatusBadRequest, Join{Error: err.Error(), Field: "name", Name: excerpt(raw, maxName), Next: next})
		return
	}
	if _, err := m.begin(w, r, name); err != nil {
		var je *JoinError
		var te *ThrottledError
		switch {
		case errors.As(err, &te):
			retryAfter(w, te.Wait)
			writeJoin(w, r, m.opts.Logger, http.StatusTooManyRequests, Join{Error: te.Error(), Field: JoinField, Name: name, Next: next})
			return
		case errors.As(err, &je):
			writeJoin(w, r, m.opts.Logger, http.StatusForbidden, Join{Error: je.Error(), Field: JoinField, Name: name, Next: next})
			return
		}
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// labPath is next when it is a path of the lab, else /lab: the join form's
// hidden field must not send anyone elsewhere.
func labPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path != "/lab" {
		return "/lab"
	}
	q := u.Query()
	q.Del(JoinField)
	if len(q) == 0 {
		return "/lab"
	}
	return "/lab?" + q.Encode()
}

// WriteJoinForm answers a request Begin refused with err (a *JoinError):
// 403 and the join form, which posts back to the page asked for; 429 with
// Retry-After for a *ThrottledError. log hears of a form that fails to
// render.
func WriteJoinForm(w http.ResponseWriter, r *http.Request, log logr.Logger, err error) {
	j := Join{Next: labPath(r.URL.RequestURI())}
	var je *JoinError
	var te *ThrottledError
	switch {
	case errors.As(err, &te):
		retryAfter(w, te.Wait)
		j.Error, j.Field = te.Error(), JoinField
		writeJoin(w, r, log, http.StatusTooManyRequests, j)
		return
	case errors.As(err, &je) && je.Given:
		j.Error, j.Field = je.Error(), JoinField
	}
	writeJoin(w, r, log, http.StatusForbidden, j)
}

// Join is the view model of the join form.
type Join struct {
	// Error says what was wrong; Field names the input it is about.
	Error, Field string
	// Name is the display name as typed, shown again after an error.
	Name string
	// Next is the lab page to go on to.
	Next string
}

func writeJoin(w http.ResponseWriter, r *http.Request, log logr.Logger, code int, j Join) {
	// The form carries what the visitor typed; no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	httpx.Render(w, r, log, code, JoinView(j))
}

// retryAfter sets Retry-After to wait in whole seconds, at least 1.
func retryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
}
