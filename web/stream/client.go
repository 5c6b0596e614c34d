package stream

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller/trace"
)

// client is one websocket viewer, the Recorder's trace.Viewer. The Hub's
// Run owns its membership and closes send to tell the writer to say
// goodbye; the reader and the writer are the only goroutines that touch
// conn (gorilla allows one of each).
type client struct {
	h      *Hub
	conn   *websocket.Conn
	ns     string
	resume bool   // the viewer asked for ?since
	since  uint64 // the last seq it has
	// catchup receives, once, the frames to write before any live frame.
	catchup chan []trace.Batch
	send    chan *trace.Batch
	// closeCode and closeReason are set by the Hub before it closes send; the
	// close happens before the writer sees it, so the writer may read them.
	closeCode   int
	closeReason string
}

// Handler returns the /ws endpoint. namespaceOf resolves the viewer's
// namespace from its session; an error, or an empty namespace, is answered
// with 403. The query ?since=SEQ resumes after the last seq a viewer has.
// A cross-origin request is answered with 403 before upgrading. The viewer
// goes to the Recorder first, which works out what it has missed, and from
// there to the Hub.
func (h *Hub) Handler(namespaceOf func(*http.Request) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ns, err := namespaceOf(req)
		if err == nil && ns == "" {
			err = errors.New("the session has no namespace")
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("no trace stream for this session: %v", err), http.StatusForbidden)
			return
		}
		since, resume, err := parseSince(req.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		conn, err := h.upgrader.Upgrade(w, req, nil)
		if err != nil {
			return // the upgrader has answered the request
		}
		// A no-op when the viewer did not offer compression.
		_ = conn.SetCompressionLevel(compressionLevel)
		c := &client{
			h:       h,
			conn:    conn,
			ns:      ns,
			resume:  resume,
			since:   since,
			catchup: make(chan []trace.Batch, 1),
			send:    make(chan *trace.Batch, h.opts.ClientBuffer),
		}
		if !h.rec.Join(c) {
			c.Refuse()
		}
	})
}

// Namespace is the viewer's namespace (trace.Viewer).
func (c *client) Namespace() string { return c.ns }

// Since is the last seq the viewer has, if it asked to resume (trace.Viewer).
func (c *client) Since() (uint64, bool) { return c.since, c.resume }

// Refuse closes a viewer that was never attached: the stream is stopping
// (trace.Viewer).
func (c *client) Refuse() {
	_ = c.conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseGoingAway, "oplab is shutting down"),
		time.Now().Add(time.Second))
	_ = c.conn.Close()
}

// compressionLevel is flate's default, not gorilla's fastest (1): a frame is
// compressed once for all viewers of a namespace, so the CPU is spent once,
// while the bytes saved (a fifth more than at level 1, measured on trace
// JSON) are saved for every viewer.
const compressionLevel = 6

func parseSince(q url.Values) (since uint64, resume bool, err error) {
	if !q.Has("since") {
		return 0, false, nil
	}
	v := q.Get("since")
	since, err = strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("query parameter since=%q: want the last seq received, a non-negative integer", v)
	}
	return since, true, nil
}

// checkOrigin accepts requests without an Origin (not from a browser), from
// the request's own host, or from an allowed origin.
func (h *Hub) checkOrigin(req *http.Request) bool {
	if h.opts.CheckOrigin != nil {
		return h.opts.CheckOrigin(req)
	}
	origin := req.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, req.Host) {
		return true
	}
	for _, allowed := range h.opts.AllowedOrigins {
		if strings.EqualFold(allowed, origin) || strings.EqualFold(allowed, u.Host) {
			return true
		}
	}
	return false
}

// readPump reads (and discards) what the viewer sends, so that pongs and
// close frames are processed, until the connection fails; then it asks the
// Hub to let the viewer go.
func (c *client) readPump() {
	defer func() {
		select {
		case c.h.unregister <- c:
		case <-c.h.done:
		}
		_ = c.conn.Close()
	}()
	c.conn.SetReadLimit(c.h.opts.ReadLimit)
	_ = c.conn.SetReadDeadline(time.Now().Add(c.h.opts.PongWait))
	c.conn.SetPongHandler(func(string) error {
		return c.conn.SetReadDeadline(time.Now().Add(c.h.opts.PongWait))
	})
	for {
		if _, _, err := c.conn.ReadMessage(); err != nil {
			return
		}
	}
}

// writePump writes the catch-up frames, then live frames and pings, until the
// Hub closes send.
func (c *client) writePump() {
	ping := time.NewTicker(c.h.opts.PingPeriod)
	defer func() {
		ping.Stop()
		_ = c.conn.Close()
	}()
	for _, f := range <-c.catchup {
		if err := c.write(&f); err != nil {
			return
		}
	}
	for {
		select {
		case f, ok := <-c.send:
			if !ok {
				c.sayGoodbye()
				return
			}
			// Frames are written one by one, never joined: each is
			// shared by every viewer of the namespace, framed and
			// compressed once, and joining would make a private copy
			// per viewer to compress again.
			if err := c.write(f); err != nil {
				return
			}
		case <-ping.C:
			_ = c.conn.SetWriteDeadline(time.Now().Add(c.h.opts.WriteWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

// compressMin is the smallest frame worth compressing. A frame of one step
// (a few hundred bytes) shrinks by a third at best, and costs each viewer an
// inflater; batches of several steps shrink fivefold and more.
const compressMin = 1024

func (c *client) write(f *trace.Batch) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.h.opts.WriteWait))
	// A no-op when the viewer did not offer compression.
	c.conn.EnableWriteCompression(len(f.JSON) >= compressMin)
	if pm, ok := f.Framed.(*websocket.PreparedMessage); ok {
		return c.conn.WritePreparedMessage(pm)
	}
	return c.conn.WriteMessage(websocket.TextMessage, f.JSON)
}

func (c *client) sayGoodbye() {
	msg := websocket.FormatCloseMessage(c.closeCode, c.closeReason)
	_ = c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(c.h.opts.WriteWait))
}
