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
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/a-h/templ"
	"github.com/go-logr/logr"
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
	Present    Presenting
	Logger     logr.Logger
}

// Handler serves the instructor routes.
type Handler struct {
	opts Options
	// base outlives requests: a controller started from the page must keep
	// running after the request is answered.
	base context.Context
	// proof is what the cookie holds: a digest of the token, so the cookie
	// is not the token itself and every comparison has a fixed length.
	proof [sha256.Size]byte
}

// New returns the instructor handler. ctx bounds the controller started
// from the page.
func New(ctx context.Context, opts Options) *Handler {
	return &Handler{opts: opts, base: ctx, proof: digest(opts.Token)}
}

func digest(token string) [sha256.Size]byte {
	return sha256.Sum256([]byte("oplab instructor\x00" + token))
}

// Register mounts the instructor routes on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /instructor", h.page)
	mux.HandleFunc("POST /instructor", h.login)
	mux.HandleFunc("POST /instructor/controller/{action}", h.switchController)
	h.registerPresent(mux)
}

// access is what a request proves about the token.
type access int

const (
	noToken access = iota
	wrongToken
	instructor
)

// check reads the token from the cookie, or from given (a query or form
// value), comparing in constant time.
func (h *Handler) check(r *http.Request, given string) access {
	if given != "" {
		d := digest(given)
		if subtle.ConstantTimeCompare(d[:], h.proof[:]) == 1 {
			return instructor
		}
		return wrongToken
	}
	c, err := r.Cookie(CookieName)
	if err != nil {
		return noToken
	}
	want := fmt.Sprintf("%x", h.proof)
	if subtle.ConstantTimeCompare([]byte(c.Value), []byte(want)) == 1 {
		return instructor
	}
	return wrongToken
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
		render(w, r, http.StatusForbidden, LoginView(Login{Error: "This oplab was started without an instructor token."}))
		return
	}
	given := r.URL.Query().Get("token")
	switch h.check(r, given) {
	case noToken:
		render(w, r, http.StatusUnauthorized, LoginView(Login{}))
		return
	case wrongToken:
		render(w, r, http.StatusForbidden, LoginView(Login{Error: "That is not the instructor token oplab printed at start."}))
		return
	}
	if given != "" {
		h.setCookie(w, r)
		http.Redirect(w, r, "/instructor", http.StatusSeeOther)
		return
	}
	render(w, r, http.StatusOK, PageView(Page{ControllerRunning: h.opts.Controller.Running(), Message: r.URL.Query().Get("done"), Present: h.presentView()}))
}

// login takes the token from the form.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	given := r.PostFormValue("token")
	if h.opts.Token == "" || given == "" || h.check(r, given) != instructor {
		h.opts.Logger.Info("Refused an instructor login", "remote", r.RemoteAddr)
		render(w, r, http.StatusForbidden, LoginView(Login{Error: "That is not the instructor token oplab printed at start."}))
		return
	}
	h.setCookie(w, r)
	http.Redirect(w, r, "/instructor", http.StatusSeeOther)
}

// switchController stops or starts the controller for every learner.
func (h *Handler) switchController(w http.ResponseWriter, r *http.Request) {
	switch h.check(r, "") {
	case noToken:
		http.Error(w, "instructor token required: open the instructor URL oplab printed at start", http.StatusUnauthorized)
		return
	case wrongToken:
		http.Error(w, "wrong instructor token", http.StatusForbidden)
		return
	}
	if h.opts.Token == "" {
		http.Error(w, "this oplab was started without an instructor token", http.StatusForbidden)
		return
	}
	msg, err := h.act(r.PathValue("action"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	h.opts.Logger.Info("Switched the controller from the instructor page", "action", r.PathValue("action"))
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

func render(w http.ResponseWriter, r *http.Request, code int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := c.Render(r.Context(), w); err != nil {
		_, _ = fmt.Fprintf(w, "<p class=error>render failed: %s</p>", templ.EscapeString(err.Error()))
	}
}
