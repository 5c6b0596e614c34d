// Package web is oplab's HTTP server: the lab, the course pages, the trace
// stream and the static assets, all served from this process. The browser
// talks only to this server; it never reaches the Kubernetes API server.
package web

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/challenges"
	"github.com/oplab-dev/oplab/web/classroom"
	"github.com/oplab-dev/oplab/web/code"
	"github.com/oplab-dev/oplab/web/demo"
	"github.com/oplab-dev/oplab/web/instructor"
	"github.com/oplab-dev/oplab/web/join"
	"github.com/oplab-dev/oplab/web/kubeconfig"
	"github.com/oplab-dev/oplab/web/kubectl"
	"github.com/oplab-dev/oplab/web/lab"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
	"github.com/oplab-dev/oplab/web/static"
)

// Controller is what the server needs of controller.Runner: the whole
// controller's switch, for the instructor, and the per-namespace pause, for
// each learner's Stop and Start.
type Controller interface {
	instructor.Switch
	lab.Controller
}

// Sessions is what the pages need of the session table (session.Manager):
// the lab's session, namespace and flash message (which the challenges,
// code page and instructor page use too), the kubeconfig download's
// access, the roster's list, a session started from the join form
// (web/join), and the table's own route (the progress reports).
type Sessions interface {
	lab.Sessions
	join.Sessions
	kubeconfig.Sessions
	instructor.Learners
	instructor.LabSessions
	progress.Sessions
	// What the server saw of each learner's work: the challenges' checks
	// and grading, the quiz's grading and the flashcards' reviews.
	challenges.Records
	learn.Recorder
	instructor.Hands
	instructor.EndedSessions
	join.Standing
}

// States is what the lab page and the roster read of the lab's state
// watcher (dbview.Watcher): each namespace's Databases as view models.
type States interface {
	lab.States
}

// Recorder is what the pages need of the trace recorder (trace.Recorder):
// a timeline's export and history, a step emitted (a demo's narration, a
// challenge's start), and the classroom's global state published.
type Recorder interface {
	controller.Sink
	lab.Exporter
	lab.History
	classroom.Publisher
}

// Streams hands out the websocket stream of a namespace's timeline
// (stream.Hub), the namespace named by namespaceOf.
type Streams interface {
	Handler(namespaceOf func(*http.Request) (string, error)) http.Handler
}

// DefaultMaxDatabases is each learner's cap on Databases when
// Options.MaxDatabasesPerNamespace is not set.
const DefaultMaxDatabases = 5

// Options configures the server: the parts it is built on, ready and
// running (cmd/oplab/app assembles them on the API server; a test may give
// fakes), and its settings.
type Options struct {
	// Client reads and writes the learners' namespaces straight on the API
	// server: the lab's actions, the demos, the roster's deletes and the
	// challenges' checks.
	Client client.Client
	// Sessions is the session table: browser → lab namespace.
	Sessions Sessions
	// States are the lab's view models of each namespace's Databases.
	States States
	// Kubeconfigs mints a learner's own kubeconfig (labns.Issuer).
	Kubeconfigs kubeconfig.Minter
	// Recorder is the trace recorder the controller emits to.
	Recorder Recorder
	// Hub streams the Recorder to the browsers on /ws.
	Hub Streams
	// Controller is paused per namespace from the lab page, and stopped and
	// started for everyone from the instructor page.
	Controller Controller
	// InstructorToken guards /instructor; empty turns that page off.
	InstructorToken string
	// JoinCode is the code learners join with (session.Options.JoinCode),
	// which the roster shows; empty: none.
	JoinCode string
	// DemoDwell, when set, is the pause between a demo's steps; zero: each
	// step's narration sets it, at a speaking pace (demo.SpeakingDwell).
	DemoDwell time.Duration
	// ResetWait bounds how long the roster's reset of a learner's
	// namespace waits for its Databases to go; zero: instructor.Roster's
	// minute.
	ResetWait time.Duration
	// Content is the course (learn.LoadContent), loaded once by the caller
	// and shared by the course pages, the challenges and the roster.
	Content *learn.Content
	// Demos are the scripted demos the instructor may play (demo.Load).
	Demos []demo.Script
	// Broadcaster is how the instructor's roster sends every learner to a
	// scenario or lesson; nil means the server's own classroom (tests put
	// a recorder here).
	Broadcaster instructor.Broadcaster
	// KubectlLine is the kubectl command the lab page offers to paste; the
	// page adds the learner's "-n NAMESPACE". Empty: none is shown.
	KubectlLine string
	// Ready is an extra readiness check for /readyz (API reachable, CRD
	// established, controller running); nil means none.
	Ready func(ctx context.Context) error
	// MaxDatabasesPerNamespace caps each learner's Databases; default
	// DefaultMaxDatabases.
	MaxDatabasesPerNamespace int
	// TrustedProxies are the proxies (an Ingress, a load balancer) whose
	// X-Forwarded-For is believed: a request from one of them is counted,
	// for the per-client stream cap and the instructor token throttle,
	// against the right-most address in that header no trusted proxy wrote
	// (session.ClientAddress). Empty: the peer's address.
	TrustedProxies []netip.Prefix
	// AllowedHosts are the host names (without port) the server answers to
	// besides IP literals and localhost; see checkHost.
	AllowedHosts []string
	// Kubectl runs the lab terminal's kubectl commands, each as the
	// learner's own ServiceAccount (web/kubectl); nil: no terminal.
	Kubectl *kubectl.Runner
	// LearnerCode hands a learner's namespace to their own reconciler
	// (the /code page); nil: no /code page.
	LearnerCode code.Controller
	// MaxCodeRuns caps the learners whose code runs at once; zero means
	// code.Options' default.
	MaxCodeRuns int
	// CodeTests configures Test my code on /code; without a Config, none.
	CodeTests code.TestOptions
	// PublicURL is where learners reach oplab (scheme and host), for the
	// join link and its QR code; empty: the address the instructor's
	// browser used.
	PublicURL string
	// KeepEnded is how long an ended session is kept, as the learner's
	// page says it (session.Options.KeepFor); zero: its default.
	KeepEnded time.Duration
	// CodeVerdicts gives each learner's latest reconciler test verdict for
	// the roster and the class export (the code tester); nil: none.
	CodeVerdicts instructor.CodeVerdicts
	// Now is the clock of the costly requests' limits (costly.go); nil:
	// time.Now.
	Now    func() time.Time
	Logger logr.Logger
}

// Server is oplab's HTTP server: every route, on the parts it was given.
type Server struct {
	opts    Options
	handler http.Handler

	// classroom is who presents and what followers see (web/classroom).
	classroom *classroom.Classroom
	// presence counts each learner's open pages, following or not, for
	// the roster.
	presence classroom.Presence
	// codes is the code page, set once its route is mounted.
	codes atomic.Pointer[code.Handler]
}

// Ended drops what the server keeps of an ended session: the learner's
// own code and the child process running it. The session table calls it
// (session.Options.OnExpire) once the server exists.
func (s *Server) Ended(ns string) {
	if codes := s.codes.Load(); codes != nil {
		codes.Forget(ns)
	}
	if s.opts.Kubectl != nil {
		s.opts.Kubectl.Forget(ns)
	}
}

// PagesOpen reports whether the learner of ns has an oplab page open (a
// live stream): their time on task counts it.
func (s *Server) PagesOpen(ns string) bool {
	open, _ := s.presence.Of(ns)
	return open > 0
}

// CodeOf is the learner's own code the code page keeps for ns (its text,
// what last ran, whether it runs); nil when there is none, or no code
// page. The end-to-end tests read it to know the server has a run before
// they look at the page.
func (s *Server) CodeOf(ns string) *trace.Code {
	if codes := s.codes.Load(); codes != nil {
		return codes.CodeOf(ns)
	}
	return nil
}

// scenarioCheckEvery bounds how often a learner's claim that they saw a
// scenario through makes the server read their timeline: a report is
// cheap to send, an export is not.
const scenarioCheckEvery = 5 * time.Second

// verifyScenarios checks, on the reporter's own recorded timeline, each
// scenario their report claims seen through that the server knows they
// set up and has not found done yet, and records those whose point it
// finds (lab.Scenario.SeenIn). A claim alone is kept as self-reported.
func (s *Server) verifyScenarios(r *http.Request, p progress.Progress) {
	ns, err := s.opts.Sessions.NamespaceOf(r)
	if err != nil || len(p.Scenarios) == 0 {
		return
	}
	now := time.Now()
	type claim struct {
		sc    lab.Scenario
		since time.Time
	}
	var todo []claim
	s.opts.Sessions.Record(r.Context(), ns, func(rec *progress.Record) bool {
		for _, name := range p.Scenarios {
			sr := rec.Scenarios[name]
			sc, ok := lab.FindScenario(name)
			if !ok || sr == nil || sr.Done != 0 || now.Sub(time.UnixMilli(sr.Checked)) < scenarioCheckEvery {
				continue
			}
			sr.Checked = now.UnixMilli()
			todo = append(todo, claim{sc, time.UnixMilli(sr.Started)})
		}
		return false
	})
	if len(todo) == 0 {
		return
	}
	messages := s.opts.Recorder.Export(ns).Messages
	for _, c := range todo {
		if c.sc.SeenIn(messages, c.since) {
			s.opts.Sessions.Record(r.Context(), ns, func(rec *progress.Record) bool { return rec.ScenarioDone(c.sc.Name, now.UnixMilli()) })
		}
	}
}

// records is where the challenges' checks record what they found.
func (s *Server) records() challenges.Records { return s.opts.Sessions }

// known is what a learner's progress report may name: the lab's
// scenarios, the course's challenges with their tasks, and its quiz.
func known(c *learn.Content) progress.Known {
	return progress.Known{
		Scenario: func(name string) bool { _, ok := lab.FindScenario(name); return ok },
		ChallengeTasks: func(id string) (int, bool) {
			if ch, ok := c.Challenges.Get(id); ok {
				return len(ch.Tasks), true
			}
			return 0, false
		},
		QuizSize: len(c.Quiz.Questions),
	}
}

// New builds the server on ready parts: the classroom, the demo player
// (both ending with ctx) and the handlers of every page. It starts nothing
// that talks to the API server but through opts.Client.
func New(ctx context.Context, opts Options) (*Server, error) {
	if err := check(opts); err != nil {
		return nil, err
	}
	if opts.MaxDatabasesPerNamespace == 0 {
		opts.MaxDatabasesPerNamespace = DefaultMaxDatabases
	}
	s := &Server{opts: opts}
	var err error
	if s.handler, err = s.routes(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func check(opts Options) error {
	switch {
	case opts.Client == nil:
		return errors.New("web options: Client is required")
	case opts.Sessions == nil:
		return errors.New("web options: Sessions is required")
	case opts.States == nil:
		return errors.New("web options: States is required")
	case opts.Kubeconfigs == nil:
		return errors.New("web options: Kubeconfigs is required")
	case opts.Recorder == nil:
		return errors.New("web options: Recorder is required")
	case opts.Hub == nil:
		return errors.New("web options: Hub is required")
	case opts.Controller == nil:
		return errors.New("web options: Controller is required")
	case opts.Content == nil:
		return errors.New("web options: Content is required")
	case opts.MaxDatabasesPerNamespace < 0:
		return fmt.Errorf("web options: MaxDatabasesPerNamespace %d is negative", opts.MaxDatabasesPerNamespace)
	}
	return nil
}

func (s *Server) routes(ctx context.Context) (http.Handler, error) {
	direct, sessions := s.opts.Client, s.opts.Sessions
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", StaticFiles()))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /starting", Ready)
	// The classroom: /ws?follow=presenter streams the presenter's namespace.
	s.classroom = classroom.New(s.opts.Recorder, classroom.Options{})
	context.AfterFunc(ctx, s.classroom.Close)
	mux.Handle("GET /ws", limitStreams(MaxStreamsPerSession, s.streamOwner,
		trackStreams(&s.presence, sessions.NamespaceOf, s.classroom.Streams(s.opts.Hub.Handler, sessions.NamespaceOf))))
	labOpts := lab.Options{
		Store: lab.KubeStore{Client: direct}, Sessions: sessions, States: s.opts.States,
		Controller: s.opts.Controller, Exporter: s.opts.Recorder, History: s.opts.Recorder, KubectlLine: s.opts.KubectlLine,
		KubeconfigPath: kubeconfig.Path, KubectlCommand: kubeconfig.Command,
		MaxDatabases: s.opts.MaxDatabasesPerNamespace, Classroom: s.classroom, ClientOf: session.ClientAddress(s.opts.TrustedProxies),
		Terminal: s.opts.Kubectl != nil, Records: sessions, Logger: s.opts.Logger.WithName("lab"),
	}
	if s.opts.Kubectl != nil {
		kubectl.Handler{Runner: s.opts.Kubectl, Sessions: sessions, Logger: s.opts.Logger.WithName("kubectl")}.Register(mux)
	}
	// The code page comes first: the lab's export carries its code.
	if s.opts.LearnerCode != nil {
		codes := code.New(code.Options{Controller: s.opts.LearnerCode, Sessions: sessions, MaxRunning: s.opts.MaxCodeRuns, Tests: s.opts.CodeTests, Challenges: s.opts.Content.Challenges, Logger: s.opts.Logger.WithName("code")})
		codes.Register(mux)
		s.codes.Store(codes)
		labOpts.Code = codes
	}
	labs := lab.New(labOpts)
	labs.Register(mux)
	progress.Handler{Sessions: sessions, Known: known(s.opts.Content), Reported: s.verifyScenarios}.Register(mux)
	joins := join.Handler{Sessions: sessions, KeepFor: s.opts.KeepEnded, Logger: s.opts.Logger.WithName("join")}
	joins.Register(mux)
	joins.RegisterStanding(mux, sessions)
	kubeconfig.Handler{Sessions: sessions, Minter: s.opts.Kubeconfigs, Logger: s.opts.Logger.WithName("kubeconfig")}.Register(mux)
	// The scripted demos play in the instructor's own lab namespace and
	// narrate on its timeline and, through the classroom, to the room.
	scripts := s.opts.Demos
	demos := demo.New(demo.Options{Client: direct, Controller: s.opts.Controller, Sink: s.opts.Recorder, Timeline: s.opts.Recorder, Narrator: s.classroom, Scripts: scripts, Dwell: s.opts.DemoDwell, Logger: s.opts.Logger.WithName("demo")})
	go demos.Run(ctx)
	// The looks' streams, capped per owner as /ws is: one limiter for all
	// of them. The route names the namespace, which the instructor
	// handler has checked is a learner's.
	lookStreams := limitStreams(MaxStreamsPerSession, s.streamOwner, s.opts.Hub.Handler(func(r *http.Request) (string, error) {
		return r.PathValue("namespace"), nil
	}))
	instructor.New(ctx, instructor.Options{
		Token: s.opts.InstructorToken, Controller: s.opts.Controller, Logger: s.opts.Logger.WithName("instructor"),
		Throttle: session.NewThrottle(instructor.TokenGuesses, instructor.TokenGuessEvery, nil), ClientOf: session.ClientAddress(s.opts.TrustedProxies),
		Demo: instructor.Demo{Player: demos, Labs: sessions},
		Roster: instructor.Roster{Learners: sessions, States: s.opts.States, Pauses: s.opts.Controller, Deleter: direct,
			Broadcaster: cmp.Or[instructor.Broadcaster](s.opts.Broadcaster, s.classroom), JoinCode: s.opts.JoinCode,
			Presence: &s.presence, Self: sessions.NamespaceOf, Presenting: s.classroom.Presenting, ResetWait: s.opts.ResetWait,
			Content: s.opts.Content, Code: cmp.Or[instructor.CodeVerdicts](s.opts.CodeVerdicts, s.testVerdicts()), Hands: sessions, Ended: sessions},
		Present: instructor.Presenting{Classroom: s.classroom, Sessions: sessions},
		Timer:   s.classroom,
		Class:   s.classroom,
		Join:    instructor.Join{PublicURL: s.opts.PublicURL, Code: s.opts.JoinCode},
		// Looking over a learner's shoulder: their lab read-only, and its
		// stream, behind the instructor's cookie.
		Look: instructor.Look{Page: labs.LookPage, Stream: func(string) http.Handler { return lookStreams }},
	}).Register(mux)
	learn.RegisterWith(mux, s.opts.Content, sessions)
	s.registerChallenges(ctx, mux)
	return SecurityHeaders(bodyDeadline(checkHost(s.opts.AllowedHosts, protect(s.limitCostly(mux))))), nil
}

// bodyTimeout bounds reading a request's body. Forms and reports are a
// few KiB; the replay upload sets its own deadline, extended as the file
// arrives (lab.replay).
var bodyTimeout = 30 * time.Second // a variable for tests

// bodyDeadline gives every request but a websocket upgrade a read
// deadline, so a client sending its body a byte at a time cannot hold a
// handler for ever. (http.Server's ReadTimeout would do it too, but it
// would also stay on the connection a websocket takes over.)
func bodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
		}
		h.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy is sent with every response. Scripts and styles
// come only from oplab's own files (no inline script, no style attribute, no
// eval), so text from a cluster object or an uploaded file that reached a
// page as markup still could not run; connections go only back to oplab
// (its /ws included); no other site may frame a page (clickjacking the
// instructor's Stop).
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// SecurityHeaders sets the headers every response carries: the
// Content-Security-Policy, nosniff (a file is only what its Content-Type
// says, so an export is never run as a script), and no Referer to other
// sites.
func SecurityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

// checkHost refuses requests whose Host header names a host oplab was not
// told about. Without it, a site whose DNS name is re-pointed at 127.0.0.1
// (DNS rebinding) would be same-origin with the lab and could drive it.
// IP literals and localhost are always accepted.
func checkHost(allowed []string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") || slices.ContainsFunc(allowed, func(a string) bool {
			return strings.EqualFold(a, host)
		}) {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("host %q is not served here (start oplab with --allowed-hosts %s to allow it)", host, host), http.StatusMisdirectedRequest)
	})
}

// protect rejects cross-origin state-changing requests: a page on another
// site must not be able to make a learner's browser delete their Databases
// or stop the controller.
func protect(h http.Handler) http.Handler {
	return http.NewCrossOriginProtection().Handler(h)
}

// StaticFiles serves the embedded assets. They change only with the binary,
// but a short cache lifetime keeps a development rebuild visible.
func StaticFiles() http.Handler {
	files := http.FileServerFS(static.FS)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := fs.Stat(static.FS, strings.TrimPrefix(r.URL.Path, "/")); err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=60")
		files.ServeHTTP(w, r)
	})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok"))
}

// Classroom is the presenter state every viewer shares: the scripted demo
// narrates through it, the roster sends everyone somewhere with it.
func (s *Server) Classroom() *classroom.Classroom { return s.classroom }

// Handler returns every route: /static/, /healthz, /readyz, /ws, /lab... and
// the course pages.
func (s *Server) Handler() http.Handler { return s.handler }

// MaxStreamsPerSession is how many /ws connections one session (or one
// address without a session) may hold: a learner's lab in a few tabs, with
// room to spare. Each costs a buffer of frames in oplab; 300 on one cookie
// was seen (issue 19 c).
const MaxStreamsPerSession = 8

// streamOwner is whom a /ws connection counts against: the caller's own
// session (a follower's, not the presenter's it streams), else its address.
func (s *Server) streamOwner(r *http.Request) string {
	if ns, err := s.opts.Sessions.NamespaceOf(r); err == nil {
		return "ns:" + ns
	}
	return "addr:" + session.ClientAddress(s.opts.TrustedProxies)(r)
}

// limitStreams refuses (429) a websocket beyond max per owner. A stream
// outlives its handler (the hub keeps the connection), so the count is
// given back when the hijacked connection closes, not when the handler
// returns.
func limitStreams(max int, ownerOf func(*http.Request) string, next http.Handler) http.Handler {
	var mu sync.Mutex
	open := map[string]int{}
	release := func(owner string) {
		mu.Lock()
		defer mu.Unlock()
		if open[owner]--; open[owner] <= 0 {
			delete(open, owner)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := ownerOf(r)
		mu.Lock()
		full := open[owner] >= max
		if !full {
			open[owner]++
		}
		mu.Unlock()
		if full {
			w.Header().Set("Retry-After", "10")
			http.Error(w, fmt.Sprintf("too many live timelines open for this session (%d): close some lab tabs", max), http.StatusTooManyRequests)
			return
		}
		cw := &countedWriter{ResponseWriter: w, release: sync.OnceFunc(func() { release(owner) })}
		next.ServeHTTP(cw, r)
		if !cw.hijacked.Load() {
			cw.release() // refused before the upgrade: nothing stays open
		}
	})
}

// countedWriter hands out its connection wrapped, so that closing it gives
// the stream's place back.
type countedWriter struct {
	http.ResponseWriter
	release  func()
	hijacked atomic.Bool
}

func (c *countedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(c.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	c.hijacked.Store(true)
	return &countedConn{Conn: conn, release: c.release}, rw, nil
}

func (c *countedWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// trackStreams counts each open stream in presence against the caller's
// own namespace, as following when it streams the presenter's, until its
// connection closes: the roster says from it who follows and who is away.
func trackStreams(presence *classroom.Presence, namespaceOf func(*http.Request) (string, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceOf(r)
		if err != nil {
			next.ServeHTTP(w, r) // refused by the stream itself: nothing to count
			return
		}
		cw := &countedWriter{ResponseWriter: w, release: presence.Open(ns, r.URL.Query().Has("follow"))}
		next.ServeHTTP(cw, r)
		if !cw.hijacked.Load() {
			cw.release()
		}
	})
}

type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// testVerdicts is each learner's latest Test my code verdict, for the
// roster and the class export; nil when the code page tests nothing.
func (s *Server) testVerdicts() instructor.CodeVerdicts {
	if c := s.codes.Load(); c != nil && c.Testing() {
		return codeVerdicts{c}
	}
	return nil
}

// codeVerdicts is the code page's verdicts in the roster's words.
type codeVerdicts struct{ c *code.Handler }

func (v codeVerdicts) VerdictOf(ns string) (instructor.Verdict, bool) {
	r, ok := v.c.VerdictOf(ns)
	if !ok {
		return instructor.Verdict{}, false
	}
	return instructor.Verdict{Passed: r.Passed, Patterns: r.Patterns, Schedules: r.Schedules, At: r.At}, true
}
