// Package instructor serves /instructor, the page of the person who started
// oplab: it holds the switch that stops and starts the one controller every
// learner shares. A learner's own Stop only pauses their namespace (see
// web/lab); this page is the only way to stop reconciling for everyone.
//
// The page is guarded by the instructor token that oplab prints at start. It
// is asked for once (?token= on the printed URL, or the form) and then kept
// in an HttpOnly, SameSite=Strict cookie scoped to /instructor, so it never
// travels with a learner's page, stream or form.
package instructor

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/go-logr/logr"

	"github.com/oplab-dev/oplab/web/httpx"
)

// CookieName is the cookie that proves the instructor token was given.
const CookieName = "oplab_instructor"

// Switch stops and starts the whole controller.
type Switch interface {
	Start(ctx context.Context) error
	Stop() error
	Running() bool
}

// Options configures the Handler.
type Options struct {
	// Token is the instructor token; empty turns the instructor page off.
	Token      string
	Controller Switch
	Demo       Demo // the scripted demos (demo.go); zero: none
	Roster     Roster
	Present    Presenting
	// Timer is the class timer (classroom.Classroom); nil hides it.
	Timer ClassTimer
	// Look opens a learner's lab read-only from the roster; zero: not.
	Look Look
	// Class tells every page the class controls' notices
	// (classroom.Classroom); nil: no broadcast, no reason on a stop, no
	// end of class.
	Class Class
	// Join is the panel and projector screen learners join from.
	Join Join
	// Throttle slows down wrong tokens per client address (ClientOf);
	// nil: none.
	Throttle Throttle
	// ClientOf tells a request's client address; nil: the peer's.
	ClientOf func(*http.Request) string
	Logger   logr.Logger
}

// Throttle is what the handler needs of session.Throttle.
type Throttle interface {
	Wait(addr string) time.Duration
	Fail(addr string)
}

// The instructor token's throttle: a few typos, then one guess every
// 30 s from an address. (The token is at least 16 characters; this makes
// guessing it at the server's speed impossible, not merely slow.)
const (
	TokenGuesses    = 5
	TokenGuessEvery = 30 * time.Second
)

// Handler serves the instructor routes.
type Handler struct {
	opts Options
	// base outlives requests: a controller started from the page must keep
	// running after the request is answered.
	base context.Context
	// proof is what the cookie holds: a digest of the token, so the cookie
	// is not the token itself and every comparison has a fixed length.
	proof [sha256.Size]byte
	// end is the end of the class under way, if any.
	end ending
}

// New returns the instructor handler. ctx bounds the controller started
// from the page.
func New(ctx context.Context, opts Options) *Handler {
	return &Handler{opts: opts, base: ctx, proof: digest(opts.Token)}
}

// cookieKey keys the cookie's digest. It is made at start and never
// leaves the process, so no one can compute a cookie from a guess of the
// token: a cookie is either one this process handed out or a guess at 256
// random bits, and it can be checked before the throttle, at no cost to
// the instructor's address. (A plain digest of the token would let a
// guesser test tokens as cookies, which the throttle would then have to
// count, so a room's wrong cookies would lock the instructor out.) Signing
// in again after a restart is the price.
var cookieKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails
	return k
}()

func digest(token string) [sha256.Size]byte {
	m := hmac.New(sha256.New, cookieKey)
	m.Write([]byte("oplab instructor\x00" + token))
	var d [sha256.Size]byte
	m.Sum(d[:0])
	return d
}

// Register mounts the instructor routes on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /instructor", h.page)
	mux.HandleFunc("POST /instructor", h.login)
	mux.HandleFunc("POST /instructor/controller/{action}", h.switchController)
	h.registerDemo(mux)
	h.registerRoster(mux)
	h.registerPresent(mux)
	h.registerTimer(mux)
	h.registerLook(mux)
	h.registerHelp(mux)
	h.registerClass(mux)
	h.registerJoin(mux)
}

// access is what a request proves about the token.
type access int

const (
	noToken access = iota
	wrongToken
	// wrongCookie is a cookie this process did not hand out: from
	// before a restart (or a change of token), or forged.
	wrongCookie
	throttled
	instructor
)

// check reads the token from the cookie, or from given (a query or form
// value), comparing in constant time. The cookie is compared first and
// never throttled: it is a keyed digest (cookieKey), so a wrong one guesses
// nothing and costs the caller's address nothing, and a right one gets in
// however many wrong tokens came from that address (a room behind one
// NAT). A wrong given token counts against the caller's address; an
// address with no try left has its given token not compared at all
// (throttled, with the wait).
func (h *Handler) check(r *http.Request, given string) (access, time.Duration) {
	if given == "" {
		c, err := r.Cookie(CookieName)
		if err != nil {
			return noToken, 0
		}
		if subtle.ConstantTimeCompare([]byte(c.Value), []byte(fmt.Sprintf("%x", h.proof))) == 1 {
			return instructor, 0
		}
		h.opts.Logger.Info("Refused a stale or forged instructor cookie", "client", h.clientOf(r))
		return wrongCookie, 0
	}
	client := h.clientOf(r)
	if h.opts.Throttle != nil {
		if wait := h.opts.Throttle.Wait(client); wait > 0 {
			h.opts.Logger.Info("Throttled instructor token guesses", "client", client, "retryAfter", wait.Round(time.Second))
			return throttled, wait
		}
	}
	d := digest(given)
	if subtle.ConstantTimeCompare(d[:], h.proof[:]) == 1 {
		return instructor, 0
	}
	if h.opts.Throttle != nil {
		h.opts.Throttle.Fail(client)
	}
	h.opts.Logger.Info("Refused a wrong instructor token", "client", client)
	return wrongToken, 0
}

func (h *Handler) clientOf(r *http.Request) string {
	if h.opts.ClientOf != nil {
		return h.opts.ClientOf(r)
	}
	return r.RemoteAddr
}

// tooMany answers a throttled request: 429 with Retry-After.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	secs := httpx.RetryAfter(w, wait)
	http.Error(w, fmt.Sprintf("too many wrong instructor tokens from your address: try again in %s s", secs), http.StatusTooManyRequests)
}

// setCookie remembers the instructor in this browser.
func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: fmt.Sprintf("%x", h.proof), Path: "/instructor",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// page shows the switch to the instructor, and the token form to anyone
// else: 401 without a token, 403 with a wrong one. A token in the URL is
// exchanged for the cookie and dropped from the address bar by a redirect.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	if h.opts.Token == "" {
		h.render(w, r, http.StatusForbidden, LoginView(Login{Error: "This oplab was started without an instructor token."}))
		return
	}
	given := r.URL.Query().Get("token")
	switch a, wait := h.check(r, given); a {
	case noToken:
		h.render(w, r, http.StatusUnauthorized, LoginView(Login{}))
		return
	case throttled:
		tooMany(w, wait)
		return
	case wrongCookie:
		h.clearCookie(w)
		h.render(w, r, http.StatusForbidden, LoginView(Login{Error: staleCookie}))
		return
	case wrongToken:
		h.render(w, r, http.StatusForbidden, LoginView(Login{Error: "That is not the instructor token oplab printed at start."}))
		return
	}
	if given != "" {
		h.setCookie(w, r)
		http.Redirect(w, r, "/instructor", http.StatusSeeOther)
		return
	}
	p := h.fullPage(r)
	p.Message = r.URL.Query().Get("done")
	h.render(w, r, http.StatusOK, PageView(p))
}

// fullPage is the whole instructor page for r's browser. A refusal shown
// in one of its panels is set there by the caller, so the page around it
// stays whole.
func (h *Handler) fullPage(r *http.Request) Page {
	return Page{
		ControllerRunning: h.opts.Controller.Running(),
		Present:           h.presentView(r), Demo: h.demoView(r, ""), Roster: h.rosterView(r), Timer: h.timerView(),
		CanSpeak: h.opts.Class != nil, End: h.endView(), Join: h.joinView(r),
	}
}

// login takes the token from the form.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	given := r.PostFormValue("token")
	if h.opts.Token == "" || given == "" {
		h.render(w, r, http.StatusForbidden, LoginView(Login{Error: "That is not the instructor token oplab printed at start."}))
		return
	}
	switch a, wait := h.check(r, given); a {
	case throttled:
		tooMany(w, wait)
		return
	case instructor:
	default:
		h.render(w, r, http.StatusForbidden, LoginView(Login{Error: "That is not the instructor token oplab printed at start."}))
		return
	}
	h.setCookie(w, r)
	http.Redirect(w, r, "/instructor", http.StatusSeeOther)
}

// allowed answers 401 or 403 unless the request carries the instructor's
// cookie, and reports whether it does. Every instructor action asks it.
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.Token == "" {
		http.Error(w, "this oplab was started without an instructor token", http.StatusForbidden)
		return false
	}
	// Only the cookie is read here, and a cookie is never throttled.
	switch a, _ := h.check(r, ""); a {
	case noToken:
		http.Error(w, "instructor token required: open the instructor URL oplab printed at start", http.StatusUnauthorized)
		return false
	case wrongCookie:
		h.clearCookie(w)
		http.Error(w, "this browser's instructor cookie is from before oplab last started, or not oplab's: give the instructor token again on /instructor", http.StatusForbidden)
		return false
	}
	return true
}

// staleCookie is the refusal of an instructor cookie this process did not
// hand out.
const staleCookie = "This browser's sign-in is from before oplab last started, or its cookie is not oplab's: give the instructor token again."

// clearCookie drops a cookie that no longer proves the token (oplab
// restarted), so a page polling with it is refused once, not on every
// poll.
func (h *Handler) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/instructor", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// guard serves next only to the instructor, never from a cache.
func (h *Handler) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-store")
		if h.allowed(w, r) {
			next(w, r)
		}
	}
}

// switchController stops or starts the controller for every learner.
func (h *Handler) switchController(w http.ResponseWriter, r *http.Request) {
	if !h.allowed(w, r) {
		return
	}
	action := r.PathValue("action")
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	var by, reason string
	if action == "stop" {
		// One click must not stop a whole class: the form asks for a
		// confirmation, and says who and why, which every learner reads.
		var err error
		if by, reason, err = stopForm(r); err != nil {
			h.bad(w, r, http.StatusBadRequest, err)
			return
		}
	}
	msg, err := h.act(action)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	if h.opts.Class != nil {
		switch msg {
		case "stopped":
			h.opts.Class.Halted(by, reason)
		case "started":
			h.opts.Class.Resumed()
		}
	}
	h.opts.Logger.Info("Switched the controller from the instructor page", "action", action, "reason", reason)
	http.Redirect(w, r, "/instructor?done="+msg, http.StatusSeeOther)
}

// Messages the page shows after an action, by their key in ?done=.
var messages = map[string]string{
	"stopped":         "Stopped the controller for everyone. Every learner's changes now pile up unreconciled.",
	"started":         "Started the controller. Its caches sync, then it reconciles every Database in every namespace.",
	"already-stopped": "The controller was already stopped.",
	"already-running": "The controller was already running.",
}

func (h *Handler) act(action string) (string, error) {
	c := h.opts.Controller
	switch action {
	case "stop":
		if !c.Running() {
			return "already-stopped", nil
		}
		if err := c.Stop(); err != nil {
			return "", fmt.Errorf("stop the controller: %w", err)
		}
		return "stopped", nil
	case "start":
		if c.Running() {
			return "already-running", nil
		}
		if err := c.Start(h.base); err != nil {
			return "", fmt.Errorf("start the controller: %w", err)
		}
		return "started", nil
	}
	return "", fmt.Errorf("action: %q is not a controller action: want start or stop", action)
}

// render writes an instructor page. No cache may keep one: it carries the
// roster and the controls that only the token opens.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, c templ.Component) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.Render(w, r, h.opts.Logger, code, c)
}
