package challenges

import (
	"context"
	"slices"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons/judge"
)

// traces keeps each namespace's steps decoded so far, so that a status
// request, which comes every 1.5 s from every open challenge page, decodes
// only the messages recorded since the previous one. One goroutine (run)
// owns the table; requests reach it over ask.
type traces struct {
	exporter Exporter
	ask      chan traceAsk
	// idle is how long a namespace's steps are kept without a request.
	idle time.Duration
	now  func() time.Time
}

type traceAsk struct {
	namespace string
	reply     chan traceReply
}

type traceReply struct {
	steps []controller.Step
	err   error
}

// traceEntry is one namespace's decoded steps, oldest first, and the last
// sequence number looked at.
type traceEntry struct {
	steps   []controller.Step
	lastSeq uint64
	used    time.Time
}

func newTraces(exporter Exporter) *traces {
	return &traces{exporter: exporter, ask: make(chan traceAsk), idle: 5 * time.Minute, now: time.Now}
}

// run serves the requests until ctx ends.
func (t *traces) run(ctx context.Context) {
	table := map[string]*traceEntry{}
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-t.ask:
			steps, err := t.update(table, a.namespace)
			a.reply <- traceReply{steps: steps, err: err}
		case <-sweep.C:
			for ns, e := range table {
				if t.now().Sub(e.used) > t.idle {
					delete(table, ns)
				}
			}
		}
	}
}

// update brings ns's entry up to the recorder's export and returns its
// steps. A ring that restarted below the entry's last sequence number (the
// namespace was forgotten and recorded again) starts the entry afresh; the
// steps that fell out of the ring are dropped, so an entry is never larger
// than the ring.
func (t *traces) update(table map[string]*traceEntry, ns string) ([]controller.Step, error) {
	e := t.exporter.Export(ns)
	entry := table[ns]
	last := judge.LastSeq(e)
	if entry == nil || last < entry.lastSeq {
		entry = &traceEntry{}
		table[ns] = entry
	}
	entry.used = t.now()
	fresh, err := judge.TraceAfter(e, entry.lastSeq, time.Time{})
	if err != nil {
		return nil, err
	}
	entry.steps = append(entry.steps, fresh...)
	entry.lastSeq = last
	if len(entry.steps) > 0 {
		first := judge.FirstStepSeq(e)
		i, _ := slices.BinarySearchFunc(entry.steps, first, func(s controller.Step, seq uint64) int {
			switch {
			case s.Seq < seq:
				return -1
			case s.Seq > seq:
				return 1
			}
			return 0
		})
		entry.steps = entry.steps[i:]
	}
	// The caller may keep its slice while later appends grow the entry's:
	// capping it keeps them from ever sharing elements being written.
	return entry.steps[:len(entry.steps):len(entry.steps)], nil
}

// steps returns the namespace's steps since since, oldest first.
func (t *traces) steps(ctx context.Context, ns string, since time.Time) ([]controller.Step, error) {
	reply := make(chan traceReply, 1)
	select {
	case t.ask <- traceAsk{namespace: ns, reply: reply}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var r traceReply
	select {
	case r = <-reply:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil || since.IsZero() {
		return r.steps, r.err
	}
	i := slices.IndexFunc(r.steps, func(s controller.Step) bool { return !s.Time.Before(since) })
	if i < 0 {
		return nil, nil
	}
	return r.steps[i:], nil
}
