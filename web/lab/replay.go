package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a-h/templ"

	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/httpx"
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
	// maxSpoolBytes bounds what the replays in progress hold, counted as
	// the bytes they have spooled (what they have parsed and will render
	// is no more): two exports of the largest size, which is also what the
	// Deployment's /tmp holds.
	maxSpoolBytes = 2 * maxExportBytes
	// replayWriteTimeout bounds writing the page, so a client that stops
	// reading cannot hold its spool for long.
	replayWriteTimeout = time.Minute
	// An upload must arrive whole within replayReadTimeout, and on its
	// way at replayMinRate on average, counted from its start with
	// replayGrace free. (64 KiB/s is half a megabit: any real link, and
	// not a client that sends a little now and then. A real export, a few
	// MiB, takes seconds.)
	replayMinRate     = 64 << 10
	replayReadTimeout = time.Minute
)

// replayGrace is how long an upload may take before the minimum rate
// counts (a variable for tests).
var replayGrace = 10 * time.Second

// replaySpool counts the bytes the replays in progress have spooled
// (maxSpoolBytes). It is one for the process, not per Handler, because what
// it protects is the process's memory and disk. A byte counts once it has
// arrived, never before: what a replay holds, its client has sent, at the
// minimum rate and within the deadline, so a slow upload holds little, and
// keeping the budget full costs its bytes, again every minute.
var replaySpool atomic.Int64

// errSpoolFull is a replay cut because the others in progress hold
// maxSpoolBytes.
var errSpoolFull = fmt.Errorf("oplab is taking in %d MiB of replays at once, the most it keeps", maxSpoolBytes>>20)

// spoolWriter writes to f what the spool budget has room for, and counts
// it (held), to be given back when the spool goes.
type spoolWriter struct {
	f    *os.File
	held int64
}

func (s *spoolWriter) Write(p []byte) (int, error) {
	if replaySpool.Add(int64(len(p))) > maxSpoolBytes {
		replaySpool.Add(-int64(len(p)))
		return 0, errSpoolFull
	}
	s.held += int64(len(p))
	return s.f.Write(p)
}

// replaying holds who has a replay in progress: their session, or without
// one their client address. Each has one slot, its own, so a replay never
// waits for another's: what bounds them all is the spool budget.
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
	return "addr:" + h.opts.ClientOf(r)
}

// rateReader moves the connection's read deadline as an upload arrives:
// to where its average rate since start would fall below replayMinRate
// (replayGrace free), never past end.
type rateReader struct {
	r     io.Reader
	rc    *http.ResponseController
	start time.Time
	end   time.Time
	n     int64
}

func (p *rateReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.extend()
	return n, err
}

func (p *rateReader) extend() {
	d := p.start.Add(replayGrace + time.Duration(p.n)*time.Second/replayMinRate)
	if d.After(p.end) {
		d = p.end
	}
	_ = p.rc.SetReadDeadline(d)
}

// tooSlow says what an upload cut by its deadline should have done.
func tooSlow() string {
	return fmt.Sprintf("file: the upload came too slowly: after the first %s it must come at %d KiB/s on average, and whole within %s",
		replayGrace, replayMinRate>>10, replayReadTimeout)
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
	// Only a replay the spool has room for starts, counting its declared
	// size (or the most it may be), so that those in progress finish.
	size := r.ContentLength
	if size < 0 || size > maxExportBytes {
		size = maxExportBytes
	}
	if replaySpool.Load()+size > maxSpoolBytes {
		w.Header().Set("Retry-After", "30")
		fail(http.StatusServiceUnavailable, "%v: try again in a minute.", errSpoolFull)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(replayWriteTimeout))
	// A slow body must not hold its spool: the upload has to keep coming.
	start := time.Now()
	body := &rateReader{r: r.Body, rc: rc, start: start, end: start.Add(replayReadTimeout)}
	body.extend()
	r.Body = http.MaxBytesReader(w, struct {
		io.Reader
		io.Closer
	}{body, r.Body}, maxUploadBytes)
	part, err := filePart(r)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			fail(http.StatusRequestTimeout, "%s", tooSlow())
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
	f, err := os.CreateTemp("", "oplab-replay-*.json")
	if err != nil {
		fail(http.StatusInternalServerError, "keep the upload while it is checked: %v", err)
		return
	}
	spool := &spoolWriter{f: f}
	defer func() { f.Close(); os.Remove(f.Name()); replaySpool.Add(-spool.held) }()
	sum, err := checkExport(io.TeeReader(part, spool), f)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			fail(http.StatusRequestTimeout, "%s", tooSlow())
		case isTooLarge(err):
			fail(http.StatusRequestEntityTooLarge, "file: larger than the %d MiB limit", maxExportBytes>>20)
		case errors.Is(err, errSpoolFull):
			w.Header().Set("Retry-After", "30")
			fail(http.StatusServiceUnavailable, "%v: try again in a minute.", errSpoolFull)
		default:
			fail(http.StatusUnprocessableEntity, "%s is not an oplab timeline: %v", name, err)
		}
		return
	}
	page, err := h.replayPage(r, name, f, sum)
	if err != nil {
		fail(http.StatusUnprocessableEntity, "%s is not an oplab timeline: %v", name, err)
		return
	}
	httpx.Render(w, r, h.opts.Logger, http.StatusOK, ReplayView(page))
}

// replayPage is the page that plays a checked export, spooled in f.
func (h *Handler) replayPage(r *http.Request, name string, f io.ReadSeeker, sum exportSummary) (ReplayPage, error) {
	page := ReplayPage{File: name, Namespace: sum.namespace, Messages: sum.messages, Export: exportScript(f), Code: sum.code}
	if sum.history != nil {
		hist, err := trace.NewReplayHistory(sum.namespace, *sum.history)
		if err != nil {
			return page, err
		}
		page.Travel = keepReplayTravel(h.replayer(r), sum.namespace, sum.history, hist)
	}
	if h.opts.Code != nil && sum.code != nil {
		page.ImportPath = h.opts.Code.ImportPath()
	}
	return page, nil
}

// replayTest is POST /lab/replay/test/{schedule}: a schedule of the
// learner's last Test my code (a counterexample), replayed as an export
// is, with the step where it went wrong marked.
func (h *Handler) replayTest(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		httpx.Render(w, r, h.opts.Logger, code, ReplayView(ReplayPage{Error: fmt.Sprintf(format, args...)}))
	}
	ns, err := h.opts.Sessions.NamespaceOf(r)
	if err != nil {
		fail(http.StatusForbidden, "no lab session: open the lab first")
		return
	}
	n, err := strconv.Atoi(r.PathValue("schedule"))
	if err != nil || h.opts.Code == nil {
		fail(http.StatusNotFound, "schedule: %q is not a schedule of a test", r.PathValue("schedule"))
		return
	}
	export, mark, name, ok := h.opts.Code.TestTrace(ns, n)
	if !ok {
		fail(http.StatusNotFound, "schedule %d: your last test kept no such schedule (it keeps the ones that failed, and the ordinary life)", n)
		return
	}
	f, err := os.CreateTemp("", "oplab-replay-*.json")
	if err != nil {
		fail(http.StatusInternalServerError, "keep the trace while it is checked: %v", err)
		return
	}
	defer func() { f.Close(); os.Remove(f.Name()) }()
	if _, err := f.Write(export); err != nil {
		fail(http.StatusInternalServerError, "keep the trace while it is checked: %v", err)
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		fail(http.StatusInternalServerError, "read the trace again: %v", err)
		return
	}
	sum, err := checkExport(bytes.NewReader(export), f)
	if err == nil {
		var page ReplayPage
		if page, err = h.replayPage(r, name, f, sum); err == nil {
			page.Mark = mark
			httpx.Render(w, r, h.opts.Logger, http.StatusOK, ReplayView(page))
			return
		}
	}
	fail(http.StatusInternalServerError, "the test's trace is not a timeline oplab can replay: %v", err)
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
const maxReplayHistoryBytes = 4 * trace.DefaultHistoryBytes

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
