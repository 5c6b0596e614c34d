package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

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

// ExportVersion is the version of the export file format this package writes
// and the only one ReadExport accepts.
const ExportVersion = 1

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
	Version    int               `json:"version"`
	ExportedAt time.Time         `json:"exportedAt"`
	Namespace  string            `json:"namespace"`
	Messages   []json.RawMessage `json:"messages"`
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
	fmt.Fprintf(&b, `{"version":%d,"exportedAt":%s,"namespace":%s,"messages":[`, e.Version, at, ns)
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
	if e.Version != ExportVersion {
		return fmt.Errorf("unsupported version %d (want %d)", e.Version, ExportVersion)
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
