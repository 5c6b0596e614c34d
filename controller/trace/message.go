package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/oplab-dev/oplab/controller"
)

// Message types the stream adds to the controller's step types.
const (
	// TypeState carries the latest view model of an object in State; a state
	// message without State says the object was deleted.
	TypeState controller.StepType = "state"
	// TypeReset tells a reconnecting viewer that its resume point fell out of
	// the recent history: state snapshots and the recent history follow, so
	// the viewer should clear what it drew and start again.
	TypeReset controller.StepType = "reset"
	// TypeDropped says the recorder's inbox was full and it dropped steps
	// rather than make the controller wait; Message says how many.
	TypeDropped controller.StepType = "dropped"
)

// ExportVersion is the version of the export file format this package
// writes. Version 2 added "code", the learner's own reconciler; version 3
// "history", the namespace's object history (exporthistory.go). ReadExport
// reads versions 1 and 2 too, which have neither or no history.
const ExportVersion = 3

// OldestExportVersion is the oldest version ReadExport reads: exports
// written before the code page are still replayed.
const OldestExportVersion = 1

// MaxCodeBytes bounds each source in an export's code, the size the
// sandbox compiles at most: a larger one was never the learner's code.
const MaxCodeBytes = 256 << 10

// Code is the learner's own reconciler (the /code page) as their session
// kept it when the timeline was exported.
type Code struct {
	// Source is the code last kept: saved as the learner typed, or run.
	Source string `json:"source"`
	// Ran is the code last handed the namespace with "Run my code", whose
	// reconciles the timeline marks "your code"; empty when none ran.
	Ran string `json:"ran,omitempty"`
	// Running says the namespace was still handed to Ran at the export.
	Running bool `json:"running,omitempty"`
}

// CheckCode checks an export's code: each source within MaxCodeBytes and
// valid UTF-8 text, as an editor could hold it. Errors name the field.
func CheckCode(c Code) error {
	for _, f := range []struct{ name, src string }{{"code.source", c.Source}, {"code.ran", c.Ran}} {
		if len(f.src) > MaxCodeBytes {
			return fmt.Errorf("%s: %d bytes, more than the %d KiB a reconciler may have", f.name, len(f.src), MaxCodeBytes>>10)
		}
		if !utf8.ValidString(f.src) {
			return fmt.Errorf("%s: not valid UTF-8 text", f.name)
		}
	}
	if c.Running && c.Ran == "" {
		return errors.New("code.running: true, but code.ran holds no code")
	}
	return nil
}

// Message is one entry of the stream: a controller.Step (flattened: seq,
// time, type, object, ...), or a state snapshot (type "state", Object = the
// object, State = its JSON view model, produced by the lab page's watcher),
// or a control message (type "reset": the client's resume point fell out of
// the ring; state snapshots follow, then the ring).
type Message struct {
	controller.Step
	State json.RawMessage `json:"state,omitempty"`
}

// Export is the recorded timeline of one namespace, in the same schema as
// the stream, so replaying a file is just reading it. Each message is kept
// as its JSON, as recorded: an export is written and read without decoding
// and encoding the messages again. The messages may share the recorder's
// bytes; do not modify them.
type Export struct {
	Version    int       `json:"version"`
	ExportedAt time.Time `json:"exportedAt"`
	Namespace  string    `json:"namespace"`
	// Code is the learner's own reconciler, when they wrote one (version
	// 2 on).
	Code *Code `json:"code,omitempty"`
	// History is the namespace's object versions the recorder held, for
	// time travel in a replay (version 3 on).
	History  *ExportHistory    `json:"history,omitempty"`
	Messages []json.RawMessage `json:"messages"`
}

// WriteTo writes e as JSON, one message a line, each message's bytes as they
// are.
func (e Export) WriteTo(w io.Writer) (int64, error) {
	at, err := json.Marshal(e.ExportedAt)
	if err != nil {
		return 0, fmt.Errorf("write export: exportedAt: %w", err)
	}
	ns, _ := json.Marshal(e.Namespace) // a string: cannot fail
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"version":%d,"exportedAt":%s,"namespace":%s,`, e.Version, at, ns)
	if e.Code != nil {
		code, err := json.Marshal(e.Code)
		if err != nil {
			return 0, fmt.Errorf("write export: code: %w", err)
		}
		b.WriteString("\n\"code\":")
		b.Write(code)
		b.WriteByte(',')
	}
	if e.History != nil {
		hist, err := json.Marshal(e.History)
		if err != nil {
			return 0, fmt.Errorf("write export: history: %w", err)
		}
		b.WriteString("\n\"history\":")
		b.Write(hist)
		b.WriteByte(',')
	}
	b.WriteString(`"messages":[`)
	for i, m := range e.Messages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		b.Write(m)
	}
	b.WriteString("\n]}\n")
	return b.WriteTo(w)
}

// ReadExport reads and validates an exported timeline of at most limit bytes
// (no limit when limit <= 0): one JSON object and nothing after it but
// spaces, a known version, seq strictly increasing, and every message with a
// type, a time and an object in the export's namespace (or none, for global
// messages). The messages are returned as they were in the file, not
// encoded again. Errors name what was wrong: the size, the JSON, or the
// offending message's index and field.
func ReadExport(r io.Reader, limit int64) (Export, error) {
	lr := &io.LimitedReader{R: r, N: math.MaxInt64}
	if limit > 0 {
		lr.N = limit + 1
	}
	data, err := io.ReadAll(lr)
	if err != nil {
		return Export{}, fmt.Errorf("read export: %w", err)
	}
	if limit > 0 && int64(len(data)) > limit {
		return Export{}, fmt.Errorf("read export: larger than the %d-byte limit", limit)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var whole json.RawMessage
	if err := dec.Decode(&whole); err != nil {
		return Export{}, fmt.Errorf("read export: decoding json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Export{}, fmt.Errorf("read export: unexpected data after the timeline's JSON object (at byte %d)", dec.InputOffset())
	}
	// Strictly: a key in another case or twice would be read one way here
	// and another way by the page's JavaScript.
	var e Export
	if err := DecodeStrict(whole, &e); err != nil {
		return Export{}, fmt.Errorf("read export: %w", err)
	}
	if err := validateExport(e); err != nil {
		return Export{}, fmt.Errorf("read export: %w", err)
	}
	if e.Messages == nil {
		e.Messages = []json.RawMessage{}
	}
	return e, nil
}

// messageHead is what validating a message reads of it.
type messageHead struct {
	Seq    uint64               `json:"seq"`
	Time   time.Time            `json:"time"`
	Type   controller.StepType  `json:"type"`
	Object controller.ObjectRef `json:"object"`
}

func validateExport(e Export) error {
	if err := CheckVersion(e.Version, e.Code != nil, e.History != nil); err != nil {
		return err
	}
	if e.History != nil {
		if err := CheckHistory(*e.History); err != nil {
			return err
		}
	}
	if e.Code != nil {
		if err := CheckCode(*e.Code); err != nil {
			return err
		}
	}
	var prev uint64
	for i, raw := range e.Messages {
		seq, err := CheckMessage(raw, &e.Namespace, prev)
		if err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		prev = seq
	}
	return nil
}

// CheckVersion refuses a version ReadExport does not read, a "code" in a
// version 1 export and a "history" before version 3 (which have none: such
// a file was not written by oplab).
func CheckVersion(version int, hasCode, hasHistory bool) error {
	if version < OldestExportVersion || version > ExportVersion {
		return fmt.Errorf("version: unsupported version %d (want %d to %d)", version, OldestExportVersion, ExportVersion)
	}
	if hasCode && version < 2 {
		return fmt.Errorf("code: a version %d export has no code (it came with version 2)", version)
	}
	if hasHistory && version < 3 {
		return fmt.Errorf("history: a version %d export has no history (it came with version 3)", version)
	}
	return nil
}

func validateMessage(m messageHead, namespace string, prev uint64) error {
	switch {
	case m.Seq == 0:
		return errors.New("seq: missing or zero")
	case m.Seq <= prev:
		return fmt.Errorf("seq: %d is not greater than the previous message's %d", m.Seq, prev)
	case m.Type == "":
		return fmt.Errorf("type: missing (seq %d)", m.Seq)
	case m.Time.IsZero():
		return fmt.Errorf("time: missing (seq %d)", m.Seq)
	case m.Object.Kind == "" || m.Object.Name == "":
		return fmt.Errorf("object: kind and name are required (seq %d)", m.Seq)
	case m.Object.Namespace != "" && m.Object.Namespace != namespace:
		return fmt.Errorf("object.namespace: %q is not the export's namespace %q (seq %d)", m.Object.Namespace, namespace, m.Seq)
	}
	return nil
}
