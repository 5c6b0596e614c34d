package lab

import (
	"encoding/json"
	"time"

	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// The server's own judgement of a scenario seen through: the same rules
// as progress.js's THROUGH table, read from the learner's recorded
// timeline since they set the scenario up, so that the roster can count a
// scenario without taking the browser's word for it.

// throughMessage is what the rules read of a timeline message.
type throughMessage struct {
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	Object struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"object"`
	State        *dbview.Database `json:"state"`
	Database     string           `json:"database"`
	Phase        string           `json:"phase"`
	Skipped      bool             `json:"skipped"`
	StatusWrites int              `json:"statusWrites"`
	Outcome      string           `json:"outcome"`
}

// SeenIn reports whether messages (a namespace's recorded timeline, as
// trace.Export holds it) show the scenario's point after since.
func (s Scenario) SeenIn(messages []json.RawMessage, since time.Time) bool {
	db := s.Through.Database
	terminating := false
	isDB := func(m throughMessage) bool {
		return m.Type == "state" && m.Object.Kind == "Database" && m.Object.Name == db
	}
	finalized := func(m throughMessage) bool { return m.Type == "finalizer" && m.Database == db && m.Phase == "removed" }
	for _, raw := range messages {
		var m throughMessage
		if json.Unmarshal(raw, &m) != nil || m.Time.Before(since) {
			continue
		}
		switch s.Through.Kind {
		case "ready":
			if isDB(m) && m.State != nil {
				if c, ok := m.State.Condition("Ready"); ok && c.Status == "True" {
					return true
				}
			}
		case "finalized":
			if finalized(m) {
				return true
			}
		case "gone":
			if finalized(m) {
				return true
			}
			if isDB(m) {
				if m.State != nil && m.State.Terminating {
					terminating = true
				}
				if m.State == nil && terminating {
					return true
				}
			}
		case "status-writes":
			if m.Type == "status" && m.Database == db && !m.Skipped && m.StatusWrites >= 3 {
				return true
			}
		case "already-exists":
			if m.Type == "action" && m.Database == db && m.Outcome == "AlreadyExists" {
				return true
			}
		}
	}
	return false
}
