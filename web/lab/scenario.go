package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/progress"
)

// Scenario is a "try it live" exercise, linked from lessons and the quiz as
// /lab?scenario=NAME. Its setup is a POST, so following a link never
// changes the cluster.
type Scenario struct {
	Name  string
	Title string
	Intro string
	Setup string
	Watch []string
	// Next are the lab actions Watch asks for, offered in the scenario's
	// panel once it is set up, beside what they show: the learner need not
	// find them on a card further down.
	Next []NextAction
	// Through is what on the learner's timeline means they saw it through.
	Through SeenThrough
	// run prepares the scenario in namespace ns and returns what to tell
	// the learner.
	run func(ctx context.Context, h *Handler, ns string) (string, error)
}

// SeenThrough is what, on the learner's own timeline, means they saw a
// scenario through: Kind is one of SeenThroughKinds, Database the one the
// scenario sets up. The scenario's panel carries it (data-through) and
// progress.js watches the stream for it, so the scenarios are listed here
// alone.
type SeenThrough struct {
	Kind     string `json:"kind"`
	Database string `json:"database"`
}

// SeenThroughKinds are the kinds progress.js knows (its THROUGH table).
var SeenThroughKinds = []string{
	"ready",          // the Database turned Ready=True
	"finalized",      // its finalizer ran to "removed"
	"gone",           // it went after Terminating, by its finalizer or the escape hatch
	"status-writes",  // its status was written three times
	"already-exists", // a create of one of its children was answered AlreadyExists
}

// NextAction is one of a scenario's next steps: a button in its panel that
// posts the same form as the lab's own control for it (a card's Delete, the
// controller bar's Resume), so it goes through the same handler.
type NextAction struct {
	Label  string
	Action string            // the form's path
	Fields map[string]string // its fields, as the card's form would send them
	Danger bool
}

func deleteNext(db string) NextAction {
	return NextAction{Label: "Delete " + db, Action: "/lab/databases/" + db + "/delete", Danger: true}
}

func pitfallOffNext(db string) NextAction {
	return NextAction{Label: "Switch the pitfall off on " + db, Action: "/lab/databases/" + db + "/pitfall", Fields: map[string]string{"pitfall": ""}}
}

type formField struct{ Name, Value string }

// sortedFields lists a next action's fields in a stable order.
func sortedFields(m map[string]string) []formField {
	out := make([]formField, 0, len(m))
	for k, v := range m {
		out = append(out, formField{k, v})
	}
	slices.SortFunc(out, func(a, b formField) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// setupWait bounds how long a setup waits for the cluster to reach the
// starting point (Ready, or the finalizer in place).
const setupWait = 60 * time.Second

// Scenarios lists the scenarios in the order the course uses them. It is
// the one list of scenario names: lessons' live blocks and the quiz's demos
// link to these, and web's tests check every such link against it. Every
// sentence of Watch is checked against the recorded trace by a test in web/
// that runs the scenario on the real cluster.
var Scenarios = []Scenario{
	{
		Name: "first-reconcile", Title: "Your first reconcile",
		Through: SeenThrough{Kind: "ready", Database: "first"},
		Intro:   "Create a Database and watch the controller turn one object into a Secret, a Service and a StatefulSet.",
		Setup:   "Create Database first",
		Watch: []string{
			"The create event arrives at watch and queues one request; its reconcile fetches first, adds the finalizer db.oplab.dev/final-snapshot (so a delete will wait for the final snapshot), and finds the Secret, the Service and the StatefulSet missing.",
			"That one reconcile creates all three children, then writes status once: Progressing, with observedGeneration 1.",
			"The StatefulSet's Pods becoming ready are events too: a later reconcile sees them and writes Ready=True.",
		},
		run: func(ctx context.Context, h *Handler, ns string) (string, error) {
			return "Created Database first: watch its reconciles on the timeline.", h.create(ctx, ns, CreateInput{Name: "first", Engine: "postgres", Replicas: 1})
		},
	},
	{
		Name: "already-exists", Title: "AlreadyExists is convergence",
		Through: SeenThrough{Kind: "ready", Database: "taken"},
		Intro:   "A Service named like the Database exists before the Database does, as if another actor or an earlier run had made it. Watch the controller take it as convergence, not as an error.",
		Setup:   "Make Service taken, then Database taken",
		Watch: []string{
			"The setup makes a Service called taken, with the wrong port, the wrong selector and no owner, before the Database.",
			"The first reconcile does not find that Service among its own children and calls Create: the API server answers AlreadyExists.",
			"The controller reads the Service, adopts it and corrects its port and selector (patch → Updated), and carries on to Ready=True with no error row.",
		},
		run: func(ctx context.Context, h *Handler, ns string) (string, error) {
			if err := h.opts.Store.CreateUnownedService(ctx, ns, "taken", strayServicePort); err != nil {
				return "", err
			}
			if err := h.create(ctx, ns, CreateInput{Name: "taken", Engine: "postgres", Replicas: 1}); err != nil {
				return "", err
			}
			return fmt.Sprintf("Made Service taken (port %d, no owner), then Database taken: watch its first reconcile meet AlreadyExists.", strayServicePort), nil
		},
	},
	{
		Name: "finalizer", Title: "A finalizer at work",
		Through: SeenThrough{Kind: "finalized", Database: "doomed"},
		Intro:   "Set up a Ready Database with the button below, then delete it and watch the finalizer hold it while the controller cleans up.",
		Setup:   "Prepare a Ready Database",
		Next:    []NextAction{deleteNext("doomed")},
		Watch: []string{
			"Press Delete on doomed: metadata.deletionTimestamp is set, but the object stays, Terminating, held by db.oplab.dev/final-snapshot, until the controller has cleaned up. Here that takes well under a second: set the timeline's Speed to 0.25× slow motion first, and the card goes through it at the timeline's pace.",
			"The finalizer phases appear on the timeline in order: draining (StatefulSet scaled to 0), snapshot (the ConfigMap doomed-final-snapshot written), removed. No row is an error.",
			"Once the finalizer is removed the Database goes, the garbage collector deletes its children, and the snapshot ConfigMap stays: nothing owns it.",
		},
		run: func(ctx context.Context, h *Handler, ns string) (string, error) {
			if err := h.create(ctx, ns, CreateInput{Name: "doomed", Engine: "postgres", Replicas: 2}); err != nil {
				return "", err
			}
			if h.waitFor(ctx, ns, "doomed", func(d dbview.Database) bool { return d.Ready() == "True" }) {
				return "doomed is Ready. Now delete it.", nil
			}
			return "doomed is created but not Ready yet; wait for Ready=True, then delete it.", nil
		},
	},
	{
		Name: "status-thrash", Title: "Status thrash",
		Through: SeenThrough{Kind: "status-writes", Database: "thrash"},
		Intro:   "A Database whose controller rewrites status with a fresh timestamp even when nothing changed. Here it may do so once a second, so the storm stays watchable: reconciles in between skip the write and requeue for the next one.",
		Setup:   "Create Database thrash with the status-thrash pitfall",
		Next:    []NextAction{pitfallOffNext("thrash")},
		Watch: []string{
			"Every status write is a watch event that wakes the next reconcile at once. That one finds the last write under a second old, holds its own back and requeues; the requeued reconcile writes, and its event starts it over: the rows never stop.",
			"The spec does not change (generation stays 1), yet status is written again and again, each time with a new lastTransitionTime.",
			"Switch the pitfall off and the storm ends: status is written only when it changes.",
		},
		run: pitfallScenario("thrash", controller.PitfallStatusThrash),
	},
	{
		Name: "stuck-finalizer", Title: "A stuck finalizer",
		Through: SeenThrough{Kind: "gone", Database: "stuck"},
		Intro:   "The setup creates a Database, waits for its finalizer, then pauses the controller for your namespace. Delete the Database and see what happens when no one is there to finish the job. Other learners' Databases are still reconciled.",
		Setup:   "Create Database stuck, then pause the controller here",
		Next: []NextAction{
			deleteNext("stuck"),
			{Label: "Resume", Action: "/lab/controller/start"},
			{Label: "Remove stuck's finalizers (escape hatch)", Action: "/lab/databases/stuck/finalizers/remove", Danger: true},
		},
		Watch: []string{
			"Delete stuck: it shows Terminating, held by db.oplab.dev/final-snapshot, and no reconcile runs while your namespace is paused.",
			"Press Resume: the held request is reconciled, the finalizer runs (draining, snapshot, removed), the Database goes and its snapshot stays.",
			"Or use the escape hatch instead (remove finalizers): it goes at once, and the final snapshot is never taken.",
		},
		run: func(ctx context.Context, h *Handler, ns string) (string, error) {
			if err := h.create(ctx, ns, CreateInput{Name: "stuck", Engine: "postgres", Replicas: 1}); err != nil {
				return "", err
			}
			if !h.waitFor(ctx, ns, "stuck", func(d dbview.Database) bool { return slices.Contains(d.Finalizers, controller.Finalizer) }) {
				return "", fmt.Errorf("database stuck did not get its finalizer within %s: is the controller running?", setupWait)
			}
			h.opts.Controller.PauseNamespace(ns)
			return "stuck has its finalizer and the controller is paused for your namespace. Now delete stuck.", nil
		},
	},
	{
		Name: "non-idempotent-create", Title: "A non-idempotent create",
		Through: SeenThrough{Kind: "already-exists", Database: "twice"},
		Intro:   "A Database whose controller treats AlreadyExists as an error instead of as convergence.",
		Setup:   "Create Database twice with the non-idempotent-create pitfall",
		Next:    []NextAction{pitfallOffNext("twice")},
		Watch: []string{
			"The first reconcile creates the three children; every later one calls Create again and fails with AlreadyExists.",
			"Each failure is retried with exponential backoff: the gaps between the rows grow.",
			"Degraded turns True. Switch the pitfall off and the next reconcile converges.",
		},
		run: pitfallScenario("twice", controller.PitfallNonIdempotentCreate),
	},
	{
		Name: "drop-events", Title: "Dropped events",
		Through: SeenThrough{Kind: "ready", Database: "deaf"},
		Intro:   "A Database whose watch events are all ignored, as if an edge-triggered controller had missed them.",
		Setup:   "Create Database deaf with the drop-events pitfall",
		Next: []NextAction{{Label: "Change deaf's replicas to 2", Action: "/lab/databases/deaf/edit",
			Fields: map[string]string{"replicas": "2", "origReplicas": "1", "version": "", "origVersion": ""}}},
		Watch: []string{
			"The events arrive but are marked ignored: nothing is queued, so no reconcile follows them.",
			"Change its replicas: generation moves, observedGeneration does not (stale).",
			"At the periodic resync a reconcile runs anyway and converges everything, Ready included, in that resync or the requeue it schedules (no event needed): the loop is level-triggered.",
		},
		run: pitfallScenario("deaf", controller.PitfallDropEvents),
	},
}

// strayServicePort is the port of the already-exists scenario's Service:
// not the engine's, so the controller has something to correct.
const strayServicePort = 9999

func pitfallScenario(name, pitfall string) func(ctx context.Context, h *Handler, ns string) (string, error) {
	return func(ctx context.Context, h *Handler, ns string) (string, error) {
		err := h.create(ctx, ns, CreateInput{Name: name, Engine: "postgres", Replicas: 1, Pitfall: pitfall})
		return fmt.Sprintf("Created Database %s with the %s pitfall.", name, pitfall), err
	}
}

// FindScenario returns the scenario called name.
func FindScenario(name string) (Scenario, bool) {
	i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, false
	}
	return Scenarios[i], true
}

func (s Scenario) view(done bool) *ScenarioView {
	through, _ := json.Marshal(s.Through) // two strings: cannot fail
	return &ScenarioView{Name: s.Name, Title: s.Title, Intro: s.Intro, Setup: s.Setup, Watch: s.Watch, Next: s.Next, Done: done, Through: string(through)}
}

// waitFor polls the lab state until the Database satisfies ok or setupWait
// passes; it reports whether ok was reached.
func (h *Handler) waitFor(ctx context.Context, ns, name string, ok func(dbview.Database) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, setupWait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		dbs, err := h.opts.States.Databases(ctx, ns)
		if err == nil {
			for _, d := range dbs {
				if d.Name == name && ok(d) {
					return true
				}
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
func (h *Handler) setupScenario(ctx context.Context, ns string, r *http.Request) outcome {
	name := r.PathValue("scenario")
	s, ok := FindScenario(name)
	if !ok {
		return outcome{err: unknownScenario(name)}
	}
	quieted := h.quietLeftovers(ctx, ns, s)
	started := time.Now()
	msg, err := s.run(ctx, h, ns)
	if err == nil && h.opts.Records != nil {
		h.opts.Records.Record(ctx, ns, func(rec *progress.Record) bool { rec.ScenarioStarted(s.Name, started.UnixMilli()); return true })
	}
	if len(quieted) > 0 && err == nil {
		msg += fmt.Sprintf(" Switched off the pitfall left on %s from before, so nothing of an earlier exercise keeps retrying or storming on this timeline.", strings.Join(quieted, ", "))
	}
	return outcome{message: msg, err: err, scenario: s.Name}
}

// loopingPitfalls are the pitfalls that keep a Database reconciling with no
// one acting: an error loop, a status storm. A hidden pitfall (a
// challenge's) may be either.
var loopingPitfalls = []string{controller.PitfallNonIdempotentCreate, controller.PitfallStatusThrash, controller.PitfallHidden}

// quietLeftovers switches off the looping pitfalls of Databases an earlier
// scenario or challenge left in ns (any but the one s sets up), so that a
// finished exercise leaves nothing retrying or storming on the timeline of
// the next. It returns their names; one it cannot switch off is left.
func (h *Handler) quietLeftovers(ctx context.Context, ns string, s Scenario) []string {
	dbs, err := h.opts.States.Databases(ctx, ns)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range dbs {
		if d.Name == s.Through.Database || d.Terminating || !slices.Contains(loopingPitfalls, d.Pitfall) {
			continue
		}
		if err := h.opts.Store.SetPitfall(ctx, ns, d.Name, ""); err == nil {
			out = append(out, d.Name)
		}
	}
	return out
}

func unknownScenario(name string) error {
	names := make([]string, len(Scenarios))
	for i, s := range Scenarios {
		names[i] = s.Name
	}
	return &FieldError{Field: "scenario", Message: fmt.Sprintf("unknown scenario %q: want one of %s", name, strings.Join(names, ", "))}
}

func knownScenario(name string) string {
	if _, ok := FindScenario(name); ok {
		return name
	}
	return ""
}
