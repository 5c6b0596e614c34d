// Package httpx holds the few HTTP helpers every web package shares, so that
// each behaves one way everywhere: a page is rendered whole or not at all
// (Render), a JSON reply is written one way (JSON), a request says whether
// it wants JSON (WantsJSON), a comma-separated list of IDs is read one
// way (SplitIDs), and a throttled reply says when to come back one way
// (RetryAfter).
package httpx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-logr/logr"
)

// Render writes c as an HTML page with status. It renders into memory
// first: a template that fails halfway would otherwise have sent its status
// and half a page, and the browser would show the half as if it were the
// page. On failure the learner gets a 500 with the error page and log gets
// the error, which is a defect in oplab, not in the request.
//
// Headers set on w before Render (Cache-Control, say) are kept.
func Render(w http.ResponseWriter, r *http.Request, log logr.Logger, status int, c templ.Component) {
	var b bytes.Buffer
	if err := c.Render(r.Context(), &b); err != nil {
		log.Error(err, "Failed to render page", "path", r.URL.Path)
		renderError(w, r)
		return
	}
	writeHTML(w, status, b.Bytes())
}

// renderError answers with the error page; should that fail too, with
// plain text, so a reply is sent whatever broke.
func renderError(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	if err := errorPage().Render(r.Context(), &b); err != nil {
		http.Error(w, "oplab failed while drawing this page; the error is in its log", http.StatusInternalServerError)
		return
	}
	writeHTML(w, http.StatusInternalServerError, b.Bytes())
}

func writeHTML(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// JSON writes v as the JSON reply with status. Like Render it encodes into
// memory first, so a value that cannot be encoded is a 500 with an error
// object rather than a truncated document. Every JSON reply oplab sends is
// an answer about live state (a grade, a task's state, whether code runs),
// so no cache may keep it.
func JSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]string{"error": fmt.Sprintf("encode the reply: %v", err)})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	// The newline ends the document as json.Encoder would, which is what
	// these replies always ended with.
	_, _ = w.Write(append(body, '\n'))
}

// WantsJSON reports whether the request prefers a JSON reply to an HTML
// page: its Accept header names application/json (or application/*+json)
// with a quality above zero and at least that of text/html. A browser's
// navigation (text/html, then */* at a lower quality) gets the page, the
// pages' scripts (Accept: application/json) get JSON, and a client that
// says application/json;q=0 is not sent it. Wildcards count for neither
// side: the page is the default.
func WantsJSON(r *http.Request) bool {
	jsonQ, htmlQ := -1.0, -1.0
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(s, 64); err != nil || q < 0 || q > 1 {
				continue
			}
		}
		switch {
		case mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"):
			jsonQ = max(jsonQ, q)
		case mt == "text/html":
			htmlQ = max(htmlQ, q)
		}
	}
	return jsonQ > 0 && jsonQ >= htmlQ
}

// SplitIDs reads a comma-separated list of IDs ("a, b,c"), dropping blanks
// and keeping at most limit of them: the lists come from query strings and
// forms, and what they name (quiz questions, a challenge's tasks) is short,
// so a longer list is only ever a mistake or an attack. Empty gives nil.
func SplitIDs(s string, limit int) []string {
	var ids []string
	for id := range strings.SplitSeq(s, ",") {
		if len(ids) >= limit {
			break
		}
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// RetryAfter sets Retry-After to wait in whole seconds, rounded up and at
// least 1 (a client told 0 would retry at once and be throttled again), and
// returns the seconds it set so a message can quote the same number.
func RetryAfter(w http.ResponseWriter, wait time.Duration) string {
	secs := strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
	w.Header().Set("Retry-After", secs)
	return secs
}

// Download writes v as an indented JSON file the browser saves as name.
// Like JSON it encodes into memory first, so a value that cannot be
// encoded is a 500 with an error object, never a truncated file the
// learner would only find broken when they load it again.
func Download(w http.ResponseWriter, name string, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		JSON(w, http.StatusInternalServerError, map[string]string{"error": fmt.Sprintf("encode %s: %v", name, err)})
		return
	}
	Attachment(w, name, "application/json", append(body, '\n'))
}

// Attachment writes body as a file the browser saves as name
// (Content-Disposition: attachment), of contentType. No cache keeps it:
// every file oplab hands out is of this moment, and some hold a
// credential (a learner's kubeconfig).
func Attachment(w http.ResponseWriter, name, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// Excerpt cuts s to its first n characters, with "…" when it cut, for a
// message that quotes what a client sent: a name, a field, a file name.
// A cut never splits a character, and invalid UTF-8 in what is kept goes.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return strings.ToValidUTF8(s[:pos], "") + "…"
		}
		i++
	}
	return s
}
