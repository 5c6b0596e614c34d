package stream

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller"
)

// dropNoticeEvery is how often, at most, the stream says that steps were
// dropped.
const dropNoticeEvery = time.Second

// shutdownGrace is how long Run waits for viewers to take their close frame
// before it cuts their writes.
const shutdownGrace = time.Second

// drainMax bounds how many inbox items Run takes in one go before it looks
// at its other channels again.
const drainMax = 1024

// wakeChunk is how many viewers' writers flush wakes before it yields. Waking
// thousands at once spills them from this processor's run queue into the
// global one, where they crowd out the controller's goroutines; yielding
// every few lets them run here first (measured with 2,000 viewers: the
// controller kept 0.88 of its rate instead of 0.68).
const wakeChunk = 16

// Run is the goroutine that owns the history, the latest states and the
// viewers. It returns when ctx is done, after closing every viewer and
// waiting for their goroutines to end. Call it once.
func (r *Recorder) Run(ctx context.Context) {
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
	// Drops held back by noteDrops' once-a-second limit are announced by
	// this tick even when no further step arrives.
	dropTick := time.NewTicker(dropNoticeEvery)
	defer dropTick.Stop()
	defer r.shutdown()
	for {
		select {
		case <-ctx.Done():
			return
		case <-dropTick.C:
			r.noteDrops()
			r.scheduleFlush()
		case in := <-r.inbox:
			r.record(in)
			r.drain()
			r.scheduleFlush()
		case <-r.timer.C:
			r.armed = false
			r.flush()
		case c := <-r.register:
			r.flush()
			r.attach(c)
		case c := <-r.unregister:
			r.detach(c, websocket.CloseNormalClosure, "")
		case req := <-r.exports:
			req.reply <- r.export(req.namespace)
		case ns := <-r.forgets:
			r.forget(ns)
		}
	}
}

// drain records whatever else is already waiting, so a burst becomes one
// batch, then says so in the stream if Emit had to drop steps.
func (r *Recorder) drain() {
	for range drainMax {
		select {
		case in := <-r.inbox:
			r.record(in)
		default:
			r.noteDrops()
			return
		}
	}
	r.noteDrops()
}

func (r *Recorder) noteDrops() {
	dropped := r.droppedSteps.Load()
	if dropped == r.reportedDrop {
		return
	}
	// While the inbox overflows, say so once a second, not after every
	// drain: the notice goes to every viewer.
	now := r.opts.Clock.Now()
	if now.Sub(r.reportedAt) < dropNoticeEvery {
		return
	}
	n := dropped - r.reportedDrop
	r.reportedDrop, r.reportedAt = dropped, now
	r.record(input{step: controller.Step{
		Type:    TypeDropped,
		Time:    now,
		Object:  controller.ObjectRef{Kind: "Recorder", Name: "trace"},
		Message: fmt.Sprintf("the trace recorder was full and dropped %d steps rather than slow the controller", n),
	}})
}

// record stamps the next seq on in, keeps it, and queues it for viewers.
func (r *Recorder) record(in input) {
	r.seq++
	in.step.Seq = r.seq
	e := &entry{seq: r.seq, obj: in.step.Object, state: in.isState, msg: &Message{Step: in.step, State: in.state}}
	s := r.space(in.step.Object.Namespace)
	s.ring.push(e)
	if in.isState {
		s.keepState(e, in.state == nil)
	}
	if ns := in.step.Object.Namespace; r.hasViewers(ns) {
		if len(s.pending) == 0 {
			r.receivers += r.viewersOf(ns)
		}
		s.pending = append(s.pending, e)
		r.dirty = true
	}
	r.meter.add(time.Now())
	r.messages.Add(1)
	r.lastSeq.Store(r.seq)
}

// viewersOf is how many viewers receive a message of ns: its own, or all
// for a global message.
func (r *Recorder) viewersOf(ns string) int {
	if ns == "" {
		return len(r.clients)
	}
	return len(r.spaces[ns].clients)
}

func (s *space) keepState(e *entry, deleted bool) {
	key := stateKey{e.obj.Kind, e.obj.Name}
	if deleted {
		delete(s.states, key)
		return
	}
	s.states[key] = e
}

// hasViewers says whether anyone would receive a message of ns now; global
// messages go to every viewer.
func (r *Recorder) hasViewers(ns string) bool {
	if ns == "" {
		return len(r.clients) > 0
	}
	s, ok := r.spaces[ns]
	return ok && len(s.clients) > 0
}

// rateInterval is how long the recorded-message rate is measured over.
const rateInterval = 500 * time.Millisecond

// rateMeter counts recorded messages and turns the count into a rate once
// per rateInterval. Run owns it.
type rateMeter struct {
	start time.Time
	n     int
	rate  float64
}

// add counts one message recorded at now.
func (m *rateMeter) add(now time.Time) {
	m.at(now)
	m.n++
}

// at returns the rate measured over the last interval before now, starting
// a new interval when the current one is over. Every message passes through
// here, so an interval that lasted twice as long as it should had nothing
// in its second half: whatever came before is over, and the rate is zero.
// (Else the first message after a burst would still read as busy.)
//
// A burst is seen sooner: the messages of the interval under way, counted
// over the whole interval, are a lower bound of the current rate. So the
// rate rises within tens of milliseconds of a burst's start, while the
// first frames of the burst are still to be written, and falls an interval
// or two after its end.
func (m *rateMeter) at(now time.Time) float64 {
	switch d := now.Sub(m.start); {
	case d >= 2*rateInterval:
		m.rate = 0
		m.start, m.n = now, 0
	case d >= rateInterval:
		m.rate = float64(m.n) / d.Seconds()
		m.start, m.n = now, 0
	}
	return max(m.rate, float64(m.n)/rateInterval.Seconds())
}

// window is how long to coalesce now (see coalesceWindow). The controller
// is busy when messages arrive faster than BusyStepRate, or when the
// machine's processors are busy (its API server's work shows there first:
// a hundred Databases created at once saturate the CPU before the
// controller has traced much).
func (r *Recorder) window(now time.Time) time.Duration {
	rate := r.meter.at(now)
	busy := r.cpu.busyAt(now) || rate > r.opts.BusyStepRate
	// Sized by the viewers this flush goes to, not all that are connected:
	// one learner's burst is not held back for the sake of 500 others who
	// would get nothing. A global message goes to everyone.
	w := coalesceWindow(r.opts, min(r.receivers, len(r.clients)), busy)
	r.stepRate.Store(math.Float64bits(rate))
	r.cpuBusy.Store(math.Float64bits(r.cpu.latest))
	r.lastWindow.Store(int64(w))
	return w
}

// coalesceWindow is BatchInterval × (viewers / FullBatchViewers)², capped at
// BatchInterval; while the controller is busy it is at least viewers /
// BusyFrameRate, capped at MaxBatchInterval (see Options).
func coalesceWindow(o Options, viewers int, busy bool) time.Duration {
	v, full := float64(viewers), float64(o.FullBatchViewers)
	w := min(time.Duration(float64(o.BatchInterval)*(v/full)*(v/full)), o.BatchInterval)
	if busy {
		budget := time.Duration(v / float64(o.BusyFrameRate) * float64(time.Second))
		w = max(w, min(budget, o.MaxBatchInterval))
	}
	return w
}

// scheduleFlush sends pending messages now if the last flush was at least a
// window ago (so the first step after a quiet spell is not delayed), and
// otherwise when that window ends.
func (r *Recorder) scheduleFlush() {
	if r.armed || !r.dirty {
		return
	}
	now := time.Now()
	wait := r.lastFlush.Add(r.window(now)).Sub(now)
	if wait < 500*time.Microsecond {
		r.flush()
		return
	}
	r.timer.Reset(wait)
	r.armed = true
}

// flush sends every namespace's pending messages, merged with the pending
// global ones, to that namespace's viewers: one encoding and one framing per
// namespace, shared by all its viewers.
func (r *Recorder) flush() {
	if !r.dirty {
		return
	}
	r.dirty = false
	r.receivers = 0
	r.lastFlush = time.Now()
	global := r.space("")
	var globalOnly *frame
	for ns, s := range r.spaces {
		if ns == "" {
			continue // global messages go out with every namespace's batch
		}
		if len(s.clients) == 0 {
			s.pending = nil
			continue
		}
		if len(s.pending) == 0 && len(global.pending) == 0 {
			continue
		}
		var f *frame
		if len(s.pending) == 0 {
			if globalOnly == nil {
				globalOnly = r.newFrame(global.pending)
			}
			f = globalOnly
		} else {
			f = r.newFrame(mergeBySeq(s.pending, global.pending))
		}
		s.pending = nil
		n := 0
		for c := range s.clients {
			r.deliver(c, f)
			if n++; n%wakeChunk == 0 {
				runtime.Gosched() // see wakeChunk
			}
		}
	}
	global.pending = nil
}

func (r *Recorder) newFrame(es []*entry) *frame {
	data := encodeBatch(es)
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, data)
	if err != nil {
		// Preparing an uncompressed text frame does not fail; if it ever
		// does, viewers still get the data framed one by one.
		r.opts.Logger.Error(err, "Prepared no shared frame")
	}
	return &frame{data: data, pm: pm}
}

// deliver queues f for c, or drops c when its buffer is full: the recorder
// never waits for a viewer.
func (r *Recorder) deliver(c *client, f *frame) {
	select {
	case c.send <- f:
		r.frames.Add(1)
	default:
		r.droppedClients.Add(1)
		r.opts.Logger.Info("Dropped a slow viewer", "namespace", c.namespace, "buffer", cap(c.send))
		r.detach(c, websocket.CloseTryAgainLater, "fell behind; reconnect with ?since=<last seq>")
		// Its writer is most likely stuck on a viewer that stopped
		// reading, holding a goroutine and buffers until WriteWait: cut
		// that write short.
		cutWrites(c)
	}
}

// attach sends c its catch-up frames and adds it to its namespace's viewers;
// pending messages were flushed just before, so nothing is sent twice.
func (r *Recorder) attach(c *client) {
	frames := r.catchup(c)
	r.frames.Add(uint64(len(frames)))
	c.catchup <- frames
	r.clients[c] = struct{}{}
	r.space(c.namespace).clients[c] = struct{}{}
	r.clientCount.Store(int64(len(r.clients)))
	r.clientWG.Add(2)
	go func() { defer r.clientWG.Done(); c.writePump() }()
	go func() { defer r.clientWG.Done(); c.readPump() }()
}

func (r *Recorder) detach(c *client, code int, reason string) {
	if _, ok := r.clients[c]; !ok {
		return
	}
	delete(r.clients, c)
	delete(r.space(c.namespace).clients, c)
	r.clientCount.Store(int64(len(r.clients)))
	c.closeCode, c.closeReason = code, reason
	close(c.send)
}

// cutWrites makes a write in progress to c fail now. Deadlines on a net.Conn
// may be set from any goroutine; the writer's next write sets its own.
func cutWrites(c *client) {
	_ = c.conn.NetConn().SetWriteDeadline(time.Now())
}

// shutdown closes every viewer and waits for their goroutines: first
// politely, with a close frame, then, for viewers that do not read, by
// cutting their writes short.
func (r *Recorder) shutdown() {
	close(r.done)
	r.timer.Stop()
	var closing []*client
	for c := range r.clients {
		closing = append(closing, c)
		r.detach(c, websocket.CloseGoingAway, "oplab is shutting down")
	}
	ended := make(chan struct{})
	go func() { r.clientWG.Wait(); close(ended) }()
	select {
	case <-ended:
		return
	case <-time.After(shutdownGrace):
	}
	for _, c := range closing {
		cutWrites(c)
	}
	<-ended
}
