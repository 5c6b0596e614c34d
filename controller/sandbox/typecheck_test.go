package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

// TestEveryTypeErrorIsGosOwn: code the interpreter alone would run (an
// unused variable, an unused import) is refused as go build refuses it,
// every error at once, in Go's words, each with its line and column.
func TestEveryTypeErrorIsGosOwn(t *testing.T) {
	s := testSandbox(t)
	src := learner("\t\"strings\"\n", "\tunused := 42\n\tvar n int = \"three\"\n\t_ = n\n\treturn ctrl.Result{}, nil")
	serr := s.Compile(context.Background(), src)
	if serr == nil {
		t.Fatal("compiled")
	}
	// As go build (cmd/compile) words them.
	want := []SourceError{
		{Kind: "compile", Message: `"strings" imported and not used`, Line: 9, Col: 2},
		{Kind: "compile", Message: "declared and not used: unused", Line: 18, Col: 2},
		{Kind: "compile", Message: `cannot use "three" (untyped string constant) as int value in variable declaration`, Line: 19, Col: 14},
	}
	if len(serr.Errors) != len(want) {
		t.Fatalf("got %d errors %+v, want %d (%v)", len(serr.Errors), serr.Errors, len(want), serr)
	}
	for i, w := range want {
		if g := serr.Errors[i]; g.Message != w.Message || g.Line != w.Line || g.Col != w.Col || g.Kind != w.Kind {
			t.Errorf("error %d: got %+v, want %+v", i, g, w)
		}
	}
	if serr.Line != 9 || serr.Col != 2 || !strings.HasPrefix(serr.Message, `"strings" imported and not used (and 2 more errors, on lines 18, 19)`) {
		t.Errorf("first: got %+v", serr)
	}
	t.Logf("%v", serr)

	// One error: no list.
	serr = s.Compile(context.Background(), learner("", "\tunused := 42\n\treturn ctrl.Result{}, nil"))
	if serr == nil || serr.Message != "declared and not used: unused" || serr.Line != 17 || serr.Col != 2 || serr.Errors != nil {
		t.Fatalf("got %+v, want Go's declared and not used at 17:2", serr)
	}
}

// A name the export data knows but the sandbox's tables leave out is
// refused by name, with what the package has.
func TestUnavailableSymbolIsNamed(t *testing.T) {
	s := testSandbox(t)
	serr := s.Compile(context.Background(), learner("\t\"fmt\"\n", "\tfmt.Println(\"hi\")\n\treturn ctrl.Result{}, nil"))
	if serr == nil || serr.Line != 18 || serr.Col != 6 ||
		serr.Message != "fmt.Println is not available in the sandbox; from fmt it has Errorf, Sprint, Sprintf, Sprintln, Stringer" {
		t.Fatalf("got %+v", serr)
	}
}

// A binary built without the generated archive says how to make it.
func TestMissingTypeDataSaysHowToBuildIt(t *testing.T) {
	_, err := openTypeData(fstest.MapFS{"exportdata/README.md": {}})
	if !errors.Is(err, errNoTypeData) || !strings.Contains(err.Error(), "go run ./cmd/sandboxtypes") {
		t.Fatalf("got %v", err)
	}
	zr, err := typeData()
	if err != nil {
		t.Fatalf("the test binary has no type data: %v", err)
	}
	// Exactly the packages learner code may import.
	var got []string
	for _, f := range zr.File {
		got = append(got, f.Name)
	}
	if want := ImportPaths(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("archive has %v, the sandbox allows %v (run go run ./cmd/sandboxtypes)", got, want)
	}
}

// After rewriting, an error the interpreter reports is still at the
// learner's column, and a panic at the learner's statement: here behind
// a rewritten assignment on the same line.
func TestRewrittenCodeKeepsItsColumns(t *testing.T) {
	s := testSandbox(t)
	// The interpreter refuses the last statement (a type of the code's
	// own implementing an API interface through an embedded struct).
	src := learner("\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n", "\ta, b := 1, 2; a, b = b, len(req.Name); h := &holder{}; var obj metav1.Object = h\n"+
		"\t_, _, _ = a, b, obj\n\treturn ctrl.Result{}, nil") + "\ntype holder struct{ metav1.ObjectMeta }\n"
	serr := s.Compile(context.Background(), src)
	col := strings.LastIndex(strings.Split(src, "\n")[17], "h") + 1
	if serr == nil || serr.Line != 18 || serr.Col != col || !strings.Contains(serr.Message, "cannot run it") {
		t.Fatalf("got %+v, want the interpreter's error at 18:%d", serr, col)
	}
	// A panic in the second of two rewritten statements of one line.
	src = learner("", "\tvar m map[string]int\n\tx, y := 0, 0; x, y = y, len(req.Name); m[\"k\"], x = 1, len(req.Name)\n\t_ = x\n\treturn ctrl.Result{}, nil")
	compileOK(t, s, src)
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	se, ok := AsSourceError(err)
	col = strings.Index(strings.Split(src, "\n")[17], "m[") + 1
	if !ok || se.Kind != "panic" || se.Line != 18 || se.Col != col || !strings.Contains(se.Message, "nil map") {
		t.Fatalf("got %v (%+v), want the nil map's panic at 18:%d", err, se, col)
	}
}

// The starters type-check as Go: none has an error go build would
// report (TestStartersCompile compiles them in a child).
func TestStartersTypeCheck(t *testing.T) {
	for _, st := range starters.All {
		src := starters.Source(st.ID)
		pkg, serr := Check(src)
		if serr != nil {
			t.Fatalf("%s: %v", st.ID, serr)
		}
		if _, serr := prepare(src, pkg); serr != nil {
			t.Errorf("%s: %v", st.ID, serr)
		}
	}
}
