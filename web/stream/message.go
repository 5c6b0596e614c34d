package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// the stream, so replaying a file is just reading it.
type Export struct {
	Version    int       `json:"version"`
	ExportedAt time.Time `json:"exportedAt"`
	Namespace  string    `json:"namespace"`
	Messages   []Message `json:"messages"`
}

// ReadExport decodes and validates an exported timeline: the version is
// known, seq is strictly increasing, and every message has a type, a time and
// an object in the export's namespace (or none, for global messages). Errors
// name the offending message index and field.
func ReadExport(r io.Reader) (Export, error) {
	var e Export
	dec := json.NewDecoder(r)
	if err := dec.Decode(&e); err != nil {
		return Export{}, fmt.Errorf("read export: decoding json: %w", err)
	}
	if err := validateExport(e); err != nil {
		return Export{}, fmt.Errorf("read export: %w", err)
	}
	return e, nil
}

func validateExport(e Export) error {
	if e.Version != ExportVersion {
		return fmt.Errorf("unsupported version %d (want %d)", e.Version, ExportVersion)
	}
	var prev uint64
	for i, m := range e.Messages {
		if err := validateMessage(m, e.Namespace, prev); err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		prev = m.Seq
	}
	return nil
}

func validateMessage(m Message, namespace string, prev uint64) error {
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
