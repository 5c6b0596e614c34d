package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
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
	number := map[string]string{}
	for i, t := range c.Tasks {
		number[t.ID] = "task " + strconv.Itoa(i+1)
	}
	out := make([]TaskState, 0, len(c.Tasks))
	var errs []string
	for _, t := range c.Tasks {
		// A question or an input is answered only once it is unlocked: a
		// done list that names it early (a crafted address) does not skip
		// the tasks before.
		missing := notDone(t.After, done)
		answered := t.Question != nil || t.Input != ""
		if already[t.ID] && (!answered || len(missing) == 0) {
			done[t.ID] = true
			st := TaskState{ID: t.ID, State: StateDone}
			if t.Question != nil { // answered right: the explanation stays with it
				st.Detail = rightDetail(t.Question)
			}
			out = append(out, st)
			continue
		}
		if len(missing) > 0 {
			for i, id := range missing {
				missing[i] = number[id]
			}
			out = append(out, TaskState{ID: t.ID, State: StateLocked, Detail: "Waits until " + strings.Join(missing, " and ") + " is done."})
			continue
		}
		if t.Question != nil { // answered on the page: done only once Answer said so
			out = append(out, TaskState{ID: t.ID, State: StateTodo, Detail: "Answer the question above."})
			continue
		}
		if env.NotStarted {
			out = append(out, TaskState{ID: t.ID, State: StateTodo, Detail: "Press Start first: the checks judge your namespace from the moment you start."})
			continue
		}
		if t.Input != "" { // typed on the page: done only once Submit said so
			detail := "Type your answer above."
			if in, ok := LookupInput(t.Input); ok {
				detail = "Type the " + in.noun() + " above and submit it."
			}
			out = append(out, TaskState{ID: t.ID, State: StateTodo, Detail: detail})
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
// on what happened after its start. State snapshots and the recorder's own
// control messages (reset, dropped) are not steps and are left out.
//
// The page asks for this every 1.5 s against a ring of up to 4096
// messages, a third of them state snapshots of several KiB: a message is
// first judged by its head (the recorder writes seq, time and type first),
// and only the steps kept are decoded.
func Trace(e trace.Export, since time.Time) ([]controller.Step, error) {
	return TraceAfter(e, 0, since)
}

// TraceAfter is Trace keeping only the steps whose Seq is above after: a
// caller that keeps the steps decoded so far (web/challenges) decodes only
// what was recorded since.
func TraceAfter(e trace.Export, after uint64, since time.Time) ([]controller.Step, error) {
	msgs, skipped := e.Messages, 0
	if after > 0 {
		// An export is in seq order: the new messages are a suffix.
		skipped = sort.Search(len(msgs), func(i int) bool {
			seq, ok := numberField(msgs[i][:min(len(msgs[i]), headLimit)], `"seq":`)
			return !ok || seq > after
		})
		msgs = msgs[skipped:]
	}
	steps := make([]controller.Step, 0, len(msgs))
	for i, raw := range msgs {
		i += skipped
		if h, ok := peekHead(raw); ok && (h.seq <= after || skipType(h.typ) || (!since.IsZero() && h.at.Before(since))) {
			continue
		}
		var s controller.Step
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("decode message %d of namespace %s: %w", i, e.Namespace, err)
		}
		if s.Seq <= after || skipType(s.Type) || (!since.IsZero() && s.Time.Before(since)) {
			continue
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// FirstStepSeq is the sequence number of an export's oldest step (0 for
// none). An export starts with the latest states of objects whose history
// fell out of the ring, then the rings; the first step is the oldest the
// ring still holds.
func FirstStepSeq(e trace.Export) uint64 {
	for _, raw := range e.Messages {
		h, ok := peekHead(raw)
		if !ok {
			var m controller.Step
			if err := json.Unmarshal(raw, &m); err != nil {
				continue
			}
			h = head{seq: m.Seq, typ: m.Type}
		}
		if !skipType(h.typ) {
			return h.seq
		}
	}
	return 0
}

// LastSeq is the sequence number of an export's last message (0 for none).
func LastSeq(e trace.Export) uint64 {
	if len(e.Messages) == 0 {
		return 0
	}
	raw := e.Messages[len(e.Messages)-1]
	if h, ok := peekHead(raw); ok {
		return h.seq
	}
	var m struct {
		Seq uint64 `json:"seq"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Seq
}

func skipType(t controller.StepType) bool {
	return t == trace.TypeState || t == trace.TypeReset || t == trace.TypeDropped
}

// headLimit is how far into a message its time and type are looked for.
const headLimit = 160

// head is what a message's first bytes say about it.
type head struct {
	seq uint64
	typ controller.StepType
	at  time.Time
}

// peekHead reads the seq, time and type of a message from its first bytes;
// ok is false when they are not all there, and the caller decodes it all.
func peekHead(raw []byte) (head, bool) {
	b := raw[:min(len(raw), headLimit)]
	t, ok1 := stringField(b, `"type":"`)
	ts, ok2 := stringField(b, `"time":"`)
	seq, ok3 := numberField(b, `"seq":`)
	if !ok1 || !ok2 || !ok3 {
		return head{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return head{}, false
	}
	return head{seq: seq, typ: controller.StepType(t), at: at}, true
}

// numberField finds key (`"name":`) in b and reads the unsigned integer after it.
func numberField(b []byte, key string) (uint64, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(key):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	if j == 0 || j == len(rest) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(rest[:j]), 10, 64)
	return n, err == nil
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
