package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/a-h/templ"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// Fragments renders the view models the state watcher publishes as the HTML
// the lab page swaps in, with the same components as the page itself, so a
// Database card is drawn in one place only. It implements dbview.Renderer.
type Fragments struct {
	// Card is the context of every card rendered: the stream's cards are
	// shared by all viewers of a namespace, so they name no scenario.
	Card Card
}

// NewFragments returns the renderer of the live lab's cards, offering the
// controller's pitfalls and every child kind.
func NewFragments() Fragments {
	return Fragments{Card: Card{Pitfalls: defaultPitfalls(), ChildKinds: ChildKinds}}
}

func defaultPitfalls() []controller.PitfallInfo { return controller.Pitfalls }

// RenderDatabase renders d's card.
func (f Fragments) RenderDatabase(d dbview.Database) (string, error) {
	return renderString(DatabaseCard(f.Card, d))
}

// RenderSnapshot renders s as an entry of "Snapshots kept after delete".
func (f Fragments) RenderSnapshot(s dbview.Snapshot) (string, error) {
	return renderString(KeptSnapshot(s))
}

func renderString(c templ.Component) (string, error) {
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		return "", fmt.Errorf("render fragment: %w", err)
	}
	return b.String(), nil
}

// ReplayMessage renders one encoded message's state again as the replay
// shows it: read-only cards, without forms. An export written before states
// carried their HTML replays the same way. The message is decoded strictly
// (trace.DecodeStrict) and encoded again from what was decoded, so the
// page gets exactly the fields that were checked, and a card's HTML only
// ever comes from this renderer, never from the file. An error begins with
// the message's seq, for the caller to place.
func ReplayMessage(raw json.RawMessage) (json.RawMessage, error) {
	var m trace.Message
	if err := trace.DecodeStrict(raw, &m); err != nil {
		return nil, fmt.Errorf(": %w", err)
	}
	if len(m.State) > 0 && string(m.State) != "null" {
		if m.Type != trace.TypeState {
			return nil, fmt.Errorf(" (seq %d): state: only a message of type %q carries one", m.Seq, trace.TypeState)
		}
		st, err := Fragments{Card: Card{ReadOnly: true}}.rerender(m.Object.Kind, m.State)
		if err != nil {
			return nil, fmt.Errorf(" (seq %d): %w", m.Seq, err)
		}
		m.State = st
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf(" (seq %d): encode again: %w", m.Seq, err)
	}
	return out, nil
}

// Redraw draws a live state's card again from its view model, for the
// stream's catch-ups (trace.RecorderOptions.Card): the ring keeps no HTML.
// Only Databases and kept snapshots have cards; any other state is sent as
// it was published.
func (f Fragments) Redraw(kind string, view json.RawMessage) (json.RawMessage, error) {
	if kind != "Database" && kind != "ConfigMap" {
		return view, nil
	}
	return f.rerender(kind, view)
}

// rerender draws a state's card from its view model, decoded strictly; the
// HTML the state carried is dropped. Only the kinds oplab publishes states
// of have one.
func (f Fragments) rerender(kind string, raw json.RawMessage) (json.RawMessage, error) {
	switch kind {
	case "Database":
		var d dbview.PublishedDatabase
		if err := trace.DecodeStrict(raw, &d); err != nil {
			return nil, fmt.Errorf("state: not a Database view: %w", err)
		}
		html, err := f.RenderDatabase(d.Database)
		if err != nil {
			return nil, err
		}
		return json.Marshal(dbview.PublishedDatabase{Database: d.Database, HTML: html})
	case "ConfigMap":
		var s dbview.PublishedSnapshot
		if err := trace.DecodeStrict(raw, &s); err != nil {
			return nil, fmt.Errorf("state: not a snapshot view: %w", err)
		}
		html, err := f.RenderSnapshot(s.Snapshot)
		if err != nil {
			return nil, err
		}
		return json.Marshal(dbview.PublishedSnapshot{Snapshot: s.Snapshot, HTML: html})
	case "Classroom":
		// The presenter's state, which every export carries as a global
		// message: a replay follows nobody, so it is dropped, never drawn
		// or acted on.
		return json.RawMessage("null"), nil
	}
	return nil, fmt.Errorf("state: oplab draws no state of an object of kind %q", kind)
}
