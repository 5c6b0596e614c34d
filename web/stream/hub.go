package stream

import (
	"context"
	"math"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller/trace"
)

// Defaults for the zero HubOptions.
const (
	DefaultClientBuffer  = 64
	DefaultBatchInterval = 80 * time.Millisecond
	DefaultFullBatch     = 2000
	DefaultBusyStepRate  = 200
	DefaultBusyFrameRate = 2000
	DefaultMaxBatch      = time.Second
	DefaultReadLimit     = 512
	DefaultPongWait      = 60 * time.Second
	DefaultWriteWait     = 10 * time.Second
)

// HubOptions configure a Hub. The zero value is usable.
type HubOptions struct {
	// ClientBuffer is how many frames may wait for one viewer (default 64).
	// A viewer that falls further behind is disconnected, never waited for.
	ClientBuffer int
	// BatchInterval is the longest a message waits to be coalesced with
	// others into one frame (default 80ms), reached at FullBatchViewers.
	// A message arriving after a quiet window goes out at once.
	BatchInterval time.Duration
	// FullBatchViewers is the number of viewers at which the coalescing
	// window reaches BatchInterval (default 2,000). Below it the window
	// shrinks with the square of the viewer count: a few hundred viewers
	// get nearly every step at once, while the frames written per second,
	// viewers / window, fall as viewers grow, leaving the controller its
	// CPU. With the defaults: 100 viewers 0.2ms, 500 5ms, 1,000 20ms,
	// 2,000 and more 80ms.
	FullBatchViewers int
	// BusyStepRate is the rate of recorded messages, all namespaces
	// together, above which the controller counts as busy (default 200 a
	// second; one Database's reconcile burst stays below it, a hundred
	// Databases created at once go far above). The stream's own rate is
	// the only signal: what else runs on the machine never changes what
	// learners see.
	BusyStepRate float64
	// BusyFrameRate is the frames a second, all viewers together, that the
	// stream aims at while the controller is busy (default 2,000): the
	// window widens to receivers / BusyFrameRate, where receivers are the
	// viewers of the namespaces the flush goes to, up to MaxBatchInterval
	// (so beyond BusyFrameRate × MaxBatchInterval viewers, more frames go
	// out; catch-up frames are not counted). On one machine every frame
	// written to a viewer is CPU the controller and its API server do not
	// get; while they are busy, viewers get the same steps in fewer,
	// larger frames.
	BusyFrameRate int
	// MaxBatchInterval bounds the window while busy (default 1s).
	MaxBatchInterval time.Duration
	// DisableCompression turns off permessage-deflate. By default a viewer
	// that offers it (browsers do) gets frames compressed, each compressed
	// once and shared by all viewers of a namespace; frames under
	// compressMin (1 KiB, a step or two) go uncompressed. Bytes copied
	// through sockets are the larger part of a busy stream's cost.
	DisableCompression bool
	// AllowedOrigins lists browser origins ("http://host:port" or
	// "host:port") allowed besides the request's own host.
	AllowedOrigins []string
	// CheckOrigin, when set, replaces the same-host-or-allowed check.
	CheckOrigin func(*http.Request) bool
	// ReadLimit is the largest frame a viewer may send (default 512 bytes);
	// viewers only answer pings, so anything bigger is misbehaviour.
	ReadLimit int64
	// PongWait is how long a viewer may stay silent before it is considered
	// gone (default 60s).
	PongWait time.Duration
	// PingPeriod is how often viewers are pinged (default 9/10 of PongWait).
	// It must be shorter than PongWait, or a viewer that answers every ping
	// would still time out; a longer one is replaced by the default.
	PingPeriod time.Duration
	// WriteWait bounds one write to a viewer (default 10s).
	WriteWait time.Duration
	// Logger receives the hub's few log lines (default discard).
	Logger logr.Logger
}

func (o HubOptions) withDefaults() HubOptions {
	o.ClientBuffer = orDefault(o.ClientBuffer, DefaultClientBuffer)
	o.BatchInterval = orDefault(o.BatchInterval, DefaultBatchInterval)
	o.FullBatchViewers = orDefault(o.FullBatchViewers, DefaultFullBatch)
	o.BusyStepRate = orDefault(o.BusyStepRate, DefaultBusyStepRate)
	o.BusyFrameRate = orDefault(o.BusyFrameRate, DefaultBusyFrameRate)
	o.MaxBatchInterval = max(orDefault(o.MaxBatchInterval, DefaultMaxBatch), o.BatchInterval)
	o.ReadLimit = orDefault(o.ReadLimit, DefaultReadLimit)
	o.PongWait = orDefault(o.PongWait, DefaultPongWait)
	o.WriteWait = orDefault(o.WriteWait, DefaultWriteWait)
	if o.PingPeriod <= 0 || o.PingPeriod >= o.PongWait {
		o.PingPeriod = o.PongWait * 9 / 10
	}
	return o
}

// HubStats are the hub's counters.
type HubStats struct {
	// Clients is the number of connected viewers.
	Clients int `json:"clients"`
	// DroppedClients counts viewers disconnected for falling behind.
	DroppedClients uint64 `json:"droppedClients"`
	// Frames counts frames queued to viewers, catch-up frames included.
	Frames uint64 `json:"frames"`
	// StepRate and Window are as of the last flush scheduled (they are only
	// worked out when there is something to send, so after traffic stops
	// they keep their last values). StepRate is messages a second, all
	// namespaces together; above HubOptions.BusyStepRate frames get fewer.
	StepRate float64 `json:"stepRate"`
	// Window is the coalescing window last used.
	Window time.Duration `json:"windowNs"`
}

// shutdownGrace is how long Run waits for viewers to take their close frame
// before it cuts their writes.
const shutdownGrace = time.Second

// wakeChunk is how many viewers' writers flush wakes before it yields. Waking
// thousands at once spills them from this processor's run queue into the
// global one, where they crowd out the controller's goroutines; yielding
// every few lets them run here first.
const wakeChunk = 16

// Hub streams what a Recorder records to the websocket viewers of each
// namespace: it batches messages into frames, frames and compresses each
// once for all the viewers it goes to, and drops viewers that fall behind.
// One goroutine, Run, owns the viewers and the pending batches, as the hub
// of gorilla/websocket's chat example owns its clients.
type Hub struct {
	opts     HubOptions
	rec      *trace.Recorder
	upgrader websocket.Upgrader

	// feed is the Recorder's Feed: what it records, and each joining
	// viewer with its catch-up, in seq order.
	feed       chan trace.Update
	unregister chan *client
	done       chan struct{} // closed when Run has stopped

	clientCount    atomic.Int64
	droppedClients atomic.Uint64
	frames         atomic.Uint64
	stepRate       atomic.Uint64 // float64 bits
	lastWindow     atomic.Int64

	// Owned by Run.
	rooms     map[string]*room
	clients   map[*client]struct{}
	timer     *time.Timer
	armed     bool
	dirty     bool // some room has pending messages
	receivers int  // viewers of the rooms with pending messages
	lastFlush time.Time
	meter     rateMeter
	clientWG  sync.WaitGroup
}

// room is the viewers of one namespace and the messages waiting for them;
// the room "" holds pending global messages, which go to every viewer.
type room struct {
	clients map[*client]struct{}
	pending []*trace.Entry
}

// NewHub returns the Hub that streams rec, as its Feed. Call it before
// rec.Run; a Recorder has at most one Hub.
func NewHub(rec *trace.Recorder, opts HubOptions) *Hub {
	opts = opts.withDefaults()
	h := &Hub{
		opts:       opts,
		rec:        rec,
		feed:       make(chan trace.Update),
		unregister: make(chan *client),
		done:       make(chan struct{}),
		rooms:      map[string]*room{"": {clients: map[*client]struct{}{}}},
		clients:    map[*client]struct{}{},
	}
	h.upgrader = websocket.Upgrader{
		ReadBufferSize:    1024,
		WriteBufferSize:   4096,
		EnableCompression: !opts.DisableCompression,
		// Viewers mostly sit idle between frames, so they share write
		// buffers instead of holding 4 KiB each.
		WriteBufferPool: &sync.Pool{},
		CheckOrigin:     h.checkOrigin,
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			http.Error(w, reason.Error(), status)
		},
	}
	rec.Attach(trace.Feed{Updates: h.feed, Stopped: h.done, Frame: prepare})
	return h
}

// Stats returns the current counters; safe from any goroutine.
func (h *Hub) Stats() HubStats {
	return HubStats{
		Clients:        int(h.clientCount.Load()),
		DroppedClients: h.droppedClients.Load(),
		Frames:         h.frames.Load(),
		StepRate:       math.Float64frombits(h.stepRate.Load()),
		Window:         time.Duration(h.lastWindow.Load()),
	}
}

// Run is the goroutine that owns the viewers and the pending batches. It
// returns when ctx is done, after closing every viewer and waiting for their
// goroutines to end. Call it once.
func (h *Hub) Run(ctx context.Context) {
	h.timer = time.NewTimer(time.Hour)
	h.timer.Stop()
	defer h.shutdown()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-h.feed:
			if u.Join != nil {
				h.flush() // what came before the catch-up is in it
				h.attach(u.Join.(*client), u.Catchup)
				continue
			}
			h.receive(u.Entries)
			h.scheduleFlush()
		case <-h.timer.C:
			h.armed = false
			h.flush()
		case c := <-h.unregister:
			h.detach(c, websocket.CloseNormalClosure, "")
		}
	}
}

// receive queues each entry for the viewers of its namespace, and counts it
// for the message rate.
func (h *Hub) receive(es []*trace.Entry) {
	now := time.Now()
	for _, e := range es {
		h.meter.add(now)
		ns := e.Namespace()
		rm, ok := h.rooms[ns]
		if !ok || h.viewersOf(ns) == 0 {
			continue
		}
		if len(rm.pending) == 0 {
			h.receivers += h.viewersOf(ns)
		}
		rm.pending = append(rm.pending, e)
		h.dirty = true
	}
}

// viewersOf is how many viewers receive a message of ns: its own, or all
// for a global message.
func (h *Hub) viewersOf(ns string) int {
	if ns == "" {
		return len(h.clients)
	}
	if rm, ok := h.rooms[ns]; ok {
		return len(rm.clients)
	}
	return 0
}

// rateInterval is how long the message rate is measured over.
const rateInterval = 500 * time.Millisecond

// rateMeter counts messages and turns the count into a rate once per
// rateInterval. Run owns it.
type rateMeter struct {
	start time.Time
	n     int
	rate  float64
}

// add counts one message at now.
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

// window is how long to coalesce now (see coalesceWindow): the controller
// is busy when messages arrive faster than BusyStepRate.
func (h *Hub) window(now time.Time) time.Duration {
	rate := h.meter.at(now)
	// Sized by the viewers this flush goes to, not all that are connected:
	// one learner's burst is not held back for the sake of 500 others who
	// would get nothing. A global message goes to everyone.
	w := coalesceWindow(h.opts, min(h.receivers, len(h.clients)), rate > h.opts.BusyStepRate)
	h.stepRate.Store(math.Float64bits(rate))
	h.lastWindow.Store(int64(w))
	return w
}

// coalesceWindow is BatchInterval × (viewers / FullBatchViewers)², capped at
// BatchInterval; while the controller is busy it is at least viewers /
// BusyFrameRate, capped at MaxBatchInterval (see HubOptions).
func coalesceWindow(o HubOptions, viewers int, busy bool) time.Duration {
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
func (h *Hub) scheduleFlush() {
	if h.armed || !h.dirty {
		return
	}
	now := time.Now()
	wait := h.lastFlush.Add(h.window(now)).Sub(now)
	if wait < 500*time.Microsecond {
		h.flush()
		return
	}
	h.timer.Reset(wait)
	h.armed = true
}

// flush sends every room's pending messages, merged with the pending global
// ones, to that room's viewers: one encoding and one framing per namespace,
// shared by all its viewers.
func (h *Hub) flush() {
	if !h.dirty {
		return
	}
	h.dirty = false
	h.receivers = 0
	h.lastFlush = time.Now()
	global := h.rooms[""]
	var globalOnly *trace.Batch
	for ns, rm := range h.rooms {
		if ns == "" || (len(rm.pending) == 0 && len(global.pending) == 0) {
			continue // global messages go out with every namespace's batch
		}
		var f trace.Batch
		if len(rm.pending) == 0 {
			if globalOnly == nil {
				g := trace.NewBatch(global.pending, prepare)
				globalOnly = &g
			}
			f = *globalOnly
		} else {
			f = trace.NewBatch(trace.MergeBySeq(rm.pending, global.pending), prepare)
		}
		rm.pending = nil
		n := 0
		for c := range rm.clients {
			h.deliver(c, &f)
			if n++; n%wakeChunk == 0 {
				runtime.Gosched() // see wakeChunk
			}
		}
	}
	global.pending = nil
}

// deliver queues f for c, or drops c when its buffer is full: the hub never
// waits for a viewer.
func (h *Hub) deliver(c *client, f *trace.Batch) {
	select {
	case c.send <- f:
		h.frames.Add(1)
	default:
		h.droppedClients.Add(1)
		h.opts.Logger.Info("Dropped a slow viewer", "namespace", c.ns, "buffer", cap(c.send))
		h.detach(c, websocket.CloseTryAgainLater, "fell behind; reconnect with ?since=<last seq>")
		// Its writer is most likely stuck on a viewer that stopped
		// reading, holding a goroutine and buffers until WriteWait: cut
		// that write short.
		cutWrites(c)
	}
}

// attach sends a joining viewer its catch-up frames and adds it to its
// room; pending messages were flushed just before, so nothing is sent twice.
func (h *Hub) attach(c *client, catchup []trace.Batch) {
	h.frames.Add(uint64(len(catchup)))
	c.catchup <- catchup
	h.clients[c] = struct{}{}
	rm, ok := h.rooms[c.ns]
	if !ok {
		rm = &room{clients: map[*client]struct{}{}}
		h.rooms[c.ns] = rm
	}
	rm.clients[c] = struct{}{}
	h.clientCount.Store(int64(len(h.clients)))
	h.clientWG.Add(2)
	go func() { defer h.clientWG.Done(); c.writePump() }()
	go func() { defer h.clientWG.Done(); c.readPump() }()
}

func (h *Hub) detach(c *client, code int, reason string) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	if rm := h.rooms[c.ns]; rm != nil {
		delete(rm.clients, c)
		if len(rm.clients) == 0 {
			delete(h.rooms, c.ns)
		}
	}
	h.clientCount.Store(int64(len(h.clients)))
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
func (h *Hub) shutdown() {
	close(h.done)
	h.timer.Stop()
	var closing []*client
	for c := range h.clients {
		closing = append(closing, c)
		h.detach(c, websocket.CloseGoingAway, "oplab is shutting down")
	}
	ended := make(chan struct{})
	go func() { h.clientWG.Wait(); close(ended) }()
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

// prepare frames a batch's JSON once for every viewer it goes to (the
// Recorder's Feed.Frame, and each live batch): gorilla frames and
// compresses a PreparedMessage once per kind of connection, on first
// write. Preparing an uncompressed text frame cannot fail (gorilla only
// writes it to a buffer); should it ever, the batch is framed for each
// viewer instead.
func prepare(data []byte) any {
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, data)
	if err != nil {
		return nil
	}
	return pm
}

func orDefault[T int | int64 | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
