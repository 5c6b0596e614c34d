// Package tester tests a learner's reconciler the way the field's testers
// test real operators: Sieve (OSDI '22) by crashing the controller between
// two writes, feeding it stale views and hiding states from it; Acto (SOSP
// '23) by misoperations, children deleted or edited by hand, a Database
// deleted half made; Kamera by driving controller-runtime reconcilers
// itself, schedule by schedule. Their ideas, oplab's parts: the learner's
// code runs in its sandbox, through the same facade and learner-code
// identity as on the lab, on the real API server, each schedule in a
// scratch namespace of its own, driven by a controller.Driver so that the
// tester, not a watch, chooses when each reconcile runs; the faults go in
// at the one client every call of the code passes (faults.go).
//
// First the ordinary life: create, scale up and down, a spec change,
// delete, each to convergence. Its end states are the oracle: every
// perturbed schedule must reach them too (oracle.go), and every schedule
// is held to budgets (nothing written at rest, no loop of errors, a
// bounded number of reconciles). The schedules are listed from the
// ordinary life's own record, so the same code gets the same schedules
// and, the oracle reading end states rather than timings, the same
// findings.
package tester

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
)

// The patterns a finding names: Sieve's three, Acto's misoperations, and
// the budgets and convergence every schedule is held to.
const (
	PatternIntermediate = "intermediate-state"
	PatternStale        = "stale-state"
	PatternUnobserved   = "unobserved-state"
	PatternConflict     = "conflict"
	PatternMisoperation = "misoperation"
	PatternBudget       = "budget"
	PatternConvergence  = "convergence"
)

// Finding is one way the learner's code went wrong, in a learner's words.
type Finding struct {
	Pattern string `json:"pattern"`
	// Perturbation is what the tester did: "crash right after write 3 of
	// the create (create StatefulSet db)".
	Perturbation string `json:"perturbation"`
	// Step is the step of the schedule's trace where it went wrong: the
	// fault, or the check that failed when the fault left no mark. It is
	// this run's trace: the reconciles that watch events add (a garbage
	// collector's deletes fall as they fall) can move it from run to run,
	// while the rest of the finding stays.
	Step int `json:"step"`
	// Message is what is wrong, in the course's words; Lesson the section
	// that teaches it.
	Message string `json:"message"`
	Lesson  string `json:"lesson"`
	// Schedule is the schedule's number (its trace: Result.Traces), and
	// Also how many other schedules failed the same way.
	Schedule int `json:"schedule"`
	Also     int `json:"also,omitempty"`
}

// Result is a test's verdict.
type Result struct {
	Passed bool `json:"passed"`
	// Schedules is how many schedules ran.
	Schedules int       `json:"schedules"`
	Findings  []Finding `json:"findings"`
	// Traces are the failed schedules' traces, and the ordinary life's.
	Traces map[int]*Trace `json:"-"`
	Took   time.Duration  `json:"-"`
}

// Code is a learner's reconciler as the tester runs it: a sandbox, whose
// child can be killed mid-reconcile (the next reconcile starts a fresh one).
type Code interface {
	controller.NamespaceReconciler
	Kill()
	Close()
}

// Scratch makes and removes the scratch namespaces schedules run in.
type Scratch interface {
	// Make returns a new scratch namespace, labelled and bounded as a lab
	// namespace is, its learner-code identity granted, and left alone by
	// oplab's own controller.
	Make(ctx context.Context) (string, error)
	// Remove deletes it, in the background.
	Remove(ns string)
}

// Options configures a test.
type Options struct {
	// Config is oplab's own identity: the user's actions and the oracle's
	// reads; the code's calls go as its own ServiceAccount.
	Config *rest.Config
	// Mapper is shared by the schedules' drivers; nil: one is made.
	Mapper  meta.RESTMapper
	Scratch Scratch
	// Compile starts a fresh sandbox with the code compiled, one a
	// schedule.
	Compile func(ctx context.Context) (Code, error)
	// Parallel is how many of this test's schedules run at once (8).
	Parallel int
	// Slots, when set, is the server's cap of schedules running at once
	// over every learner's test: a schedule takes a slot while it runs.
	Slots chan struct{}
	// ImageRegistry is oplab's --image-registry.
	ImageRegistry string
	// MaxReconciles bounds the reconciles of one phase (30): what ends a
	// run that never converges. PhaseTimeout bounds its time too (3
	// minutes), only a guard: a loaded machine slows a phase down, and a
	// verdict must not depend on the machine's speed.
	MaxReconciles int
	PhaseTimeout  time.Duration
	// Only, when set, runs only the battery's schedules whose name it
	// accepts (the ordinary life always runs): a quick look at one fault.
	Only func(name string) bool
	// Progress, when set, hears how many schedules have run of how many.
	Progress func(done, of int)
	Logger   logr.Logger
}

func (o Options) withDefaults() Options {
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.MaxReconciles <= 0 {
		o.MaxReconciles = 30
	}
	if o.PhaseTimeout <= 0 {
		o.PhaseTimeout = 3 * time.Minute
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return o
}

// tester is one test of one learner's code.
type tester struct {
	opts Options
	user client.Client
	// watcher watches a schedule's namespace for the changes that wake a
	// controller.
	watcher client.WithWatch
	// refs are the ordinary life's end states, by phase, and writes the
	// writes it made in each.
	refs   map[phase]reference
	writes map[phase]int
	// staticChildren are the ordinary life's children after the create:
	// what the misoperations delete and edit.
	created []child
}

// Run tests the code opts.Compile compiles.
func Run(ctx context.Context, opts Options) (Result, error) {
	opts = opts.withDefaults()
	began := time.Now()
	if opts.Mapper == nil {
		m, err := controller.NewMapper(opts.Config)
		if err != nil {
			return Result{}, err
		}
		opts.Mapper = m
	}
	user, err := client.NewWithWatch(opts.Config, client.Options{Scheme: scheme, Mapper: opts.Mapper})
	if err != nil {
		return Result{}, fmt.Errorf("a client for the tester: %w", err)
	}
	t := &tester{opts: opts, user: user, watcher: user, refs: map[phase]reference{}, writes: map[phase]int{}}
	res := Result{Traces: map[int]*Trace{}}

	// The ordinary life first: its end states are every other schedule's
	// oracle. Until it converges, nothing else can be judged.
	ordinary := &schedule{id: 0, name: "the ordinary life (create, scale to 3, scale to 1, a spec change, delete)",
		plan: life, record: true}
	tr, findings, err := t.runSchedule(ctx, ordinary)
	if err != nil {
		return res, err
	}
	res.Schedules = 1
	res.Traces[0] = tr
	if len(findings) > 0 {
		res.Findings = findings
		res.Took = time.Since(began)
		return res, nil
	}

	progress := func(done, of int) {
		if opts.Progress != nil {
			opts.Progress(done, of)
		}
	}
	battery := t.battery()
	if opts.Only != nil {
		var some []*schedule
		for _, s := range battery {
			if opts.Only(s.name) {
				some = append(some, s)
			}
		}
		battery = some
	}
	var mu sync.Mutex
	var all []Finding
	done := 1
	progress(done, len(battery)+1)
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	var firstErr error
	for _, s := range battery {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tr, fs, err := t.runSchedule(ctx, s)
			mu.Lock()
			defer mu.Unlock()
			done++
			progress(done, len(battery)+1)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("schedule %d (%s): %w", s.id, s.name, err)
				}
				return
			}
			if len(fs) > 0 {
				res.Traces[s.id] = tr
				all = append(all, fs...)
			}
			opts.Logger.V(1).Info("Ran a schedule", "schedule", s.id, "name", s.name, "took", tr.Took, "steps", len(tr.Steps))
		})
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	res.Schedules += len(battery)
	res.Findings = dedupe(all)
	res.Passed = len(res.Findings) == 0
	res.Took = time.Since(began)
	return res, nil
}

// dedupe keeps, of findings with the same pattern and message, the one of
// the lowest schedule, counting the others: one cause, many schedules.
func dedupe(fs []Finding) []Finding {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Schedule < fs[j].Schedule })
	var out []Finding
	at := map[string]int{}
	for _, f := range fs {
		k := f.Pattern + "\x00" + f.Message
		if i, ok := at[k]; ok {
			out[i].Also++
			continue
		}
		at[k] = len(out)
		out = append(out, f)
	}
	return out
}

// errStop ends a schedule early: a finding was made.
var errStop = errors.New("stop")

// lower is s with a first letter in lower case, for a clause.
func lower(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
