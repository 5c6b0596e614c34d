// The checks an uploaded export passes before the replay page is built:
// the rules of trace.ReadExport, read as the file arrives, one message at
// a time, within the limits of replay.go.

package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller/trace"
)

// exportKeys are the keys of an export that mean something.
var exportKeys = []string{"version", "exportedAt", "namespace", "code", "history", "messages"}

// exportSummary is what the page says about a checked export.
type exportSummary struct {
	namespace string
	messages  int
	// code is the learner's own code, when the export has some.
	code *trace.Code
	// history is the export's object history (version 3 on), checked.
	history *trace.ExportHistory
}

// checkExport checks an export with the rules of trace.ReadExport, message
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
	if err := trace.CheckVersion(version, sum.code != nil, sum.history != nil); err != nil {
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

// scanHistory decodes an export's history one object at a time, each
// strictly and within maxMessageBytes, and checks it (trace.CheckHistory's
// rules). Its errors name the field.
func scanHistory(dec *json.Decoder) (*trace.ExportHistory, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	h := &trace.ExportHistory{Objects: []trace.HistoryObject{}}
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
			var o trace.HistoryObject
			if err := trace.DecodeStrict(raw, &o); err != nil {
				// DecodeStrict's errors start with the field inside
				// the object, when they name one.
				sep := "."
				if strings.HasPrefix(err.Error(), "decoding json") {
					sep = ": "
				}
				return nil, fmt.Errorf("history.objects[%d]%s%w", i, sep, err)
			}
			if err := trace.CheckHistoryObject(o); err != nil {
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
	if err := trace.CheckHistory(*h); err != nil {
		return nil, err
	}
	return h, nil
}

// scanCode decodes an export's code strictly, as the page will show it,
// and checks it (trace.CheckCode). Its errors name the field.
func scanCode(dec *json.Decoder) (*trace.Code, error) {
	var raw json.RawMessage
	start := dec.InputOffset()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("code: %w", err)
	}
	if dec.InputOffset()-start > maxMessageBytes {
		return nil, fmt.Errorf("code: %w", errValueTooLarge)
	}
	var c trace.Code
	if err := trace.DecodeStrict(raw, &c); err != nil {
		return nil, fmt.Errorf("code: %w", err)
	}
	if err := trace.CheckCode(c); err != nil {
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
		seq, err := trace.CheckMessage(raw, want, prev)
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
