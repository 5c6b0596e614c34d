package tester

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/oplab-dev/oplab/controller"
	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = dbv1.AddToScheme(s)
	return s
}()

// phase is one user action and the convergence after it.
type phase int

const (
	create phase = iota
	scaleUp
	scaleDown
	respec
	remove
)

// life is the ordinary life's phases, in order.
var life = []phase{create, scaleUp, scaleDown, respec, remove}

func (p phase) String() string {
	return [...]string{"the create", "the scale to 3", "the scale to 1", "the spec change", "the delete"}[p]
}

// gone says the phase ends with the Database gone.
func (p phase) gone() bool { return p == remove }

// before is what a schedule aimed at p runs first, unperturbed.
func (p phase) before() []phase {
	switch p {
	case scaleUp, respec, remove:
		return []phase{create}
	case scaleDown:
		return []phase{create, scaleUp}
	}
	return nil
}

// act does the phase's user action.
func (p phase) act(ctx context.Context, w *world) error {
	switch p {
	case create:
		return w.create(ctx)
	case scaleUp:
		return w.scale(ctx, 3)
	case scaleDown:
		return w.scale(ctx, 1)
	case respec:
		return w.respec(ctx)
	}
	return w.delete(ctx)
}

// words is the action, for the trace.
func (p phase) words() string {
	return [...]string{"created Database db (1 replica)", "scaled Database db to 3 replicas", "scaled Database db to 1 replica",
		"changed Database db's spec.storage to 2Gi", "deleted Database db"}[p]
}

// schedule is one run of the learner's code: the ordinary life's phases
// up to a target phase, with one perturbation there.
type schedule struct {
	id                  int
	name                string
	pattern, perturbing string
	plan                []phase
	// arm sets the perturbation up, right before the target phase's action.
	arm func(r *run)
	// act, when set, replaces the action of the phase at actAt (the
	// target phase, the last, when actAt is zero).
	act   func(ctx context.Context, r *run) error
	actAt int
	// ref, when set, is the target phase's expected end state (default:
	// the ordinary life's).
	ref *reference
	// record makes this the ordinary life: its end states and writes
	// become the references.
	record bool
	// checkAll checks every phase's end, not only the target's.
	checkAll bool
}

// battery lists the schedules, from the ordinary life's record.
func (t *tester) battery() []*schedule {
	var out []*schedule
	add := func(s *schedule) {
		s.id = len(out) + 1
		out = append(out, s)
	}
	plan := func(p phase) []phase { return append(p.before(), p) }

	// Sieve's intermediate states: a crash right after each write the
	// ordinary life makes; a fresh child carries on.
	for _, p := range life {
		for k := 1; k <= t.writes[p]; k++ {
			add(&schedule{name: fmt.Sprintf("crash after write %d of %s", k, p), pattern: PatternIntermediate,
				perturbing: fmt.Sprintf("your code's process killed right after its write %d in %s; a fresh one carries on", k, p),
				plan:       plan(p), arm: func(r *run) { r.crashAfter(k) }})
		}
	}
	// Nothing kept in memory may matter: a fresh process for every reconcile.
	add(&schedule{name: "a restart before every reconcile", pattern: PatternIntermediate,
		perturbing: "your code's process restarted before every reconcile of the whole life", plan: life, checkAll: true,
		arm: func(r *run) { r.restart = true }})
	// Conflicts: each write answered 409 once, unsent.
	for _, p := range life {
		for k := 1; k <= t.writes[p]; k++ {
			add(&schedule{name: fmt.Sprintf("409 on write %d of %s", k, p), pattern: PatternConflict,
				perturbing: fmt.Sprintf("write %d in %s answered 409 Conflict once, and not made", k, p),
				plan:       plan(p), arm: func(r *run) { r.f.conflictAt = r.f.attemptsNow() + k }})
		}
	}
	// Sieve's stale state: the first reconcile after an action reads what
	// the code saw before it, as a lagging informer cache answers.
	for _, p := range []phase{scaleUp, scaleDown, respec, remove} {
		add(&schedule{name: "stale reads after " + p.String(), pattern: PatternStale,
			perturbing: fmt.Sprintf("the first reconcile after %s read the objects as your code last saw them before it", p),
			plan:       plan(p), arm: func(r *run) { r.f.freeze(); r.staleNext = true }})
	}
	// Sieve's unobserved states: two actions before any reconcile sees
	// the first. Level-triggered code sees only where they end.
	add(&schedule{name: "scale to 3 and back to 1 before a reconcile", pattern: PatternUnobserved,
		perturbing: "scaled to 3 and back to 1 before any reconcile saw the 3", plan: []phase{create, scaleDown},
		act: func(ctx context.Context, r *run) error {
			if err := r.w.scale(ctx, 3); err != nil {
				return err
			}
			r.note("scaled Database db to 3 replicas")
			return r.w.scale(ctx, 1)
		}})
	add(&schedule{name: "create and scale before a reconcile", pattern: PatternUnobserved,
		perturbing: "created with 1 replica and scaled to 3 before any reconcile saw the 1", plan: []phase{scaleUp},
		ref: refOf(t.refs[scaleUp]),
		act: func(ctx context.Context, r *run) error {
			if err := r.w.create(ctx); err != nil {
				return err
			}
			r.note("created Database db (1 replica)")
			return r.w.scale(ctx, 3)
		}})
	add(&schedule{name: "create and delete before a reconcile", pattern: PatternUnobserved,
		perturbing: "created and deleted before any reconcile saw it", plan: []phase{remove},
		ref: &reference{},
		act: func(ctx context.Context, r *run) error {
			if err := r.w.create(ctx); err != nil {
				return err
			}
			r.note("created Database db (1 replica)")
			return r.w.delete(ctx)
		}})
	// Acto's misoperations: a child deleted or edited by hand once the
	// Database is Ready; the Database deleted as it is being made, and
	// deleted and made again under the same name.
	for _, c := range t.created {
		add(&schedule{name: c.String() + " deleted by hand", pattern: PatternMisoperation,
			perturbing: c.String() + " deleted by hand once the Database was Ready", plan: []phase{create, create},
			ref: refOf(t.refs[create]),
			act: func(ctx context.Context, r *run) error { return r.w.deleteChild(ctx, c) }})
		if c.kind == "StatefulSet" {
			add(&schedule{name: c.String() + " scaled to 4 by hand", pattern: PatternMisoperation,
				perturbing: c.String() + " scaled to 4 by hand once the Database was Ready", plan: []phase{create, create},
				ref: refOf(t.refs[create]),
				act: func(ctx context.Context, r *run) error { return r.w.editStatefulSet(ctx, c.name, 4) }})
		}
	}
	for k := 1; k <= t.writes[create]; k++ {
		add(&schedule{name: fmt.Sprintf("deleted after write %d of the create", k), pattern: PatternMisoperation,
			perturbing: fmt.Sprintf("Database db deleted right after your code's write %d in the create", k), plan: []phase{remove},
			act: func(ctx context.Context, r *run) error {
				r.deleteAfter(k)
				return r.w.create(ctx)
			}})
	}
	// An ordinary sequence of user actions in which a snapshot can be
	// lost: the second Database's delete finds the first one's snapshot.
	add(&schedule{name: "deleted, made again and deleted again", pattern: PatternMisoperation,
		perturbing: "Database db deleted, made again under the same name once it was gone, then deleted again",
		plan:       []phase{create, create, remove}, actAt: 1, checkAll: true,
		act: func(ctx context.Context, r *run) error {
			if err := r.w.delete(ctx); err != nil {
				return err
			}
			r.note("deleted Database db")
			if err := r.converge(ctx, remove); err != nil {
				return err
			}
			return r.w.create(ctx)
		}})
	return out
}

func refOf(r reference) *reference { return &r }

// run is one schedule being run.
type run struct {
	t    *tester
	s    *schedule
	w    *world
	d    *controller.Driver
	f    *faults
	code Code
	sink *traceSink
	// restart kills the child before every reconcile; staleNext answers
	// the next reconcile from the frozen view.
	restart, staleNext bool
	// deleted says the Database was deleted by a misoperation, and
	// finalizing whether it then held a finalizer (so its snapshot is due);
	// deleteDue that the misoperation is armed and has not happened yet.
	deleted, finalizing, deleteDue bool
	// found is the first finding; mark the step to name for it.
	found *Finding
	mark  int
}

// note puts what the tester did on the trace.
func (r *run) note(what string) int {
	return r.sink.noteStep(r.d, r.w.ns, "the tester: "+what)
}

func (r *run) crashAfter(k int) {
	base := r.f.written()
	r.f.afterWrite = func(n int) {
		if n == base+k {
			r.mark = r.note(fmt.Sprintf("your code's process killed right after this write (write %d of the phase)", k))
			r.code.Kill()
		}
	}
}

func (r *run) deleteAfter(k int) {
	base := r.f.written()
	r.deleteDue = true
	r.f.afterWrite = func(n int) {
		if n == base+k {
			r.deleteNow(fmt.Sprintf("deleted Database db right after your code's write %d", k))
		}
	}
}

// deleteNow deletes the Database in the middle of its making, noting
// whether its finalizer was on it by then.
func (r *run) deleteNow(why string) {
	if !r.deleteDue {
		return
	}
	r.deleteDue = false
	ctx := context.Background()
	if err := r.w.delete(ctx); err != nil {
		return
	}
	r.deleted = true
	if st, err := r.w.read(ctx); err == nil && st.db != nil && len(st.db.Finalizers) > 0 {
		r.finalizing = true
	}
	r.mark = r.note(why)
}

// attemptsNow is how many writes the code has attempted.
func (f *faults) attemptsNow() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

// runSchedule runs s in a scratch namespace of its own and returns its
// trace and findings; an error is the tester's own failure, not the code's.
func (t *tester) runSchedule(ctx context.Context, s *schedule) (*Trace, []Finding, error) {
	if t.opts.Slots != nil {
		select {
		case t.opts.Slots <- struct{}{}:
			defer func() { <-t.opts.Slots }()
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	t0 := time.Now()
	ns, err := t.opts.Scratch.Make(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer t.opts.Scratch.Remove(ns)
	t1 := time.Now()
	code, err := t.opts.Compile(ctx)
	if err != nil {
		return nil, nil, err
	}
	t.opts.Logger.V(2).Info("Set up a schedule", "schedule", s.id, "namespace", t1.Sub(t0), "compile", time.Since(t1))
	defer code.Close()
	r := &run{t: t, s: s, w: &world{ns: ns, c: t.user}, f: newFaults(), code: code,
		sink: &traceSink{trace: &Trace{Schedule: s.id, Name: s.name, Namespace: ns}}}
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	if r.w.changes, err = r.w.watch(wctx, t.watcher); err != nil {
		return nil, nil, err
	}
	r.d, err = controller.NewDriver(t.opts.Config, ns, code, controller.DriverOptions{
		Sink: r.sink, Around: r.f.wrap, Mapper: t.opts.Mapper, ImageRegistry: t.opts.ImageRegistry})
	if err != nil {
		return nil, nil, err
	}
	began := time.Now()
	err = r.play(ctx)
	r.sink.trace.Took = time.Since(began)
	if err != nil && !errors.Is(err, errStop) {
		return nil, nil, err
	}
	if r.found == nil {
		return r.sink.trace, nil, nil
	}
	r.sink.trace.Marked = r.found.Step
	return r.sink.trace, []Finding{*r.found}, nil
}

// play runs the schedule's phases.
func (r *run) play(ctx context.Context) error {
	s := r.s
	actAt := s.actAt
	if actAt == 0 {
		actAt = len(s.plan) - 1
	}
	for i, p := range s.plan {
		target := i == len(s.plan)-1
		writes := r.f.written()
		if target && s.arm != nil {
			s.arm(r)
		}
		if i == actAt && s.act != nil {
			if err := s.act(ctx, r); err != nil {
				return err
			}
			r.note(s.perturbing)
		} else {
			if err := p.act(ctx, r.w); err != nil {
				return err
			}
			r.note(p.words())
		}
		if r.deleted {
			p = remove
		}
		if err := r.converge(ctx, p); err != nil {
			return err
		}
		st, err := r.w.read(ctx)
		if err != nil {
			return err
		}
		if p.gone() {
			if st, err = r.w.waitCollected(ctx, 15*time.Second); err != nil {
				return err
			}
		}
		r.observe(st)
		if s.record {
			r.t.refs[p] = reference{children: names(st.children), snapshot: p.gone()}
			r.t.writes[p] = r.f.written() - writes
			if p == create {
				r.t.created = st.children
			}
		}
		if !target && !s.checkAll && !s.record {
			continue
		}
		ref := r.t.refs[p]
		if target && s.ref != nil {
			ref = *s.ref
		}
		if r.deleted {
			// Deleted while being made: its snapshot is due only if its
			// finalizer was on it by then.
			ref = reference{snapshot: r.finalizing}
		}
		if s.record {
			// The ordinary life holds itself to what holds of any
			// reconciler of Databases, not to its own end state: every
			// child controlled, and, once deleted, its children collected
			// and its final snapshot written (the course's contract).
			ref.children = names(st.children)
			if p.gone() {
				ref = reference{snapshot: true}
			}
		}
		if ps := check(st, ref, p.gone(), r.w.uid); len(ps) > 0 {
			step := r.sink.noteStep(r.d, r.w.ns, "the tester: after "+p.String()+", "+lower(words(ps)))
			r.find(s.pattern, step, words(ps), ps[0].lesson)
			return errStop
		}
	}
	return nil
}

// find records the schedule's finding: its pattern (the ordinary life's
// are convergence's), the step to mark, what is wrong.
func (r *run) find(pattern string, step int, message, lesson string) {
	if r.found != nil {
		return
	}
	if pattern == "" {
		pattern = PatternConvergence
	}
	if r.mark > 0 {
		step = r.mark
	}
	perturbation := r.s.perturbing
	if perturbation == "" {
		perturbation = "no fault: " + r.s.name
	}
	r.found = &Finding{Pattern: pattern, Perturbation: perturbation, Step: step, Message: message, Lesson: lesson, Schedule: r.s.id}
}

// converge reconciles until p's goal is reached, at most MaxReconciles
// times, as a controller would: again after an error (with a backoff),
// when the code asks (RequeueAfter), and when the namespace changes (what
// a watch would bring). At the goal, one more reconcile must write
// nothing: a reconciler at rest compares before it writes.
func (r *run) converge(ctx context.Context, p phase) error {
	opts := r.t.opts
	began := time.Now()
	why := "the tester: after " + p.String()
	errorsInRow, restWrites := 0, 0
	last := ""
	for n := 1; ; n++ {
		if n > opts.MaxReconciles || time.Since(began) > opts.PhaseTimeout {
			step := r.sink.noteStep(r.d, r.w.ns, fmt.Sprintf("the tester: no convergence after %d reconciles", n-1))
			pattern := PatternConvergence
			if r.s.pattern != "" {
				pattern = r.s.pattern
			}
			r.find(pattern, step, fmt.Sprintf("after %s your code did not converge within %d reconciles and %s: %s", p, n-1,
				time.Since(began).Round(time.Second), last), lessonLoop)
			return errStop
		}
		if r.restart {
			r.code.Kill()
		}
		stale := r.staleNext
		r.f.setStale(stale)
		res, err := r.d.Reconcile(ctx, dbName, why)
		if stale {
			r.f.setStale(false)
			r.staleNext = false
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			errorsInRow++
			last = "the last reconcile failed: " + clip(err.Error())
			if errorsInRow >= 10 {
				step := r.sink.noteStep(r.d, r.w.ns, "the tester: 10 reconciles in a row failed")
				msg, lesson := fmt.Sprintf("after %s, 10 reconciles in a row failed, a loop of errors: %s", p, clip(err.Error())), lessonErrors
				if strings.Contains(err.Error(), "already exists") {
					// The non-idempotent create's signature.
					msg += ": a create that takes AlreadyExists for an error fails on every pass after the first"
					lesson = lessonNonIdempot
				}
				r.find(PatternBudget, step, msg, lesson)
				return errStop
			}
			why = "the tester: retry " + strconv.Itoa(errorsInRow) + " after an error"
			sleep(ctx, min(50*time.Millisecond<<errorsInRow, time.Second))
			continue
		}
		errorsInRow = 0
		// What changed up to this read is in it: only later events wake
		// the next reconcile.
		r.w.drain()
		st, err := r.w.read(ctx)
		if err != nil {
			return err
		}
		r.observe(st)
		done, reason := settled(st, p.gone())
		if !done && r.deleteDue {
			// The write the delete was to follow never came: the
			// Database was made with fewer writes this time. It is
			// deleted once it is made, as the nearest point.
			if made, _ := settled(st, false); made {
				r.deleteNow("deleted Database db once made: the write it was to follow never came")
				why = "the tester: the namespace changed, as a watch event would say"
				continue
			}
		}
		if done && !p.gone() {
			// The goal holds; the world may still be moving (Pods going
			// after a scale down, their StatefulSet's status with them).
			// A change is an event: reconcile again. Only a quiet
			// namespace is at rest.
			if changed := r.quiet(ctx); changed {
				why = "the tester: the namespace changed, as a watch event would say"
				continue
			}
		}
		if done {
			if p.gone() {
				return nil
			}
			before := r.f.written()
			if _, err := r.d.Reconcile(ctx, dbName, "the tester: once more, at rest"); err == nil {
				wrote := r.f.written() - before
				if wrote == 0 {
					return nil
				}
				// One write at rest may answer a change the quiet spell
				// missed (a Pod going a moment later); three in a row
				// answer nothing but the code's own writes.
				if restWrites++; restWrites >= 3 {
					step := r.sink.noteStep(r.d, r.w.ns, "the tester: a reconcile at rest wrote, three times in a row")
					r.find(PatternBudget, step, fmt.Sprintf("after %s, with nothing left to do, a reconcile still made %d write(s), three "+
						"times in a row: a reconciler at rest compares before it writes, or every write wakes it again", p, wrote), lessonThrash)
					return errStop
				}
				why = "the tester: once more, after a write at rest"
				continue
			}
			return nil
		}
		last = reason
		why = r.waitForChange(ctx, res.RequeueAfter)
	}
}

// waitForChange waits for what would wake a controller: a watch event of
// the namespace (the Database or a child), or, failing one, the requeue
// the code asked for (at most a second here), or a second, as a resync.
func (r *run) waitForChange(ctx context.Context, after time.Duration) string {
	wait := time.Second
	if after > 0 {
		wait = min(after, time.Second)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.w.changes:
		return "the tester: the namespace changed, as a watch event would say"
	case <-t.C:
	case <-ctx.Done():
	}
	if after > 0 {
		return "the tester: requeued by your code"
	}
	return "the tester: nothing changed for a second, as a resync"
}

// quiet waits until the namespace has had no watch event for 300 ms, at
// most 5 s, and reports whether one came.
func (r *run) quiet(ctx context.Context) (changed bool) {
	t := time.NewTimer(300 * time.Millisecond)
	defer t.Stop()
	select {
	case <-r.w.changes:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// clip cuts a message for a finding.
func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// observe records st's objects on the trace's history, once per version,
// and those gone since as deleted.
func (r *run) observe(st state) {
	r.sink.observeAll(r.d, st.objects)
}
