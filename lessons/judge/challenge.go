// Package judge loads the challenges (markdown files with front matter in
// lessons/content/challenges) and judges their tasks live against a learner's
// namespace and the controller's trace of it. A task the learner does turns
// done by itself while they work; no Check button. A task that asks them to
// find or read something is an input task: they type what they found, and
// Submit judges it against the same namespace and trace (input.go). A
// judgement nothing in a cluster shows is a question (question.go).
//
// Checks and prepares are Go functions registered by name from init(), so a
// challenge file names them and the loader fails on a name nobody registered.
package judge

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
)

// Env is what a Check sees of one learner's lab.
type Env struct {
	Namespace string
	// Client reads the learner's namespace straight from the API server, so
	// a check never judges a stale cache.
	Client client.Reader
	// Trace is the namespace's recorded steps, oldest first, decoded from
	// the Recorder's export.
	Trace []controller.Step
	// Paused says the learner's namespace is paused.
	Paused bool
	// NotStarted says the learner has not pressed Start: no check runs,
	// since it would judge a namespace the challenge has not set up (and
	// say things about objects that do not exist yet).
	NotStarted bool
	// Tested is the learner's latest Test my code verdict since the
	// challenge's Start (controller/tester, run from the code page); nil:
	// none since.
	Tested *Tested
}

// Tested is a Test my code verdict on the learner's own reconciler.
type Tested struct {
	Passed    bool
	Schedules int
	// Findings are what it found, in words, each "pattern: message".
	Findings []string
}

// Result is a check's verdict. Detail says, in words, what is still missing;
// the page shows it under the task.
type Result struct {
	Done   bool
	Detail string
}

// Check judges one task against the learner's namespace and trace. An error
// means the check could not look (the API server did not answer), not that
// the task is undone.
type Check func(ctx context.Context, env Env) (Result, error)

// PrepareEnv is what a Prepare may use to set up a challenge's start in the
// learner's namespace: a writing client and the lab's pause and resume of
// that namespace.
type PrepareEnv struct {
	Namespace string
	Client    client.Client
	Pause     func(ctx context.Context) error
	Resume    func(ctx context.Context) error
	// Started, when set, is told once the wipe is done and before the
	// prepare runs: the moment the challenge's trace begins.
	Started func(at time.Time)
	// Said, when set, hears what the wipe did that the learner did not
	// ask for (a finalizer no controller here removes, taken off).
	Said func(msg string)
}

// Prepare builds a challenge's starting state. It runs after the learner's
// Databases have been wiped.
type Prepare func(ctx context.Context, env PrepareEnv) error

// registry holds the named checks, prepares and input kinds. They are
// registered from init() and only read afterwards; the lock keeps a late
// registration safe.
var registry = struct {
	sync.RWMutex
	checks   map[string]Check
	prepares map[string]Prepare
	inputs   map[string]Input
}{checks: map[string]Check{}, prepares: map[string]Prepare{}, inputs: map[string]Input{}}

// RegisterCheck makes c known by name to challenge files. It panics on a
// duplicate or empty name: two checks under one name is a programming error
// found at start.
func RegisterCheck(name string, c Check) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" || c == nil {
		panic("challenge: RegisterCheck needs a name and a check")
	}
	if _, dup := registry.checks[name]; dup {
		panic(fmt.Sprintf("challenge: check %q registered twice", name))
	}
	registry.checks[name] = c
}

// RegisterPrepare makes p known by name to challenge files. It panics on a
// duplicate or empty name.
func RegisterPrepare(name string, p Prepare) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" || p == nil {
		panic("challenge: RegisterPrepare needs a name and a prepare")
	}
	if _, dup := registry.prepares[name]; dup {
		panic(fmt.Sprintf("challenge: prepare %q registered twice", name))
	}
	registry.prepares[name] = p
}

// LookupCheck returns the check registered under name.
func LookupCheck(name string) (Check, bool) {
	registry.RLock()
	defer registry.RUnlock()
	c, ok := registry.checks[name]
	return c, ok
}

// LookupPrepare returns the prepare registered under name.
func LookupPrepare(name string) (Prepare, bool) {
	registry.RLock()
	defer registry.RUnlock()
	p, ok := registry.prepares[name]
	return p, ok
}
