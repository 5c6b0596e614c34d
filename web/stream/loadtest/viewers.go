package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// The viewers run in a child process, as browsers would run apart from
// oplab, so that oplab's CPU, memory and scheduling are its own. The parent
// drives the child with one JSON request a line on its stdin; the child
// answers each with one JSON line on its stdout.

// request is what the parent asks of the viewer process.
type request struct {
	Op   string `json:"op"` // "connect", "reset", "collect", "disconnect"
	N    int    `json:"n,omitempty"`
	URL  string `json:"url,omitempty"`
	Sent int64  `json:"sent,omitempty"` // collect: steps emitted since reset
}

// reply is the viewer process's answer.
type reply struct {
	Err      string        `json:"err,omitempty"`
	P50      time.Duration `json:"p50,omitempty"`
	P99      time.Duration `json:"p99,omitempty"`
	Max      time.Duration `json:"max,omitempty"`
	Received int64         `json:"received,omitempty"`
	Frames   int64         `json:"frames,omitempty"`
	Cores    float64       `json:"cores,omitempty"` // CPU the viewers used per second since reset
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
			more, err := dialViewers(req.N, req.URL)
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
			rep = collect(vs, req.Sent)
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
func collect(vs []*viewer, sent int64) reply {
	want := sent * int64(len(vs))
	settle := time.Now().Add(3 * time.Second)
	for time.Now().Before(settle) && received(vs) < want {
		time.Sleep(20 * time.Millisecond)
	}
	var rep reply
	var all []time.Duration
	for _, v := range vs {
		v.mu.Lock()
		all = append(all, v.latency...)
		rep.Received += v.received
		rep.Frames += v.frames
		v.mu.Unlock()
	}
	slices.Sort(all)
	rep.P50, rep.P99, rep.Max = percentile(all, 0.50), percentile(all, 0.99), percentile(all, 1)
	return rep
}

// viewer is one websocket client measuring the delay of each step.
type viewer struct {
	conn *websocket.Conn
	mu   sync.Mutex
	// Since the last reset:
	latency  []time.Duration
	received int64
	frames   int64
	measure  atomic.Bool
}

func (v *viewer) reset() {
	v.mu.Lock()
	v.latency, v.received, v.frames = v.latency[:0], 0, 0
	v.mu.Unlock()
	v.measure.Store(true)
}

func (v *viewer) read() {
	// One buffer per viewer, reused: viewers stand in for browsers, so
	// their own cost should disturb the measurement as little as it can.
	var buf bytes.Buffer
	for {
		_, r, err := v.conn.NextReader()
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		data := buf.Bytes()
		now := time.Now()
		if !v.measure.Load() {
			continue
		}
		v.mu.Lock()
		v.frames++
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

func received(vs []*viewer) int64 {
	var n int64
	for _, v := range vs {
		v.mu.Lock()
		n += v.received
		v.mu.Unlock()
	}
	return n
}

// dialViewers connects n viewers to url, 64 at a time.
func dialViewers(n int, url string) ([]*viewer, error) {
	vs := make([]*viewer, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 4096}
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			conn, _, err := dialer.Dial(url, nil)
			if err != nil {
				errs <- fmt.Errorf("dialling viewer %d: %w", i, err)
				return
			}
			vs[i] = &viewer{conn: conn}
			go vs[i].read()
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
