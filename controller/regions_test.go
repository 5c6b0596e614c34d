package controller_test

import (
	"regexp"
	"testing"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
)

// pitfallsLesson is the slug of the lesson about the pitfalls: the one page
// whose regions may show a pitfall's code.
const pitfallsLesson = "pitfalls-interview"

// plumbing matches what an ordinary reconciler does not have: the trace
// (steps, sinks, notes, the tracer) and the pitfall switches.
var plumbing = regexp.MustCompile(`(?i)\b(trace\w*|tracer|rt|step|steps|sink|emit|note|pitfall\w*|thrash\w*)\b`)

// TestLessonRegionsReadLikeAnOrdinaryReconciler fails when the code a lesson
// shows mentions the tracer or a pitfall: learners copy what they read.
func TestLessonRegionsReadLikeAnOrdinaryReconciler(t *testing.T) {
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	regions, err := lessons.Regions(controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, l := range course.Lessons {
		if l.Slug == pitfallsLesson {
			continue
		}
		for _, name := range l.Code {
			r, ok := regions[name]
			if !ok {
				t.Errorf("%s shows region %s, which is not marked", l.Slug, name)
				continue
			}
			checked++
			for i, line := range regexp.MustCompile("\n").Split(r.Code, -1) {
				if m := plumbing.FindString(line); m != "" {
					t.Errorf("%s: region %s (%s:%d) mentions %q: %s", l.Slug, name, r.File, r.Start+i, m, line)
				}
			}
		}
	}
	for _, name := range []string{"reconcile-loop", "already-exists", "finalizer", "status-write"} {
		if _, ok := regions[name]; !ok {
			t.Errorf("region %s is not marked", name)
		}
	}
	if checked == 0 {
		t.Error("no lesson region was checked")
	}
}

// TestPlumbingPatternCatches keeps the check above honest: it must flag the
// plumbing the regions used to carry.
func TestPlumbingPatternCatches(t *testing.T) {
	for _, line := range []string{
		`rt.step(Step{Type: StepFetch})`,
		`if rt.pitfall == PitfallNoFinalizer {`,
		`note(ctx, diffStep(k.kind, desired, nil))`,
		`began := rt.now()`,
		`r.tr.emit(s)`,
	} {
		if !plumbing.MatchString(line) {
			t.Errorf("plumbing pattern misses %q", line)
		}
	}
	for _, line := range []string{
		`if err := r.client.Get(ctx, req.NamespacedName, &db); err != nil {`,
		`return ctrl.Result{}, r.removeFinalizer(ctx, db)`,
	} {
		if plumbing.MatchString(line) {
			t.Errorf("plumbing pattern flags ordinary code %q", line)
		}
	}
}
