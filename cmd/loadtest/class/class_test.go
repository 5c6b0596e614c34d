package class

// The class of BenchmarkClass: learners, an instructor and followers, each
// a browser as oplab sees one (a cookie jar, page loads, form posts and a
// websocket), run in a child process so that their CPU is not oplab's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
)

// followPresenter says how followers reach the presenter's stream. With it,
// the instructor presses Present and each follower dials
// /ws?follow=presenter with its own learner's cookie, as a following
// learner's lab does (issue 11 §2). Without it, followers dial /ws with the
// instructor's own session cookie: the same namespace's stream, so the
// same fan-out cost, for as long as the follow endpoint does not exist.
const followPresenter = true

// classConfig is what the parent tells the child, as JSON in childEnv.
type classConfig struct {
	URL             string        `json:"url"`
	Learners        int           `json:"learners"`
	Followers       int           `json:"followers"`
	Rounds          int           `json:"rounds"`
	Deadline        time.Duration `json:"deadline"`
	InstructorToken string        `json:"instructorToken"`
	// Worst, when set, makes the class worst learners (worst_test.go):
	// no instructor, no followers, no rounds.
	Worst *worstConfig `json:"worst,omitempty"`
}

// classResult is what the child reports when the class is over.
type classResult struct {
	Learners         int `json:"learners"`
	Cycles           int `json:"cycles"`           // learners' Database cycles completed
	InstructorCycles int `json:"instructorCycles"` // the instructor's
	Errors           int `json:"errors"`
	// QuotaWaits counts creates the namespace's quota refused, although
	// the Databases before were gone, and were tried again; QuotaWaited is
	// the time that cost, summed over every learner and the instructor.
	QuotaWaits  int           `json:"quotaWaits"`
	QuotaWaited time.Duration `json:"quotaWaited"`
	FirstError  string        `json:"firstError,omitempty"`
	Active      time.Duration `json:"active"` // from go until the last learner finished
	ToReady     durations     `json:"toReady"`
	ToGone      durations     `json:"toGone"`
	// Followers' delays, from each message's time to its receipt: every
	// message; the controller's steps (stamped by its tracer as it took
	// the step); the state views the lab's watcher publishes (stamped by
	// the recorder as it was handed them).
	Delay      durations     `json:"delay"`
	StepDelay  durations     `json:"stepDelay"`
	StateDelay durations     `json:"stateDelay"`
	FollowMin  int           `json:"followMin"` // fewest messages one follower received
	FollowMax  int           `json:"followMax"`
	Instructor int           `json:"instructor"` // messages the instructor's own stream received
	CPU        time.Duration `json:"cpu"`        // this process's, from go to the end
}

// durations summarises samples (in JSON as nanoseconds).
type durations struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
}

func summarise(ds []time.Duration) durations {
	if len(ds) == 0 {
		return durations{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return durations{N: len(ds), P50: at(0.5), P99: at(0.99), Max: ds[len(ds)-1]}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// browser is one browser's view of oplab: its cookies and its stream.
type browser struct {
	base   string
	client *http.Client
	jar    http.CookieJar
}

func newBrowser(base string, transport http.RoundTripper) *browser {
	jar, _ := cookiejar.New(nil) // never fails without options
	return &browser{base: base, jar: jar, client: &http.Client{Jar: jar, Transport: transport, Timeout: 30 * time.Second}}
}

// get loads a page and discards it, as a browser renders it.
func (b *browser) get(ctx context.Context, path string) error {
	_, err := b.fetch(ctx, path, 0)
	return err
}

// fetch loads path and returns at most limit bytes of its body (none for
// limit 0): a page to read a link from, or a file the browser downloads.
func (b *browser) fetch(ctx context.Context, path string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return body, nil
}

// post sends a form as lab/forms.js does (same origin, asking for JSON).
func (b *browser) post(ctx context.Context, path string, form url.Values) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return &refusal{path: path, status: resp.Status, body: string(bytes.TrimSpace(body))}
	}
	return nil
}

// refusal is a form post oplab refused.
type refusal struct{ path, status, body string }

func (r *refusal) Error() string { return fmt.Sprintf("POST %s: %s: %s", r.path, r.status, r.body) }

// overQuota says whether err is the namespace's ResourceQuota refusing a
// create. The quota's usage falls only when kube-controller-manager's quota
// controller has counted a deletion, seconds after the Database is gone, so
// a learner who cycles quickly meets it with nothing left in the namespace.
func overQuota(err error) bool {
	var r *refusal
	return errors.As(err, &r) && strings.Contains(r.body, "exceeded quota")
}

// quotaRetry is how long a learner refused by the quota waits before
// clicking Create again.
const quotaRetry = 500 * time.Millisecond

// dial opens the browser's websocket at path (/ws, or /ws?follow=…) with
// its cookies and its page's Origin, offering compression as browsers do.
func (b *browser) dial(ctx context.Context, path string) (*websocket.Conn, error) {
	conn, _, err := b.dialStatus(ctx, path)
	return conn, err
}

// dialStatus is dial that also returns the HTTP status of a refused
// handshake (0 when no response came), so that a refusal can be counted.
func (b *browser) dialStatus(ctx context.Context, path string) (*websocket.Conn, int, error) {
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, EnableCompression: true, Jar: b.jar}
	h := http.Header{"Origin": []string{b.base}}
	conn, resp, err := d.DialContext(ctx, "ws"+strings.TrimPrefix(b.base, "http")+path, h)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		status, code := "", 0
		if resp != nil {
			status, code = " ("+resp.Status+")", resp.StatusCode
		}
		return nil, code, fmt.Errorf("dial %s%s: %w", path, status, err)
	}
	return conn, http.StatusSwitchingProtocols, nil
}

// dbEvent is what a learner's loop waits for on its stream: a Database
// shown Ready, or gone.
type dbEvent struct {
	name  string
	ready bool
	gone  bool
}

// dbView is the part of a Database's state view a learner reads.
type dbView struct {
	Conditions []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"conditions"`
}

// watchDatabases reads conn until it closes, sending what its Databases'
// state messages show: the card a browser would draw.
func watchDatabases(ctx context.Context, conn *websocket.Conn, events chan<- dbEvent, count *int) {
	defer close(events)
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var batch []trace.Message
		if err := json.Unmarshal(data, &batch); err != nil {
			return
		}
		for _, m := range batch {
			*count++
			e, ok := databaseEvent(m)
			if !ok {
				continue
			}
			select {
			case events <- e:
			case <-ctx.Done():
				return
			}
		}
	}
}

// databaseEvent reads a stream message as a learner's screen shows it: a
// Database's state with Ready True, or its state removed.
func databaseEvent(m trace.Message) (dbEvent, bool) {
	if m.Type != trace.TypeState || m.Object.Kind != "Database" {
		return dbEvent{}, false
	}
	if len(m.State) == 0 || string(m.State) == "null" {
		return dbEvent{name: m.Object.Name, gone: true}, true
	}
	var v dbView
	if err := json.Unmarshal(m.State, &v); err != nil {
		return dbEvent{}, false
	}
	for _, c := range v.Conditions {
		if c.Type == controller.ConditionReady && c.Status == "True" {
			return dbEvent{name: m.Object.Name, ready: true}, true
		}
	}
	return dbEvent{}, false
}

// actor is a session that creates and deletes Databases in its namespace,
// watching its own stream: a learner, or the instructor.
type actor struct {
	b      *browser
	conn   *websocket.Conn
	events chan dbEvent
	seen   int // messages received; owned by the reader until conn closes
	done   chan struct{}
	// quotaWaits counts creates refused by the quota and tried again, and
	// quotaWaited the time they cost; owned by the actor's loop.
	quotaWaits  int
	quotaWaited time.Duration
}

func startActor(ctx context.Context, b *browser) (*actor, error) {
	conn, err := b.dial(ctx, "/ws")
	if err != nil {
		return nil, err
	}
	a := &actor{b: b, conn: conn, events: make(chan dbEvent, 64), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		watchDatabases(ctx, conn, a.events, &a.seen)
	}()
	return a, nil
}

// close closes the stream and returns how many messages it received.
func (a *actor) close() int {
	_ = a.conn.Close()
	<-a.done
	return a.seen
}

// cycle creates Database name, waits until the stream shows it Ready,
// deletes it and waits until the stream shows it gone.
func (a *actor) cycle(ctx context.Context, name string) (toReady, toGone time.Duration, err error) {
	t0 := time.Now()
	if err := a.create(ctx, name); err != nil {
		return 0, 0, err
	}
	if err := a.await(ctx, name, func(e dbEvent) bool { return e.ready }); err != nil {
		return 0, 0, fmt.Errorf("%s Ready: %w", name, err)
	}
	t1 := time.Now()
	if err := a.b.post(ctx, "/lab/databases/"+name+"/delete", nil); err != nil {
		return 0, 0, err
	}
	if err := a.await(ctx, name, func(e dbEvent) bool { return e.gone }); err != nil {
		return 0, 0, fmt.Errorf("%s gone: %w", name, err)
	}
	return t1.Sub(t0), time.Since(t1), nil
}

// create creates Database name, trying again while the quota refuses it.
func (a *actor) create(ctx context.Context, name string) error {
	form := url.Values{"name": {name}, "engine": {"postgres"}, "replicas": {"1"}}
	for {
		err := a.b.post(ctx, "/lab/databases", form)
		if !overQuota(err) {
			return err
		}
		a.quotaWaits++
		a.quotaWaited += quotaRetry
		select {
		case <-time.After(quotaRetry):
		case <-ctx.Done():
			return fmt.Errorf("%w (the quota refused it until then)", ctx.Err())
		}
	}
}

func (a *actor) await(ctx context.Context, name string, want func(dbEvent) bool) error {
	for {
		select {
		case e, ok := <-a.events:
			if !ok {
				return errors.New("the stream closed")
			}
			if e.name == name && want(e) {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// follower reads the presenter's stream, noting each message's delay.
type follower struct {
	conn *websocket.Conn
	// from is when the measure began (Unix ns), shared by the class's
	// followers: messages stamped earlier, such as the history sent on
	// connecting, are not counted.
	from        *atomic.Int64
	delays      []time.Duration
	stepDelays  []time.Duration
	stateDelays []time.Duration
	done        chan struct{}
}

func startFollower(ctx context.Context, b *browser, path string, from *atomic.Int64) (*follower, error) {
	conn, err := b.dial(ctx, path)
	if err != nil {
		return nil, err
	}
	f := &follower{conn: conn, from: from, done: make(chan struct{})}
	go f.read()
	return f, nil
}

// read owns the delays until done is closed.
func (f *follower) read() {
	defer close(f.done)
	for {
		_, data, err := f.conn.ReadMessage()
		if err != nil {
			return
		}
		now := time.Now()
		var batch []trace.Message
		if err := json.Unmarshal(data, &batch); err != nil {
			return
		}
		for _, m := range batch {
			if m.Type == trace.TypeReset || m.Type == trace.TypeDropped || m.Time.UnixNano() < f.from.Load() {
				continue
			}
			d := now.Sub(m.Time)
			f.delays = append(f.delays, d)
			if m.Type == trace.TypeState {
				f.stateDelays = append(f.stateDelays, d)
			} else {
				f.stepDelays = append(f.stepDelays, d)
			}
		}
	}
}

func (f *follower) close() {
	_ = f.conn.Close()
	<-f.done
}

// class is the child's whole class.
type class struct {
	cfg        classConfig
	learners   []*actor
	instructor *actor
	followers  []*follower
	// from is when followers begin counting: never, until go.
	from atomic.Int64
}

// joinClass starts every session (GET /lab, as a browser's first visit
// does), opens the learners' and the instructor's streams, presents and
// connects the followers.
func joinClass(ctx context.Context, cfg classConfig) (*class, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	c := &class{cfg: cfg}
	c.from.Store(math.MaxInt64)
	browsers := make([]*browser, cfg.Learners)
	for i := range browsers {
		browsers[i] = newBrowser(cfg.URL, transport)
	}
	inst := newBrowser(cfg.URL, transport)
	if err := parallel(8, append([]*browser{inst}, browsers...), func(b *browser) error { return b.get(ctx, "/lab") }); err != nil {
		return nil, fmt.Errorf("start a session: %w", err)
	}
	var err error
	if c.instructor, err = startActor(ctx, inst); err != nil {
		return nil, err
	}
	for _, b := range browsers {
		a, err := startActor(ctx, b)
		if err != nil {
			c.close()
			return nil, err
		}
		c.learners = append(c.learners, a)
	}
	if followPresenter {
		if err := present(ctx, inst, cfg.InstructorToken); err != nil {
			c.close()
			return nil, err
		}
	}
	for i := range cfg.Followers {
		b, path := inst, "/ws"
		if followPresenter {
			b, path = browsers[i%len(browsers)], "/ws?follow=presenter"
		}
		f, err := startFollower(ctx, b, path, &c.from)
		if err != nil {
			c.close()
			return nil, err
		}
		c.followers = append(c.followers, f)
	}
	return c, nil
}

// present signs the instructor's browser in with the token and presses
// Present on /instructor, which presents that browser's own lab.
func present(ctx context.Context, inst *browser, token string) error {
	if err := inst.get(ctx, "/instructor?token="+url.QueryEscape(token)); err != nil {
		return fmt.Errorf("sign in as the instructor: %w", err)
	}
	return inst.post(ctx, "/instructor/present", url.Values{"name": {"Instructor"}})
}

// parallel runs do for each item, n at a time, and returns the first error.
func parallel[T any](n int, items []T, do func(T) error) error {
	next := make(chan T)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for it := range next {
				if err := do(it); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, it := range items {
		select {
		case next <- it:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// run is the class proper: every learner runs cfg.Rounds cycles, the
// instructor cycles until they are done, then the followers are given a
// moment to receive the last messages.
func (c *class) run(ctx context.Context) classResult {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Deadline)
	defer cancel()
	began, cpu0 := time.Now(), cpuTime()
	c.from.Store(began.UnixNano())
	var mu sync.Mutex
	var res classResult
	var toReady, toGone []time.Duration
	note := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	instCtx, stopInstructor := context.WithCancel(ctx)
	instDone := make(chan struct{})
	go func() {
		defer close(instDone)
		for i := 0; instCtx.Err() == nil; i++ {
			if _, _, err := c.instructor.cycle(instCtx, fmt.Sprintf("demo-%d", i)); err != nil {
				if instCtx.Err() == nil {
					note(fmt.Errorf("instructor: %w", err))
				}
				return
			}
			mu.Lock()
			res.InstructorCycles++
			mu.Unlock()
		}
	}()
	var wg sync.WaitGroup
	for li, a := range c.learners {
		wg.Go(func() {
			for r := range c.cfg.Rounds {
				ready, gone, err := a.cycle(ctx, fmt.Sprintf("db-%d", r))
				if err != nil {
					note(fmt.Errorf("learner %d: %w", li, err))
					return
				}
				mu.Lock()
				res.Cycles++
				toReady, toGone = append(toReady, ready), append(toGone, gone)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Active = time.Since(began)
	stopInstructor()
	<-instDone
	time.Sleep(2 * time.Second) // the followers' last frames
	res.CPU = cpuTime() - cpu0
	res.Learners = len(c.learners)
	res.ToReady, res.ToGone = summarise(toReady), summarise(toGone)
	for _, a := range append([]*actor{c.instructor}, c.learners...) {
		res.QuotaWaits += a.quotaWaits
		res.QuotaWaited += a.quotaWaited
	}
	followers := c.followers
	res.Instructor = c.close()
	var all, steps, states []time.Duration
	res.FollowMin = -1
	for _, f := range followers {
		all, steps, states = append(all, f.delays...), append(steps, f.stepDelays...), append(states, f.stateDelays...)
		if n := len(f.delays); res.FollowMin < 0 || n < res.FollowMin {
			res.FollowMin = n
		}
		res.FollowMax = max(res.FollowMax, len(f.delays))
	}
	res.Delay, res.StepDelay, res.StateDelay = summarise(all), summarise(steps), summarise(states)
	return res
}

// close closes every stream and returns the instructor's message count.
func (c *class) close() int {
	for _, f := range c.followers {
		f.close()
	}
	for _, a := range c.learners {
		a.close()
	}
	c.followers, c.learners = nil, nil
	if c.instructor == nil {
		return 0
	}
	n := c.instructor.close()
	c.instructor = nil
	return n
}

// Environment and protocol of the class's child process.
const (
	childEnv    = "OPLAB_BENCH_CLASS"
	childPrefix = "CLASS "
)

// TestClassChild is not a test: it is BenchmarkClass's class process, and
// skips unless started by it. It joins the class, says "connected", runs
// the class when stdin says "go", and says "done" with the result as JSON.
func TestClassChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("only runs as BenchmarkClass's class process")
	}
	var cfg classConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("%s: %v", childEnv, err)
	}
	say := func(format string, args ...any) { fmt.Printf(childPrefix+format+"\n", args...) }
	ctx, cancel := context.WithTimeout(t.Context(), cfg.Deadline+2*time.Minute)
	defer cancel()
	in := bufio.NewScanner(os.Stdin)
	if cfg.Worst != nil {
		runWorstChild(ctx, cfg, say, func() (string, bool) { ok := in.Scan(); return in.Text(), ok })
		return
	}
	c, err := joinClass(ctx, cfg)
	if err != nil {
		say("error %v", err)
		return
	}
	say("connected")
	if !in.Scan() || in.Text() != "go" {
		c.close()
		say("error want go on stdin, got %q", in.Text())
		return
	}
	res := c.run(ctx)
	out, err := json.Marshal(res)
	if err != nil {
		say("error %v", err)
		return
	}
	say("done %s", out)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
