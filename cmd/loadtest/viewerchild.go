package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/web/stream/streamtest"
)

// The viewers run in a child process, as browsers would run apart from
// oplab, so that oplab's CPU, memory and scheduling are its own. The parent
// drives the child with one JSON request a line on its stdin; the child
// answers each with one JSON line on its stdout.

// request is what the parent asks of the viewer process.
type request struct {
	Op      string `json:"op"` // "connect", "reset", "collect", "disconnect"
	N       int    `json:"n,omitempty"`
	Measure int    `json:"measure,omitempty"` // connect: how many of the n decode and measure
	URL     string `json:"url,omitempty"`
	Sent    int64  `json:"sent,omitempty"` // collect: steps emitted since reset
	// Queued is, for collect, the frames the server queued to the viewers
	// since reset: collect waits until they have all arrived (bounded).
	Queued int64 `json:"queued,omitempty"`
}

// reply is the viewer process's answer.
type reply struct {
	Err      string        `json:"err,omitempty"`
	P50      time.Duration `json:"p50,omitempty"`
	P99      time.Duration `json:"p99,omitempty"`
	Max      time.Duration `json:"max,omitempty"`
	Measured int           `json:"measured,omitempty"` // viewers that decode and measure
	Received int64         `json:"received,omitempty"` // steps the measuring viewers received
	Frames   int64         `json:"frames,omitempty"`   // frames all viewers received
	Wire     int64         `json:"wire,omitempty"`     // bytes all viewers read off the wire
	Decoded  int64         `json:"decoded,omitempty"`  // bytes of JSON the measuring viewers decoded
	Cores    float64       `json:"cores,omitempty"`    // CPU the viewers used per second since reset
}

// serveViewers runs the viewer process until its stdin closes.
func serveViewers(in io.Reader, out io.Writer) error {
	var vs []*viewer
	var since time.Time
	var cpu0 time.Duration
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("viewer process: bad request %q: %w", sc.Text(), err)
		}
		var rep reply
		switch req.Op {
		case "connect":
			more, err := dialViewers(req.N, req.Measure, req.URL)
			if err != nil {
				rep.Err = err.Error()
			}
			vs = append(vs, more...)
		case "reset":
			for _, v := range vs {
				v.reset()
			}
			since, cpu0 = time.Now(), cpuTime()
		case "collect":
			rep = collect(vs, req.Sent, req.Queued)
			rep.Cores = (cpuTime() - cpu0).Seconds() / time.Since(since).Seconds()
		case "disconnect":
			for _, v := range vs {
				_ = v.conn.Close()
			}
			vs = nil
		default:
			rep.Err = fmt.Sprintf("unknown op %q", req.Op)
		}
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("viewer process: replying: %w", err)
		}
	}
	return sc.Err()
}

// collect waits (bounded) for the last frames, then summarises the delays.
func collect(vs []*viewer, sent, queued int64) reply {
	var rep reply
	settle := time.Now().Add(3 * time.Second)
	for time.Now().Before(settle) {
		rep = totals(vs)
		if rep.Frames >= queued && rep.Received >= sent*int64(rep.Measured) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var all []time.Duration
	for _, v := range vs {
		v.mu.Lock()
		all = append(all, v.latency...)
		v.mu.Unlock()
	}
	slices.Sort(all)
	rep.P50, rep.P99, rep.Max = percentile(all, 0.50), percentile(all, 0.99), percentile(all, 1)
	return rep
}

// totals sums the viewers' counters since the last reset.
func totals(vs []*viewer) reply {
	var rep reply
	for _, v := range vs {
		v.mu.Lock()
		if v.measures {
			rep.Measured++
		}
		rep.Received += v.received
		rep.Frames += v.frames
		rep.Decoded += v.decoded
		v.mu.Unlock()
		rep.Wire += v.wire.Load() - v.wire0.Load()
	}
	return rep
}

// viewer is one websocket client. Like a browser it offers compression. A
// measuring viewer inflates and scans every frame for the delay of each
// step; the others only count frames, letting gorilla skip the payload
// unread. oplab's work is the same for both; the viewers share this
// machine's cores with it, so they should cost as little as they can.
type viewer struct {
	conn     *websocket.Conn
	measures bool
	wire     atomic.Int64 // bytes read off the wire
	wire0    atomic.Int64 // wire at the last reset
	mu       sync.Mutex
	// Since the last reset:
	latency  []time.Duration
	received int64
	frames   int64
	decoded  int64
	started  atomic.Bool // counting since a reset
}

func (v *viewer) reset() {
	v.mu.Lock()
	v.latency, v.received, v.frames, v.decoded = v.latency[:0], 0, 0, 0
	v.wire0.Store(v.wire.Load())
	v.mu.Unlock()
	v.started.Store(true)
}

func (v *viewer) read() {
	// One buffer per viewer, reused.
	var buf bytes.Buffer
	for {
		_, r, err := v.conn.NextReader()
		if err != nil {
			return
		}
		if !v.measures {
			if v.started.Load() {
				v.mu.Lock()
				v.frames++
				v.mu.Unlock()
			}
			continue
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		data := buf.Bytes()
		now := time.Now()
		if !v.started.Load() {
			continue
		}
		v.mu.Lock()
		v.frames++
		v.decoded += int64(len(data))
		eachStep(data, func(t time.Time) {
			v.latency = append(v.latency, now.Sub(t))
			v.received++
		})
		v.mu.Unlock()
	}
}

var (
	timeKey  = []byte(`,"time":"`)
	eventKey = []byte(`","type":"event"`)
)

// eachStep calls fn with the emit time of each "event" message in a frame,
// scanning rather than decoding so that viewers cost little CPU.
func eachStep(data []byte, fn func(time.Time)) {
	for {
		i := bytes.Index(data, timeKey)
		if i < 0 {
			return
		}
		data = data[i+len(timeKey):]
		j := bytes.IndexByte(data, '"')
		if j < 0 {
			return
		}
		if !bytes.HasPrefix(data[j:], eventKey) {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, string(data[:j])); err == nil {
			fn(t)
		}
	}
}

// dialViewers connects n viewers to url, 64 at a time; measure of them,
// spread evenly, decode and measure.
func dialViewers(n, measure int, url string) ([]*viewer, error) {
	vs := make([]*viewer, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	measure = min(max(measure, 1), n)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			v := &viewer{measures: i%(n/measure) == 0 && i/(n/measure) < measure}
			conn, _, err := streamtest.Dial(context.Background(), url, &v.wire)
			if err != nil {
				errs <- fmt.Errorf("dialling viewer %d: %w", i, err)
				return
			}
			v.conn = conn
			vs[i] = v
			go v.read()
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return slices.DeleteFunc(vs, func(v *viewer) bool { return v == nil }), err
	}
	return vs, nil
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}
