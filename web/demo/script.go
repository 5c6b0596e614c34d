package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/lessons"
)

// Script is one prepared demo: steps played in order, each narrated.
type Script struct {
	// ID names the demo in forms and on the timeline (the trace step's
	// object name).
	ID string
	// Title is what the room sees above the narration.
	Title string
	// Summary says in one sentence what the demo shows, for the picker.
	Summary string
	// Databases are the Databases the demo creates: Play refuses while one
	// of that name exists in the namespace, so a demo never adopts a
	// learner's object or an earlier run's.
	Databases []string
	// Advance is how the demo moves from one step to the next; empty means
	// AdvanceManual.
	Advance Advance
	Steps   []Step
	// File is the file the demo was read from, "" for one built in Go.
	File string
}

// Advance is how a demo moves on once a step is done.
type Advance string

// The ways a demo advances. Manual waits for the presenter's Next (the
// instructor panel's button, or space or → on the projector), so the room
// moves on when the presenter has finished speaking, not when a clock says
// so; Auto moves on by itself after the step's dwell.
const (
	AdvanceManual Advance = "manual"
	AdvanceAuto   Advance = "auto"
)

// Step is one narrated step: say Say, do Do (if any), wait Until (if any),
// then dwell before the next step.
type Step struct {
	// Title is the step's one-line name: "Scale to 3".
	Title string
	// Say is the narration, written to be read to a room.
	Say string
	// Do is the step's action, or nil for a step that only narrates.
	Do *Action
	// Until is what the step waits for after its action, or nil.
	Until *Wait
	// Timeout bounds Until; zero means DefaultTimeout.
	Timeout time.Duration
	// Dwell is how long the step stays on screen once done, before the next
	// begins; zero means the player's default.
	Dwell time.Duration
}

// Action is what a step does to the cluster.
type Action struct {
	// What says what the action does, in words: "create Database shop
	// (postgres 16, 1 replica)".
	What string
	Act  func(ctx context.Context, env *Env) error
}

// Wait is a condition a step waits for, polled against the API server.
type Wait struct {
	// What says what is awaited, in words: it names the failure when the
	// wait times out.
	What string
	// Done reports whether the condition holds, and what it saw, for the
	// timeout's message.
	Done func(ctx context.Context, env *Env) (ok bool, seen string, err error)
}

// DefaultTimeout bounds a step's wait unless the step says otherwise.
const DefaultTimeout = 90 * time.Second

// pollEvery is how often a wait reads the cluster.
const pollEvery = 100 * time.Millisecond

// Timeline is a namespace's timeline as the trace recorder holds it
// (trace.Recorder).
type Timeline interface {
	Export(namespace string) trace.Export
}

// Env is what a step acts on: the instructor's lab namespace.
type Env struct {
	Namespace  string
	Client     client.Client
	Controller Controller
	// Timeline, when set, is where a wait for a step of the controller
	// also looks (onTimeline).
	Timeline Timeline
	// uids are what one step noted for a later one (the StatefulSet the
	// drift deleted, the Database the delete deleted), by name.
	uids map[string]types.UID
	// marks are the timeline's last seq just before an action, by action
	// and name ("database/shop" for its create, "delete/shop",
	// "statefulset/shop" for the drift): a wait reads only the rows after
	// its action, never those of an earlier run of the demo.
	marks map[string]uint64
	// shownSince is when the current step's wait first found the cluster
	// as awaited; timelineGrace after it, the wait stops waiting for the
	// row (now is time.Now unless a test sets it).
	shownSince time.Time
	now        func() time.Time
	// paused is set while this demo holds the namespace paused, so ending
	// the demo never leaves the namespace paused behind it. The step's
	// goroutine sets it and the player's reads it when a Stop cuts the
	// step short, hence atomic.
	paused atomic.Bool
}

// run does the step's action, then waits for its condition.
func (s Step) run(ctx context.Context, env *Env) error {
	if s.Do != nil {
		if err := s.Do.Act(ctx, env); err != nil {
			return err
		}
	}
	if s.Until == nil {
		return nil
	}
	env.shownSince = time.Time{}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return waitFor(ctx, env, *s.Until, timeout)
}

func waitFor(ctx context.Context, env *Env, w Wait, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var seen string
	var last error
	for {
		ok, s, err := w.Done(ctx, env)
		if ok && err == nil {
			return nil
		}
		if s != "" {
			seen = s
		}
		// An error from a look the wait's own deadline cut short (a rate
		// limiter refusing to wait past it) says nothing of what went wrong.
		if err != nil && ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.Canceled {
				return fmt.Errorf("waiting for %s: %w", w.What, ctx.Err())
			}
			if last != nil {
				return fmt.Errorf("waited %s for %s and it did not happen (last saw: %s; last error: %w)", timeout, w.What, orNothing(seen), last)
			}
			return fmt.Errorf("waited %s for %s and it did not happen (last saw: %s)", timeout, w.What, orNothing(seen))
		case <-tick.C:
		}
	}
}

func orNothing(s string) string {
	if s == "" {
		return "nothing yet"
	}
	return s
}

// ---- the actions ----------------------------------------------------------

// createDatabase creates a Database as the lab's form would.
func createDatabase(name string, engine v1alpha1.Engine, version string, replicas int32) *Action {
	return &Action{
		What: fmt.Sprintf("create Database %s (%s %s, %s)", name, engine, version, lessons.Plural(int(replicas), "replica")),
		Act: func(ctx context.Context, env *Env) error {
			db := &v1alpha1.Database{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace},
				Spec:       v1alpha1.DatabaseSpec{Engine: engine, Version: version, Replicas: replicas},
			}
			env.mark("database/" + name)
			if err := env.Client.Create(ctx, db); err != nil {
				return fmt.Errorf("create Database %s in %s: %w", name, env.Namespace, err)
			}
			return nil
		},
	}
}

// scaleDatabase sets the Database's spec.replicas with a merge patch, which
// bumps metadata.generation.
func scaleDatabase(name string, replicas int32) *Action {
	return &Action{
		What: fmt.Sprintf("scale Database %s to %s", name, lessons.Plural(int(replicas), "replica")),
		Act: func(ctx context.Context, env *Env) error {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}}) // a map of plain values: cannot fail
			db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace}}
			if err := env.Client.Patch(ctx, db, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("scale Database %s to %d: %w", name, replicas, err)
			}
			return nil
		},
	}
}

// setPitfall switches a pitfall on for the Database (controller's
// PitfallAnnotation), or off when pitfall is "", as the lab's menu does.
func setPitfall(name, pitfall string) *Action {
	what := fmt.Sprintf("switch pitfall %s on for Database %s", pitfall, name)
	var value any = pitfall
	if pitfall == "" {
		what, value = "switch Database "+name+"'s pitfall off", nil
	}
	return &Action{
		What: what,
		Act: func(ctx context.Context, env *Env) error {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{ // plain values: cannot fail
				controller.PitfallAnnotation: value, controller.PitfallHiddenAnnotation: nil,
			}}})
			db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace}}
			if err := env.Client.Patch(ctx, db, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("set the pitfall of Database %s: %w", name, err)
			}
			return nil
		},
	}
}

// deleteStatefulSet deletes the StatefulSet the Database owns, behind the
// controller's back, and notes its UID so the wait can tell the recreated
// one from it.
func deleteStatefulSet(name string) *Action {
	return &Action{
		What: fmt.Sprintf("delete Database %s's StatefulSet", name),
		Act: func(ctx context.Context, env *Env) error {
			sts, err := ownedStatefulSet(ctx, env, name)
			if err != nil {
				return err
			}
			if sts == nil {
				return fmt.Errorf("delete the StatefulSet of Database %s: it owns none right now", name)
			}
			env.note("statefulset/"+name, sts.UID)
			env.mark("statefulset/" + name)
			if err := env.Client.Delete(ctx, sts); err != nil {
				return fmt.Errorf("delete StatefulSet %s: %w", sts.Name, err)
			}
			return nil
		},
	}
}

// deleteDatabase asks for the Database's deletion and notes its UID: the
// final snapshot names it.
func deleteDatabase(name string) *Action {
	return &Action{
		What: "delete Database " + name,
		Act: func(ctx context.Context, env *Env) error {
			var db v1alpha1.Database
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &db); err != nil {
				return fmt.Errorf("read Database %s before deleting it: %w", name, err)
			}
			env.note("database/"+name, db.UID)
			env.mark("delete/" + name)
			if err := env.Client.Delete(ctx, &db, client.Preconditions{UID: &db.UID}); err != nil {
				return fmt.Errorf("delete Database %s: %w", name, err)
			}
			return nil
		},
	}
}

// pauseNamespace stands in for the controller dying: it stops reconciling
// this namespace only, holding its requests.
var pauseNamespace = &Action{
	What: "pause the controller for this namespace",
	Act: func(ctx context.Context, env *Env) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		env.paused.Store(true)
		env.Controller.PauseNamespace(env.Namespace)
		return nil
	},
}

// resumeNamespace brings the controller back for the namespace.
var resumeNamespace = &Action{
	What: "resume the controller for this namespace",
	Act: func(_ context.Context, env *Env) error {
		env.Controller.ResumeNamespace(env.Namespace)
		env.paused.Store(false)
		return nil
	},
}

func (env *Env) note(key string, uid types.UID) {
	if env.uids == nil {
		env.uids = map[string]types.UID{}
	}
	env.uids[key] = uid
}

// mark notes the timeline's last seq under key, just before an action.
func (env *Env) mark(key string) {
	if env.Timeline == nil {
		return
	}
	if env.marks == nil {
		env.marks = map[string]uint64{}
	}
	env.marks[key] = 0
	if msgs := env.Timeline.Export(env.Namespace).Messages; len(msgs) > 0 {
		var m trace.Message
		if json.Unmarshal(msgs[len(msgs)-1], &m) == nil {
			env.marks[key] = m.Seq
		}
	}
}

// ---- the waits ------------------------------------------------------------

// finalizerAdded waits for the controller's first reconcile: the finalizer
// on the Database.
func finalizerAdded(name string) *Wait {
	return &Wait{
		What: fmt.Sprintf("the controller to put its finalizer %s on Database %s", controller.Finalizer, name),
		Done: func(ctx context.Context, env *Env) (bool, string, error) {
			db, err := getDatabase(ctx, env, name)
			if err != nil || db == nil {
				return false, "Database " + name + " not found", err
			}
			if !slices.Contains(db.Finalizers, controller.Finalizer) {
				return false, fmt.Sprintf("finalizers %v", db.Finalizers), nil
			}
			if !onTimeline(env, "database/"+name, func(s controller.Step) bool {
				return s.Type == controller.StepFinalizer && s.Phase == "added" && isDatabase(s, name)
			}) {
				return false, "the finalizer on Database " + name + ", not yet on the timeline", nil
			}
			return true, "", nil
		},
	}
}

// timelineGrace is how long a wait that found the cluster as awaited
// waits for the row of it on the timeline. The row follows within
// milliseconds; it may never come (learner code that writes in a way the
// trace names otherwise, a row pushed out of a full ring), and a demo in
// front of a room must not hang on it.
const timelineGrace = 3 * time.Second

// onTimeline reports whether env's timeline holds, after the mark noted
// under key, a step that match accepts; true when env has no timeline, and
// true once the cluster has been as awaited for timelineGrace. The
// controller writes to the cluster first and puts the step on the timeline
// after: a wait that read the cluster alone could narrate the next step
// above the row of what the wait was for (a step that moves on at once
// does). Rows before the mark are an earlier run's, or an earlier object's
// of the same name.
func onTimeline(env *Env, key string, match func(controller.Step) bool) bool {
	if env.Timeline == nil {
		return true
	}
	// Newest first, and only back to the mark: a wait polls this every
	// 100 ms, and a full ring is thousands of rows.
	msgs := env.Timeline.Export(env.Namespace).Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		var m trace.Message
		if json.Unmarshal(msgs[i], &m) != nil || m.Type == trace.TypeState {
			continue
		}
		if m.Seq <= env.marks[key] {
			break
		}
		if match(m.Step) {
			return true
		}
	}
	now := time.Now
	if env.now != nil {
		now = env.now
	}
	if env.shownSince.IsZero() {
		env.shownSince = now()
	}
	return now().Sub(env.shownSince) >= timelineGrace
}

// isDatabase reports whether step s is about Database name.
func isDatabase(s controller.Step, name string) bool {
	return s.Database == name || s.Object.Kind == "Database" && s.Object.Name == name
}

// ready waits until the Database is Ready for its current spec: Ready=True
// and observedGeneration equal to generation, on the status and on the
// condition (a Ready that predates the spec is stale, not ready). With
// replicas > 0 the StatefulSet must also ask for that many.
func ready(name string, replicas int32) *Wait {
	what := fmt.Sprintf("Database %s to be Ready with observedGeneration caught up", name)
	if replicas > 0 {
		what = fmt.Sprintf("Database %s to be Ready at %d replicas with observedGeneration caught up", name, replicas)
	}
	return &Wait{
		What: what,
		Done: func(ctx context.Context, env *Env) (bool, string, error) {
			db, err := getDatabase(ctx, env, name)
			if err != nil || db == nil {
				return false, "Database " + name + " not found", err
			}
			c := meta.FindStatusCondition(db.Status.Conditions, controller.ConditionReady)
			seen := fmt.Sprintf("generation %d, observedGeneration %d, no Ready condition", db.Generation, db.Status.ObservedGeneration)
			if c != nil {
				seen = fmt.Sprintf("generation %d, observedGeneration %d, Ready=%s (%s, observed %d)", db.Generation, db.Status.ObservedGeneration, c.Status, c.Reason, c.ObservedGeneration)
			}
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != db.Generation || db.Status.ObservedGeneration != db.Generation {
				return false, seen, nil
			}
			// The write that made it so changed the Ready condition (its
			// status, or the generation it observed) at this generation.
			if !onTimeline(env, "database/"+name, func(s controller.Step) bool {
				return s.Type == controller.StepStatus && isDatabase(s, name) && !s.Skipped && s.Error == "" && s.ObservedGeneration == db.Generation &&
					slices.ContainsFunc(s.Conditions, func(c controller.ConditionChange) bool {
						return c.Type == controller.ConditionReady && c.To == string(metav1.ConditionTrue)
					})
			}) {
				return false, seen + ", the status write not yet on the timeline", nil
			}
			if replicas <= 0 {
				return true, seen, nil
			}
			sts, err := ownedStatefulSet(ctx, env, name)
			if err != nil || sts == nil {
				return false, seen + ", no StatefulSet", err
			}
			if sts.Spec.Replicas == nil || *sts.Spec.Replicas != replicas {
				return false, fmt.Sprintf("%s, StatefulSet replicas %v", seen, sts.Spec.Replicas), nil
			}
			return true, seen, nil
		},
	}
}

// statefulSetRecreated waits for a StatefulSet owned by the Database that
// is not the one deleteStatefulSet deleted.
func statefulSetRecreated(name string) *Wait {
	return &Wait{
		What: fmt.Sprintf("the controller to create Database %s's StatefulSet again", name),
		Done: func(ctx context.Context, env *Env) (bool, string, error) {
			sts, err := ownedStatefulSet(ctx, env, name)
			if err != nil || sts == nil {
				return false, "no StatefulSet owned by " + name, err
			}
			if sts.UID == env.uids["statefulset/"+name] {
				return false, "the deleted StatefulSet, still there (being deleted)", nil
			}
			if !onTimeline(env, "statefulset/"+name, func(s controller.Step) bool {
				return s.Type == controller.StepAction && s.Action == "create" && s.Outcome == controller.OutcomeCreated &&
					s.Target != nil && s.Target.Kind == "StatefulSet" && s.Target.Name == sts.Name && s.Database == name
			}) {
				return false, "a new StatefulSet " + sts.Name + ", its create not yet on the timeline", nil
			}
			return true, "", nil
		},
	}
}

// heldTerminating waits until the Database is being deleted and the
// finalizer still holds it.
func heldTerminating(name string) *Wait {
	return &Wait{
		What: fmt.Sprintf("Database %s to be Terminating, held by its finalizer", name),
		Done: func(ctx context.Context, env *Env) (bool, string, error) {
			db, err := getDatabase(ctx, env, name)
			if err != nil || db == nil {
				return false, "Database " + name + " gone", err
			}
			held := false
			for _, f := range db.Finalizers {
				held = held || f == controller.Finalizer
			}
			if db.DeletionTimestamp == nil || !held {
				return false, fmt.Sprintf("deletionTimestamp %v, finalizers %v", db.DeletionTimestamp, db.Finalizers), nil
			}
			// Setting deletionTimestamp on an object with finalizers bumps
			// its generation: the watch event of that generation is the
			// delete as the controller saw it (held, while paused).
			if !onTimeline(env, "delete/"+name, func(s controller.Step) bool {
				return s.Type == controller.StepEvent && s.Event == "update" && s.Object.Kind == "Database" && s.Object.Name == name &&
					s.Generation == db.Generation
			}) {
				return false, "Database " + name + " Terminating, its watch event not yet on the timeline", nil
			}
			return true, "", nil
		},
	}
}

// snapshotTaken waits until the deleted Database is gone and its final
// snapshot, naming its UID, is kept.
func snapshotTaken(name string) *Wait {
	return &Wait{
		What: fmt.Sprintf("Database %s to be gone, with its final snapshot %s kept", name, controller.SnapshotName(name)),
		Done: func(ctx context.Context, env *Env) (bool, string, error) {
			var cm corev1.ConfigMap
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: controller.SnapshotName(name)}, &cm)
			if apierrors.IsNotFound(err) {
				return false, "no snapshot ConfigMap yet", nil
			}
			if err != nil {
				return false, "", err
			}
			if types.UID(cm.Data["uid"]) != env.uids["database/"+name] {
				return false, "only an older Database's snapshot", nil
			}
			db, err := getDatabase(ctx, env, name)
			if err != nil {
				return false, "", err
			}
			if db != nil {
				return false, fmt.Sprintf("snapshot written; Database still there, finalizers %v", db.Finalizers), nil
			}
			if !onTimeline(env, "delete/"+name, func(s controller.Step) bool {
				return s.Type == controller.StepFinalizer && s.Phase == "removed" && isDatabase(s, name)
			}) {
				return false, "Database " + name + " gone, its finalizer's removal not yet on the timeline", nil
			}
			return true, "", nil
		},
	}
}

// getDatabase reads the Database, or nil when there is none.
func getDatabase(ctx context.Context, env *Env, name string) (*v1alpha1.Database, error) {
	var db v1alpha1.Database
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &db)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Database %s: %w", name, err)
	}
	return &db, nil
}

// ownedStatefulSet finds the StatefulSet the Database controls by its
// ownerReference, as the garbage collector would; nil when there is none.
func ownedStatefulSet(ctx context.Context, env *Env, name string) (*appsv1.StatefulSet, error) {
	db, err := getDatabase(ctx, env, name)
	if err != nil || db == nil {
		return nil, err
	}
	var list appsv1.StatefulSetList
	if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
		return nil, fmt.Errorf("list StatefulSets in %s: %w", env.Namespace, err)
	}
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == db.UID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// about is the one Database the script is about, or "" when it makes
// more than one.
func (s Script) about() string {
	if len(s.Databases) == 1 {
		return s.Databases[0]
	}
	return ""
}
