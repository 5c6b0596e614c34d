package challenge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/stream"
)

// State is where a task stands.
type State string

// The task states.
const (
	StateDone   State = "done"
	StateTodo   State = "todo"   // its check ran and found something missing
	StateLocked State = "locked" // a task it comes after is not done yet
)

// TaskState is one task's evaluation, as the page's status JSON carries it.
type TaskState struct {
	ID     string `json:"id"`
	State  State  `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// Evaluate runs the checks of c's tasks against env, in dependency order. A
// task in already (the tasks the learner's browser has seen done) stays done
// without its check running again: a challenge's later steps may undo an
// earlier one's state (a deleted Database), and a task once done is done. A
// task whose After tasks are not all done is locked and its check does not
// run. A check's error is reported in the task's Detail and the task stays
// to do; the error is also returned, joined, so the caller can log it.
func (c *Challenge) Evaluate(ctx context.Context, env Env, already map[string]bool) ([]TaskState, error) {
	done := map[string]bool{}
	out := make([]TaskState, 0, len(c.Tasks))
	var errs []string
	for _, t := range c.Tasks {
		if already[t.ID] {
			done[t.ID] = true
			out = append(out, TaskState{ID: t.ID, State: StateDone})
			continue
		}
		if missing := notDone(t.After, done); len(missing) > 0 {
			out = append(out, TaskState{ID: t.ID, State: StateLocked, Detail: "First: " + strings.Join(missing, ", ") + "."})
			continue
		}
		check, ok := LookupCheck(t.Check)
		if !ok { // Load refuses such a file; a Challenge built by hand may still say it
			errs = append(errs, fmt.Sprintf("task %s: check %q is not registered", t.ID, t.Check))
			out = append(out, TaskState{ID: t.ID, State: StateTodo, Detail: "This task's check is missing."})
			continue
		}
		r, err := check(ctx, env)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("task %s: check %s: %v", t.ID, t.Check, err))
			out = append(out, TaskState{ID: t.ID, State: StateTodo, Detail: "Could not check yet: " + err.Error()})
		case r.Done:
			done[t.ID] = true
			out = append(out, TaskState{ID: t.ID, State: StateDone, Detail: r.Detail})
		default:
			out = append(out, TaskState{ID: t.ID, State: StateTodo, Detail: r.Detail})
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("evaluate challenge %s: %s", c.ID, strings.Join(errs, "; "))
	}
	return out, nil
}

func notDone(ids []string, done map[string]bool) []string {
	var out []string
	for _, id := range ids {
		if !done[id] {
			out = append(out, id)
		}
	}
	return out
}

// Trace decodes an export's controller steps, oldest first, keeping those
// at or after since (zero keeps all): a challenge started at since is judged
// on what happened after its start. State snapshots and the stream's own
// control messages (reset, dropped) are not steps and are left out.
//
// The page asks for this every 1.5 s against a ring of up to 4096
// messages, a third of them state snapshots of several KiB: a message is
// first judged by its head (the recorder writes seq, time and type first),
// and only the steps kept are decoded.
func Trace(e stream.Export, since time.Time) ([]controller.Step, error) {
	steps := make([]controller.Step, 0, len(e.Messages))
	for i, raw := range e.Messages {
		if typ, at, ok := peekHead(raw); ok && (skipType(typ) || (!since.IsZero() && at.Before(since))) {
			continue
		}
		var s controller.Step
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("decode message %d of namespace %s: %w", i, e.Namespace, err)
		}
		if skipType(s.Type) || (!since.IsZero() && s.Time.Before(since)) {
			continue
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func skipType(t controller.StepType) bool {
	return t == stream.TypeState || t == stream.TypeReset || t == stream.TypeDropped
}

// headLimit is how far into a message its time and type are looked for.
const headLimit = 160

// peekHead reads the "time" and "type" of a message from its first bytes;
// ok is false when they are not both there, and the caller decodes it all.
func peekHead(raw []byte) (typ controller.StepType, at time.Time, ok bool) {
	head := raw[:min(len(raw), headLimit)]
	t, ok1 := stringField(head, `"type":"`)
	ts, ok2 := stringField(head, `"time":"`)
	if !ok1 || !ok2 {
		return "", time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "", time.Time{}, false
	}
	return controller.StepType(t), at, true
}

// stringField finds key (`"name":"`) in b and returns the string after it,
// which must hold no escapes (times and step types never do).
func stringField(b []byte, key string) (string, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := b[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return "", false
	}
	return string(rest[:j]), true
}
