package controller_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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
	for _, name := range []string{"reconcile-loop", "already-exists", "finalizer", "status-write", "controller-wiring"} {
		if _, ok := regions[name]; !ok {
			t.Errorf("region %s is not marked", name)
		}
	}
	if checked == 0 {
		t.Error("no lesson region was checked")
	}
}

// TestControllerWiringRegionIsTheBooksShape keeps the wiring lessons show
// in the shape learners will meet elsewhere: For the Database, Owns each
// child, Complete with the reconciler itself.
func TestControllerWiringRegionIsTheBooksShape(t *testing.T) {
	regions, err := lessons.Regions(controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	// Whitespace aside: the chain may be broken over lines.
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	code := regions["controller-wiring"].Code
	for _, want := range []string{
		"func (r *DatabaseReconciler) SetupWithManager(mgr ctrl.Manager) error",
		"ctrl.NewControllerManagedBy(mgr)", ".For(&dbv1.Database{})", ".Owns(&corev1.Secret{})",
		".Owns(&corev1.Service{})", ".Owns(&appsv1.StatefulSet{})", `.Named("database")`, ".Complete(r)",
	} {
		if !strings.Contains(squash(code), squash(want)) {
			t.Errorf("region controller-wiring lacks %q:\n%s", want, code)
		}
	}
}

// reconcilerFiles are the files that hold the reconciler itself. They must
// read as the ordinary reconciler: the trace and the pitfalls wrap it from
// outside, so none of them is named here, in code or in a call.
func reconcilerFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("database_*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(append(files, "children.go", "conditions.go", "pods.go"), func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	if len(files) < 6 {
		t.Fatalf("found only %v", files)
	}
	return files
}

// plumbingIdent matches the identifiers of the trace and the pitfalls.
var plumbingIdent = regexp.MustCompile(`^(?i:rt|trace\w*|note\w*|emit\w*|sink\w*|step\w*|pitfall\w*|thrash\w*|diffStep)$`)

// plumbingIdents lists the identifiers of src that belong to the trace or
// the pitfalls, with their positions. Comments are not code: they may say
// "step 2".
func plumbingIdents(t *testing.T, file string, src any) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && plumbingIdent.MatchString(id.Name) {
			found = append(found, fset.Position(id.Pos()).String()+" "+id.Name)
		}
		return true
	})
	return found
}

// TestReconcilerHoldsNoPlumbing fails when a trace call or a pitfall branch
// creeps back into the reconciler's own files.
func TestReconcilerHoldsNoPlumbing(t *testing.T) {
	for _, f := range reconcilerFiles(t) {
		for _, hit := range plumbingIdents(t, f, nil) {
			t.Errorf("the reconciler mentions the trace or a pitfall: %s", hit)
		}
	}
}

// TestPlumbingPatternCatches keeps the checks above honest: they must flag
// the plumbing the regions and the reconciler used to carry.
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
		`if err := r.Client.Get(ctx, req.NamespacedName, &db); err != nil {`,
		`return ctrl.Result{}, r.removeFinalizer(ctx, db)`,
	} {
		if plumbing.MatchString(line) {
			t.Errorf("plumbing pattern flags ordinary code %q", line)
		}
	}
	old := `package controller
// finish is step 5: a comment may say so.
func (r *DatabaseReconciler) finish(ctx context.Context, db *dbv1.Database, obs observation) {
	if PitfallOf(db) == PitfallStatusThrash {
		r.thrashStatus(ctx, db, obs)
	}
	note(ctx, diffStep(k.kind, desired, nil))
}`
	got := strings.Join(plumbingIdents(t, "old.go", old), "\n")
	for _, want := range []string{"PitfallOf", "PitfallStatusThrash", "thrashStatus", "note", "diffStep"} {
		if !strings.Contains(got, " "+want) {
			t.Errorf("plumbing identifiers miss %s in:\n%s\nfound:\n%s", want, old, got)
		}
	}
	if strings.Contains(got, "step") {
		t.Errorf("a comment was taken for code: %s", got)
	}
	clean := "package controller\nfunc (r *DatabaseReconciler) ensureSecret(ctx context.Context, db *dbv1.Database) (bool, error) { return r.getOrCreate(ctx, nil, nil) }"
	if got := plumbingIdents(t, "clean.go", clean); len(got) != 0 {
		t.Errorf("plumbing identifiers flag ordinary code: %v", got)
	}
}

// regionMarker matches a line that opens a lesson region.
var regionMarker = regexp.MustCompile(`(?m)^\s*// lesson:begin [a-z0-9-]+\s*$`)

// TestSourceEmbedsEveryRegion fails when a source file with a lesson region
// is not embedded (the lesson would lose it) or an embedded file has none
// (the binary would carry it for nothing).
func TestSourceEmbedsEveryRegion(t *testing.T) {
	embedded, err := fs.Glob(controller.Source, "*")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hasRegion := regionMarker.Match(src)
		switch in := slices.Contains(embedded, f); {
		case hasRegion && strings.HasSuffix(f, "_test.go"):
			t.Errorf("%s is a test file with a lesson region: lessons read only the compiled code", f)
		case hasRegion && !in:
			t.Errorf("%s has a lesson region but controller.Source does not embed it (source.go)", f)
		case !hasRegion && in:
			t.Errorf("controller.Source embeds %s, which has no lesson region", f)
		}
		if hasRegion {
			marked++
		}
	}
	if marked == 0 {
		t.Error("no source file has a lesson region")
	}
	for _, f := range embedded {
		if strings.HasSuffix(f, "_test.go") {
			t.Errorf("controller.Source embeds the test file %s", f)
		}
	}
	// Every region a lesson names is cut from an embedded file.
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatalf("the lessons do not load from the embedded source: %v", err)
	}
	regions, err := lessons.Regions(controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range course.Lessons {
		for _, name := range l.Code {
			if r, ok := regions[name]; !ok || !slices.Contains(embedded, r.File) {
				t.Errorf("lesson %s names region %s, not found in the embedded files %v", l.Slug, name, embedded)
			}
		}
	}
}
