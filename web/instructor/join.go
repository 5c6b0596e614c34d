package instructor

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/yeqown/go-qrcode/v2"

	"github.com/oplab-dev/oplab/web/httpx"
)

// A room joins in a minute: the instructor page shows the full join URL
// (the code in it) and a QR code of it, drawn here by a maintained library
// (github.com/yeqown/go-qrcode) as SVG, and a projector screen of the two
// in big type with the count of learners joined. The URL's scheme and host
// are --public-url's, else those the instructor's own browser used.

// Join configures the join panel.
type Join struct {
	// PublicURL is where learners reach oplab (--public-url), scheme and
	// host, no path; empty: the address the instructor's request named.
	PublicURL string
	// Code is the class's join code; empty: none (the URL is /lab).
	Code string
}

// JoinView is the join panel's and the projector screen's view model.
type JoinView struct {
	URL, Code string
	// Local says the URL names this machine only (localhost, a loopback
	// address), which no learner's device reaches.
	Local bool
	// Joined counts the learners' sessions.
	Joined int
}

func (h *Handler) registerJoin(mux *http.ServeMux) {
	mux.HandleFunc("GET /instructor/join", h.guard(h.joinScreen))
	mux.HandleFunc("GET /instructor/join/qr.svg", h.guard(h.joinQR))
	mux.HandleFunc("GET /instructor/join/count", h.guard(h.joinCount))
}

// joinURL is the full URL learners join by.
func (h *Handler) joinURL(r *http.Request) (string, bool) {
	base := strings.TrimSuffix(h.opts.Join.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	u := base + "/lab"
	if c := h.opts.Join.Code; c != "" {
		u += "?join=" + url.QueryEscape(c)
	}
	return u, isLocal(base)
}

// isLocal reports whether base names this machine only.
func isLocal(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

func (h *Handler) joinView(r *http.Request) JoinView {
	u, local := h.joinURL(r)
	v := JoinView{URL: u, Code: h.opts.Join.Code, Local: local}
	if ro := h.opts.Roster; ro.Learners != nil {
		if list, err := ro.Learners.List(r.Context()); err == nil {
			for _, s := range list {
				if !s.Instructor {
					v.Joined++
				}
			}
		}
	}
	return v
}

// joinScreen is the projector's join screen.
func (h *Handler) joinScreen(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, JoinScreen(h.joinView(r)))
}

// joinCount is the count the projector screen keeps current.
func (h *Handler) joinCount(w http.ResponseWriter, r *http.Request) {
	httpx.JSON(w, http.StatusOK, map[string]int{"joined": h.joinView(r).Joined})
}

// joinQR is the QR code of the join URL, as SVG.
func (h *Handler) joinQR(w http.ResponseWriter, r *http.Request) {
	u, _ := h.joinURL(r)
	svg, err := QRSVG(u)
	if err != nil {
		http.Error(w, "could not draw the QR code: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(svg)
}

// QRSVG draws text as a QR code in SVG: one path of dark modules on a
// white square with the standard quiet zone of four modules, which phone
// cameras need around the code, whatever the page's colours.
func QRSVG(text string) ([]byte, error) {
	qr, err := qrcode.NewWith(text, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("encode %q as a QR code: %w", text, err)
	}
	var sw svgWriter
	if err := qr.Save(&sw); err != nil {
		return nil, err
	}
	return sw.out, nil
}

// svgWriter is a qrcode.Writer that writes SVG.
type svgWriter struct{ out []byte }

const quiet = 4

func (s *svgWriter) Write(mat qrcode.Matrix) error {
	n := mat.Width()
	size := n + 2*quiet
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges" role="img">`, size, size)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, size, size)
	mat.Iterate(qrcode.IterDirection_ROW, func(x, y int, v qrcode.QRValue) {
		if v.IsSet() {
			fmt.Fprintf(&b, "M%d %dh1v1h-1z", x+quiet, y+quiet)
		}
	})
	b.WriteString(`"/></svg>`)
	s.out = b.Bytes()
	return nil
}

func (s *svgWriter) Close() error { return nil }
