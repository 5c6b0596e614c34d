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
	"strings"
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

// exportSummary is what the page says about a checked export.
type exportSummary struct {
	namespace string
	messages  int
	// code is the learner's own code, when the export has some.
	code *stream.Code
	// history is the export's object history (version 3 on), checked.
	history *stream.ExportHistory
}

// checkExport checks an export with the rules of stream.ReadExport, message
// by message, and refuses anything after its JSON. An export whose
// namespace comes after its messages, or is missing (never one oplab
// wrote), is checked again from the spool, once the namespace is known.
func checkExport(r io.Reader, spool io.ReadSeeker) (exportSummary, error) {
	sum, late, err := scanExport(r, nil)
	if err != nil || !late {
		return sum, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return sum, fmt.Errorf("read export again: %w", err)
	}
	sum, _, err = scanExport(spool, &sum.namespace)
	return sum, err
}

// errValueTooLarge is a single JSON value over maxMessageBytes.
var errValueTooLarge = fmt.Errorf("a single value is larger than %d KiB", maxMessageBytes>>10)

// scanExport decodes an export one message at a time. namespace, when not
// nil, is the export's namespace, known from an earlier pass; late reports
// that messages came before the namespace (or without one), so their
// namespace was not checked.
func scanExport(r io.Reader, namespace *string) (sum exportSummary, late bool, err error) {
	win := &windowReader{r: r, max: 2 * maxMessageBytes}
	dec := json.NewDecoder(win)
	win.dec = dec
	fail := func(format string, args ...any) (exportSummary, bool, error) {
		return sum, false, fmt.Errorf("read export: "+format, args...)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return fail("%w", err)
	}
	var version int
	seen := map[string]bool{}
	ns, nsKnown := "", namespace != nil
	if nsKnown {
		ns = *namespace
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("decoding json: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return fail("decoding json: want a key, found %v", tok)
		}
		key, err := knownKey(name)
		if err != nil {
			return fail("%w", err)
		}
		if seen[key] {
			return fail("%s: appears twice", key)
		}
		seen[key] = true
		switch key {
		case "version":
			err = dec.Decode(&version)
		case "exportedAt":
			var at time.Time
			err = dec.Decode(&at)
		case "namespace":
			var v string
			err = dec.Decode(&v)
			if namespace == nil {
				ns, nsKnown = v, true
			}
		case "code":
			if sum.code, err = scanCode(dec); err != nil {
				return fail("%w", err) // named by scanCode
			}
		case "history":
			if sum.history, err = scanHistory(dec); err != nil {
				return fail("%w", err) // named by scanHistory
			}
		case "messages":
			late = !nsKnown
			sum.messages, err = scanMessages(dec, ns, !nsKnown)
			if err != nil {
				return fail("%w", err)
			}
		default:
			return fail("%s: unknown field", key)
		}
		if err != nil {
			return fail("%s: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fail("decoding json: %w", err)
	}
	if err := stream.CheckVersion(version, sum.code != nil, sum.history != nil); err != nil {
		return fail("%w", err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("found %v", tok)
		}
		return fail("unexpected data after the timeline's JSON (byte %d): %w", dec.InputOffset(), err)
	}
	sum.namespace = ns
	return sum, late, nil
}

// exportKeys are the keys of an export that mean something.
var exportKeys = []string{"version", "exportedAt", "namespace", "code", "history", "messages"}

// maxReplayHistoryBytes bounds the history a replay keeps to travel in:
// four times what the recorder keeps of a namespace by default.
const maxReplayHistoryBytes = 4 * stream.DefaultHistoryBytes

// scanHistory decodes an export's history one object at a time, each
// strictly and within maxMessageBytes, and checks it (stream.CheckHistory's
// rules). Its errors name the field.
func scanHistory(dec *json.Decoder) (*stream.ExportHistory, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	h := &stream.ExportHistory{Objects: []stream.HistoryObject{}}
	seen := map[string]bool{}
	size := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("history: decoding json: %w", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, fmt.Errorf("history.%s: appears twice", key)
		}
		seen[key] = true
		switch key {
		case "floor":
			if err := dec.Decode(&h.Floor); err != nil {
				return nil, fmt.Errorf("history.floor: %w", err)
			}
			continue
		case "objects":
		default:
			for _, k := range []string{"floor", "objects"} {
				if strings.EqualFold(key, k) {
					return nil, fmt.Errorf("history.%s: unknown field (the field is %q, spelt exactly so)", key, k)
				}
			}
			return nil, fmt.Errorf("history.%s: unknown field", key)
		}
		if err := expectDelim(dec, '['); err != nil {
			return nil, fmt.Errorf("history.objects: %w", err)
		}
		for i := 0; dec.More(); i++ {
			var raw json.RawMessage
			start := dec.InputOffset()
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("history.objects[%d]: %w", i, err)
			}
			if dec.InputOffset()-start > maxMessageBytes {
				return nil, fmt.Errorf("history.objects[%d]: %w", i, errValueTooLarge)
			}
			if size += len(raw); size > maxReplayHistoryBytes {
				return nil, fmt.Errorf("history.objects[%d]: the history is over %d MiB, more than a replay keeps", i, maxReplayHistoryBytes>>20)
			}
			var o stream.HistoryObject
			if err := stream.DecodeStrict(raw, &o); err != nil {
				// DecodeStrict's errors start with the field inside
				// the object, when they name one.
				sep := "."
				if strings.HasPrefix(err.Error(), "decoding json") {
					sep = ": "
				}
				return nil, fmt.Errorf("history.objects[%d]%s%w", i, sep, err)
			}
			if err := stream.CheckHistoryObject(o); err != nil {
				return nil, fmt.Errorf("history.objects[%d].%w", i, err)
			}
			h.Objects = append(h.Objects, o)
		}
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("history.objects: %w", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if err := stream.CheckHistory(*h); err != nil {
		return nil, err
	}
	return h, nil
}

// scanCode decodes an export's code strictly, as the page will show it,
// and checks it (stream.CheckCode). Its errors name the field.
func scanCode(dec *json.Decoder) (*stream.Code, error) {
	var raw json.RawMessage
	start := dec.InputOffset()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("code: %w", err)
	}
	if dec.InputOffset()-start > maxMessageBytes {
		return nil, fmt.Errorf("code: %w", errValueTooLarge)
	}
	var c stream.Code
	if err := stream.DecodeStrict(raw, &c); err != nil {
		return nil, fmt.Errorf("code: %w", err)
	}
	if err := stream.CheckCode(c); err != nil {
		return nil, err
	}
	return &c, nil
}

// knownKey refuses a known key spelt in another case, naming the key it
// should be: encoding/json would read it as that key, the player, in
// JavaScript, would not.
func knownKey(key string) (string, error) {
	for _, k := range exportKeys {
		if strings.EqualFold(key, k) && key != k {
			return "", fmt.Errorf("key %q: write it %q", key, k)
		}
	}
	return key, nil
}

// scanMessages checks the messages array, one message at a time; with
// anyNamespace, a message's namespace is not compared (it is not known yet).
func scanMessages(dec *json.Decoder, ns string, anyNamespace bool) (int, error) {
	if err := expectDelim(dec, '['); err != nil {
		return 0, fmt.Errorf("messages: %w", err)
	}
	var prev uint64
	n := 0
	for ; dec.More(); n++ {
		var raw json.RawMessage
		start := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil {
			return n, fmt.Errorf("messages[%d]: %w", n, err)
		}
		if dec.InputOffset()-start > maxMessageBytes {
			return n, fmt.Errorf("messages[%d]: %w", n, errValueTooLarge)
		}
		want := &ns
		if anyNamespace {
			want = nil
		}
		seq, err := stream.CheckMessage(raw, want, prev)
		if err != nil {
			return n, fmt.Errorf("messages[%d]: %w", n, err)
		}
		// The page is streamed once the check passed, so a state that
		// cannot be drawn must be found now.
		if _, err := ReplayMessage(raw); err != nil {
			return n, fmt.Errorf("messages[%d]%w", n, err)
		}
		prev = seq
	}
	if _, err := dec.Token(); err != nil {
		return n, fmt.Errorf("messages: %w", err)
	}
	return n, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("decoding json: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		what := "an object"
		if want == '[' {
			what = "an array"
		}
		return fmt.Errorf("decoding json: want %s, found %v", what, tok)
	}
	return nil
}

// windowReader keeps a json.Decoder from buffering much more than max
// bytes past what it has decoded: the decoder reads until a value is
// complete, so without it one huge value would be held whole. (The exact
// size of each value is checked after it is decoded; this bounds memory
// before that.)
type windowReader struct {
	r    io.Reader
	dec  *json.Decoder
	read int64
	max  int64
}

func (w *windowReader) Read(p []byte) (int, error) {
	if w.read-w.dec.InputOffset() > w.max {
		return 0, errValueTooLarge
	}
	n, err := w.r.Read(p)
	w.read += int64(n)
	return n, err
}

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
