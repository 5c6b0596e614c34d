// Flash messages: the outcome of a form POST, kept on the session for the
// page the redirect leads to.

package session

import (
	"net/http"

	"github.com/oplab-dev/oplab/web/httpx"
)

// Flash is a one-shot message shown on the next page a session renders: the
// outcome of a form POST followed by a redirect.
type Flash struct {
	// Error is true when the message reports a failure.
	Error bool
	// Message is the text to show.
	Message string
	// Field names the input the message is about ("name", "replicas"), if any.
	Field string
	// Form holds the submitted values, so a failed form can be shown again as typed.
	Form map[string]string
}

// Bounds on what a flash keeps: an anonymous POST must not park a large
// body in memory for hours, and no form field is longer than these.
const (
	maxFlashMessage = 300
	maxFlashValue   = 64
	maxFlashFields  = 8
)

// SetFlash stores f to be shown by the caller's next page, cut to bounded
// excerpts.
func (m *Manager) SetFlash(r *http.Request, f Flash) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return
	}
	f = boundFlash(f)
	hash := HashCookie(c.Value)
	_ = m.do(r.Context(), func(t *table) {
		if e, ok := t.sessions[hash]; ok {
			e.flash = &f
		}
	})
}

// boundFlash cuts a flash to what a page needs to show: the message and
// the typed values as excerpts, a few fields.
func boundFlash(f Flash) Flash {
	f.Message = httpx.Excerpt(f.Message, maxFlashMessage)
	f.Field = httpx.Excerpt(f.Field, maxFlashValue)
	if f.Form == nil {
		return f
	}
	form := make(map[string]string, min(len(f.Form), maxFlashFields))
	for k, v := range f.Form {
		if len(form) == maxFlashFields {
			break
		}
		form[httpx.Excerpt(k, maxFlashValue)] = httpx.Excerpt(v, maxFlashValue)
	}
	f.Form = form
	return f
}

// TakeFlash returns and clears the caller's flash, if any.
func (m *Manager) TakeFlash(r *http.Request) *Flash {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	hash := HashCookie(c.Value)
	var f *Flash
	_ = m.do(r.Context(), func(t *table) {
		if e, ok := t.sessions[hash]; ok {
			f, e.flash = e.flash, nil
		}
	})
	return f
}
