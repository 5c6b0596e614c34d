package stream

import (
	"encoding/json"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller"
)

// Defaults for the zero Options.
const (
	DefaultRingSize      = 4096
	DefaultClientBuffer  = 64
	DefaultBatchInterval = 80 * time.Millisecond
	DefaultFullBatch     = 2000
	DefaultBusyStepRate  = 200
	DefaultBusyFrameRate = 2000
	DefaultMaxBatch      = time.Second
	DefaultInboxSize     = 8192
	DefaultReadLimit     = 512
	DefaultPongWait      = 60 * time.Second
	DefaultWriteWait     = 10 * time.Second
)

// Options configure a Recorder. The zero value is usable.
type Options struct {
	// RingSize is how many recent messages are kept per namespace (default
	// 4096). Older ones survive only as the latest state per object.
	RingSize int
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
	// Databases created at once go far above).
	BusyStepRate float64
	// BusyFrameRate is the frames a second, all viewers together, that the
	// stream aims at while the controller is busy (default 2,000): the
	// window widens to receivers / BusyFrameRate, where receivers are the
	// viewers of the namespaces the flush goes to, up to MaxBatchInterval
	// (so beyond BusyFrameRate × MaxBatchInterval viewers, more frames go
	// out; catch-up frames are not counted). On one
	// machine every frame written to a viewer is CPU the controller and its
	// API server do not get; while they are busy, viewers get the same
	// steps in fewer, larger frames (2,000 viewers: 1 frame a second
	// instead of 12). Measured, a frame costs about 12µs of CPU to write
	// and as much to read on loopback, so 2,000 a second is about 2.5% of
	// two cores.
	BusyFrameRate int
	// MaxBatchInterval bounds the window while busy (default 1s).
	MaxBatchInterval time.Duration
	// CPU reports how busy the machine is (default: /proc/stat where it
	// can be read: the whole machine, so other tenants' load counts too).
	// From BusyCPU on (default 0.9), until it falls 0.3 below it (or below
	// half of it), the controller counts as busy too, whatever its message
	// rate.
	CPU CPUMeter
	// BusyCPU is the busy fraction of the CPU (0 to 1) from which the
	// machine counts as busy; above 1 the CPU is never looked at.
	BusyCPU float64
	// DisableCompression turns off permessage-deflate. By default a viewer
	// that offers it (browsers do) gets frames compressed, each compressed
	// once and shared by all viewers of a namespace. Batches of trace JSON
	// shrink 7 to 14 times (measured); frames under compressMin (1 KiB, a
	// step or two) go uncompressed. Bytes copied through sockets are the
	// larger part of a busy stream's cost.
	DisableCompression bool
	// InboxSize is how many steps may wait for Run (default 8192); Emit
	// drops and counts steps beyond it.
	InboxSize int
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
	// Clock stamps steps emitted without a time (default the wall clock).
	Clock controller.Clock
	// Logger receives the recorder's few log lines (default discard).
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	o.RingSize = orDefault(o.RingSize, DefaultRingSize)
	o.ClientBuffer = orDefault(o.ClientBuffer, DefaultClientBuffer)
	o.BatchInterval = orDefault(o.BatchInterval, DefaultBatchInterval)
	o.FullBatchViewers = orDefault(o.FullBatchViewers, DefaultFullBatch)
	o.BusyStepRate = orDefault(o.BusyStepRate, DefaultBusyStepRate)
	o.BusyFrameRate = orDefault(o.BusyFrameRate, DefaultBusyFrameRate)
	o.MaxBatchInterval = max(orDefault(o.MaxBatchInterval, DefaultMaxBatch), o.BatchInterval)
	o.BusyCPU = orDefault(o.BusyCPU, DefaultBusyCPU)
	if o.CPU == nil && o.BusyCPU <= 1 {
		o.CPU = newProcStat("/proc/stat")
	}
	o.InboxSize = orDefault(o.InboxSize, DefaultInboxSize)
	o.ReadLimit = orDefault(o.ReadLimit, DefaultReadLimit)
	o.PongWait = orDefault(o.PongWait, DefaultPongWait)
	o.WriteWait = orDefault(o.WriteWait, DefaultWriteWait)
	if o.PingPeriod <= 0 || o.PingPeriod >= o.PongWait {
		o.PingPeriod = o.PongWait * 9 / 10
	}
	if o.Clock == nil {
		o.Clock = controller.RealClock{}
	}
	return o
}

func orDefault[T int | int64 | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Stats are the recorder's counters, for introspection and benchmarks.
type Stats struct {
	// Clients is the number of connected viewers.
	Clients int `json:"clients"`
	// DroppedClients counts viewers disconnected for falling behind.
	DroppedClients uint64 `json:"droppedClients"`
	// DroppedSteps counts steps and states Emit or PublishState dropped
	// because the inbox was full.
	DroppedSteps uint64 `json:"droppedSteps"`
	// Messages counts messages recorded (each got a seq).
	Messages uint64 `json:"messages"`
	// Frames counts frames queued to viewers, catch-up frames included.
	Frames uint64 `json:"frames"`
	// Seq is the last seq assigned.
	Seq uint64 `json:"seq"`
	// StepRate, Window and CPU are as of the last flush scheduled (they are
	// only worked out when there is something to send, so after traffic
	// stops they keep their last values). StepRate is recorded messages a
	// second; above Options.BusyStepRate frames get fewer.
	StepRate float64 `json:"stepRate"`
	// Window is the coalescing window last used.
	Window time.Duration `json:"windowNs"`
	// CPU is the machine's busy fraction last read (0 to 1).
	CPU float64 `json:"cpu"`
}

// input is one item of the inbox: a step, or a state (isState) whose JSON
// is state (nil when the object was deleted).
type input struct {
	step    controller.Step
	isState bool
	state   json.RawMessage
}

// Recorder stamps trace steps with a sequence number, keeps recent history
// per namespace, and streams it to the websocket viewers of each namespace.
// One goroutine, Run, owns the history, the latest states and the viewers;
// everything else talks to it through channels.
type Recorder struct {
	opts     Options
	upgrader websocket.Upgrader

	inbox      chan input
	register   chan *client
	unregister chan *client
	exports    chan exportReq
	forgets    chan string
	done       chan struct{} // closed when Run has stopped accepting work

	clientCount    atomic.Int64
	droppedClients atomic.Uint64
	droppedSteps   atomic.Uint64
	messages       atomic.Uint64
	frames         atomic.Uint64
	lastSeq        atomic.Uint64
	stepRate       atomic.Uint64 // float64 bits
	cpuBusy        atomic.Uint64 // float64 bits
	lastWindow     atomic.Int64

	// Owned by Run.
	seq          uint64
	reportedDrop uint64
	reportedAt   time.Time
	spaces       map[string]*space
	clients      map[*client]struct{}
	timer        *time.Timer
	armed        bool
	dirty        bool // some namespace has pending messages
	receivers    int  // viewers of the namespaces with pending messages
	lastFlush    time.Time
	meter        rateMeter
	cpu          cpuGauge
	clientWG     sync.WaitGroup
}

type exportReq struct {
	namespace string
	reply     chan Export
}

// frame is one websocket message: the JSON array, and its framing shared by
// every viewer of a namespace.
type frame struct {
	data []byte
	pm   *websocket.PreparedMessage
}

var _ controller.Sink = (*Recorder)(nil)

// NewRecorder returns a Recorder; nothing is recorded until Run runs.
func NewRecorder(opts Options) *Recorder {
	opts = opts.withDefaults()
	r := &Recorder{
		opts:       opts,
		inbox:      make(chan input, opts.InboxSize),
		register:   make(chan *client),
		unregister: make(chan *client),
		exports:    make(chan exportReq),
		forgets:    make(chan string),
		done:       make(chan struct{}),
		spaces:     map[string]*space{},
		clients:    map[*client]struct{}{},
		cpu:        cpuGauge{meter: opts.CPU, enter: opts.BusyCPU},
	}
	r.upgrader = websocket.Upgrader{
		ReadBufferSize:    1024,
		WriteBufferSize:   4096,
		EnableCompression: !opts.DisableCompression,
		// Viewers mostly sit idle between frames, so they share write
		// buffers instead of holding 4 KiB each.
		WriteBufferPool: &sync.Pool{},
		CheckOrigin:     r.checkOrigin,
		Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
			http.Error(w, reason.Error(), status)
		},
	}
	return r
}

// Emit records s: it stamps Time when zero, and Run stamps the next Seq in
// arrival order. It never blocks: when the inbox is full the step is dropped,
// counted, and the stream says so with a "dropped" message.
func (r *Recorder) Emit(s controller.Step) {
	if s.Time.IsZero() {
		s.Time = r.opts.Clock.Now()
	}
	r.send(input{step: s})
}

// PublishState records the latest view model of obj, which must marshal to
// JSON. Viewers receive it as a "state" message, and fresh viewers get the
// latest state of every object as a snapshot. A nil state says the object
// was deleted and removes it from snapshots. It never blocks.
func (r *Recorder) PublishState(obj controller.ObjectRef, state any) {
	in := input{isState: true, step: controller.Step{Type: TypeState, Object: obj, Time: r.opts.Clock.Now()}}
	if state != nil {
		raw, err := json.Marshal(state)
		if err != nil {
			r.opts.Logger.Error(err, "Dropped a state that does not marshal", "kind", obj.Kind, "namespace", obj.Namespace, "name", obj.Name)
			return
		}
		in.state = raw
	}
	r.send(in)
}

func (r *Recorder) send(in input) {
	select {
	case r.inbox <- in:
	default:
		r.droppedSteps.Add(1)
	}
}

// Stats returns the current counters; safe from any goroutine.
func (r *Recorder) Stats() Stats {
	return Stats{
		Clients:        int(r.clientCount.Load()),
		DroppedClients: r.droppedClients.Load(),
		DroppedSteps:   r.droppedSteps.Load(),
		Messages:       r.messages.Load(),
		Frames:         r.frames.Load(),
		Seq:            r.lastSeq.Load(),
		StepRate:       math.Float64frombits(r.stepRate.Load()),
		Window:         time.Duration(r.lastWindow.Load()),
		CPU:            math.Float64frombits(r.cpuBusy.Load()),
	}
}

// Export returns the recorded timeline of namespace: the states of objects
// whose history fell out of the ring, then the ring, merged in seq order with
// the global messages. It waits for Run; after Run has returned it returns
// an export without messages.
func (r *Recorder) Export(namespace string) Export {
	req := exportReq{namespace: namespace, reply: make(chan Export, 1)}
	select {
	case r.exports <- req:
		return <-req.reply
	case <-r.done:
		return Export{Version: ExportVersion, ExportedAt: time.Now().UTC(), Namespace: namespace, Messages: []Message{}}
	}
}

// Forget drops the recorded history and states of namespace, as when a
// learner's namespace is cleaned up. Its viewers, if any, stay connected.
func (r *Recorder) Forget(namespace string) {
	select {
	case r.forgets <- namespace:
	case <-r.done:
	}
}
