package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/a-h/templ"

	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/stream"
)

// Limits of a replay. An upload is read as it arrives and spooled to a
// temporary file while it is checked, then streamed from that file into the
// page, so a replay holds about one message in memory, not the file.
const (
	// maxExportBytes limits an uploaded export: a timeline can be large.
	maxExportBytes = 32 << 20
	// maxUploadBytes is the body limit: the export and its multipart
	// envelope (the part's headers, the boundary lines).
	maxUploadBytes = maxExportBytes + 64<<10
	// maxMessageBytes limits one message of an export. The largest real
	// ones, state snapshots, are a few KiB; the bound keeps a single value
	// from making the decoder buffer the whole file.
	maxMessageBytes = 1 << 20
	// maxReplays is how many uploads are read at once.
	maxReplays = 2
	// replayWriteTimeout bounds writing the page, so a client that stops
	// reading cannot hold a replay slot.
	replayWriteTimeout = 2 * time.Minute
	// An upload must keep coming: each replayProgressBytes read give
	// replayProgressWait more to read the rest, up to replayReadTimeout in
	// all. (64 KiB in 10 s is 52 kbit/s: any real link, and not a client
	// that sends a byte now and then to hold a slot.)
	replayProgressBytes = 64 << 10
	replayReadTimeout   = 5 * time.Minute
)

// replayProgressWait is how long an upload may go without
// replayProgressBytes more (a variable for tests).
var replayProgressWait = 10 * time.Second

// replaySlots bounds the replays in progress. It is one for the process, not
// per Handler, because what it protects is the process's memory and disk.
var replaySlots = make(chan struct{}, maxReplays)

// replaying holds who has a replay in progress (their namespace, or their
// address without a session): one each, so one learner cannot hold every
// slot.
var replaying = struct {
	sync.Mutex
	by map[string]bool
}{by: map[string]bool{}}

// replayer is who r is, for the one-replay-each rule.
func (h *Handler) replayer(r *http.Request) string {
	if h.opts.Sessions != nil {
		if ns, err := h.opts.Sessions.NamespaceOf(r); err == nil {
			return "ns:" + ns
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// progressReader extends the connection's read deadline as an upload
// arrives (see replayProgressBytes), never past end.
type progressReader struct {
	r     io.Reader
	rc    *http.ResponseController
	end   time.Time
	since int
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if p.since += n; p.since >= replayProgressBytes {
		p.since = 0
		p.extend()
	}
	return n, err
}

func (p *progressReader) extend() {
	d := time.Now().Add(replayProgressWait)
	if d.After(p.end) {
		d = p.end
	}
	_ = p.rc.SetReadDeadline(d)
}

// export downloads the caller's recorded timeline.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) {
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	e := h.opts.Exporter.Export(ns)
	if h.opts.Code != nil {
		e.Code = h.opts.Code.CodeOf(ns)
	}
	name := fmt.Sprintf("oplab-timeline-%s-%s.json", ns, time.Now().UTC().Format("20060102-150405"))
	httpx.Download(w, name, e)
}

func (h *Handler) replayForm(w http.ResponseWriter, r *http.Request) {
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, ReplayView(ReplayPage{}))
}

// replay checks an uploaded export and plays it back, read-only: the page
// it renders has no forms that write to the cluster.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		// A body cut by its deadline cancels the request's context; the
		// answer saying so must still be written (the write deadline
		// bounds it).
		r := r.WithContext(context.WithoutCancel(r.Context()))
		httpx.Render(w, r, h.opts.Logger, code, ReplayView(ReplayPage{Error: fmt.Sprintf(format, args...)}))
	}
	who := h.replayer(r)
	replaying.Lock()
	busy := replaying.by[who]
	replaying.by[who] = true
	replaying.Unlock()
	if busy {
		w.Header().Set("Retry-After", "5")
		fail(http.StatusTooManyRequests, "You have a replay loading already: wait for it, or try again in a few seconds.")
		return
	}
	defer func() { replaying.Lock(); delete(replaying.by, who); replaying.Unlock() }()
	select {
	case replaySlots <- struct{}{}:
		defer func() { <-replaySlots }()
	default:
		w.Header().Set("Retry-After", "5")
		fail(http.StatusServiceUnavailable, "Too many replays at once, try again in a few seconds.")
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(replayWriteTimeout))
	// A slow body must not hold the slot: the upload has to keep coming.
	body := &progressReader{r: r.Body, rc: rc, end: time.Now().Add(replayReadTimeout)}
	body.extend()
	r.Body = http.MaxBytesReader(w, struct {
		io.Reader
		io.Closer
	}{body, r.Body}, maxUploadBytes)
	part, err := filePart(r)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			fail(http.StatusRequestTimeout, "file: the upload stopped arriving (at least %d KiB every %s are needed)", replayProgressBytes>>10, replayProgressWait)
			return
		}
		if isTooLarge(err) {
			fail(http.StatusRequestEntityTooLarge, "file: larger than the %d MiB limit", maxExportBytes>>20)
			return
		}
		fail(http.StatusBadRequest, "file: choose an exported timeline (.json) to open: %v", err)
		return
	}
	name := httpx.Excerpt(part.FileName(), 80)
	spool, err := os.CreateTemp("", "oplab-replay-*.json")
	if err != nil {
		fail(http.StatusInternalServerError, "keep the upload while it is checked: %v", err)
		return
	}
	defer func() { spool.Close(); os.Remove(spool.Name()) }()
	sum, err := checkExport(io.TeeReader(part, spool), spool)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			fail(http.StatusRequestTimeout, "file: the upload stopped arriving (at least %d KiB every %s are needed)", replayProgressBytes>>10, replayProgressWait)
			return
		}
		if isTooLarge(err) {
			fail(http.StatusRequestEntityTooLarge, "file: larger than the %d MiB limit", maxExportBytes>>20)
			return
		}
		fail(http.StatusUnprocessableEntity, "%s is not an oplab timeline: %v", name, err)
		return
	}
	page := ReplayPage{File: name, Namespace: sum.namespace, Messages: sum.messages, Export: exportScript(spool), Code: sum.code}
	if sum.history != nil {
		hist, err := stream.NewReplayHistory(sum.namespace, *sum.history)
		if err != nil {
			fail(http.StatusUnprocessableEntity, "%s is not an oplab timeline: %v", name, err)
			return
		}
		page.Travel = keepReplayTravel(h.replayer(r), sum.namespace, sum.history, hist)
	}
	if h.opts.Code != nil && sum.code != nil {
		page.ImportPath = h.opts.Code.ImportPath()
	}
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, ReplayView(page))
}

// filePart returns the multipart part of the field "file", reading the
// body as it arrives (r.FormFile would first hold or spool the whole form).
func filePart(r *http.Request) (*multipart.Part, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("send it as multipart/form-data, as the page's form does: %w", err)
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil, errors.New(`the form has no field "file"`)
		}
		if err != nil {
			return nil, err
		}
		if p.FormName() == "file" {
			return p, nil
		}
	}
}

func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// maxReplayHistoryBytes bounds the history a replay keeps to travel in:
// four times what the recorder keeps of a namespace by default.
const maxReplayHistoryBytes = 4 * stream.DefaultHistoryBytes

// exportScript renders the checked export, streamed from its spool file,
// as the script element the replay player reads (what templ.JSONScript
// writes for a value held in memory), its states drawn read-only by the
// lab's own components (ReplayMessage), one message at a time.
func exportScript(f io.ReadSeeker) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("read the checked export: %w", err)
		}
		open := `<script id="replay-data" type="application/json"`
		if nonce := templ.GetNonce(ctx); nonce != "" {
			open += ` nonce="` + templ.EscapeString(nonce) + `"`
		}
		if _, err := io.WriteString(w, open+">"); err != nil {
			return err
		}
		if err := replayJSON(f, scriptSafe{w}); err != nil {
			return err
		}
		_, err := io.WriteString(w, "</script>")
		return err
	})
}

// scriptSafe escapes <, > and & as JSON \u escapes, so no text in the
// export can close the script element. In valid JSON those bytes occur only
// inside strings, where the escapes mean the same characters.
type scriptSafe struct{ w io.Writer }

func (s scriptSafe) Write(p []byte) (int, error) {
	start := 0
	for i, c := range p {
		var esc string
		switch c {
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			continue
		}
		if _, err := s.w.Write(p[start:i]); err != nil {
			return start, err
		}
		if _, err := io.WriteString(s.w, esc); err != nil {
			return i, err
		}
		start = i + 1
	}
	if _, err := s.w.Write(p[start:]); err != nil {
		return start, err
	}
	return len(p), nil
}

// replayJSON copies a checked export from r to w, message by message, with
// each message passed through ReplayMessage.
func replayJSON(r io.Reader, w io.Writer) error {
	dec := json.NewDecoder(r)
	put := func(s string) error { _, err := io.WriteString(w, s); return err }
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	if err := put("{"); err != nil {
		return err
	}
	first := true
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read the checked export: %w", err)
		}
		if tok == "history" {
			// Served by /lab/replay/history, not read by the player.
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fmt.Errorf("read the checked export: %w", err)
			}
			continue
		}
		key, _ := json.Marshal(tok)
		sep := ","
		if first {
			sep, first = "", false
		}
		if err := put(sep + string(key) + ":"); err != nil {
			return err
		}
		if tok != "messages" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("read the checked export: %w", err)
			}
			if _, err := w.Write(raw); err != nil {
				return err
			}
			continue
		}
		if err := replayMessages(dec, w); err != nil {
			return err
		}
	}
	return put("}")
}

func replayMessages(dec *json.Decoder, w io.Writer) error {
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("read the checked export: %w", err)
		}
		out, err := ReplayMessage(raw)
		if err != nil {
			return fmt.Errorf("messages[%d]%w", i, err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("read the checked export: %w", err)
	}
	_, err := io.WriteString(w, "]")
	return err
}
