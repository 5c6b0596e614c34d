package sandbox

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/traefik/yaegi/interp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/sandbox/conformance"
	"github.com/oplab-dev/oplab/controller/sandbox/conformance/refused"
	"github.com/oplab-dev/oplab/controller/sandbox/symbols"
)

// The conformance corpus (package conformance) runs twice: compiled, as
// Go runs it, and in a real sandbox child, as learner code. Each file is
// one learner file; the test adds the reconciler that calls its functions
// and returns their answers as its error, and compares them with Go's.

// The corpus runs; refusedDir's files the sandbox must refuse. cases.go
// is each one's index, not a snippet.
const (
	conformanceDir = "conformance"
	refusedDir     = "conformance/refused"
)

// conformanceObjects are what the client cases find, on both sides.
func conformanceObjects() []client.Object {
	return []client.Object{&dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "learner", Name: "shop"}, Spec: dbv1.DatabaseSpec{Replicas: 3}}}
}

// corpusFile is one file of the corpus: its source and the functions it
// declares, with and without a client; for a refused one, where the
// refusal must point and words it must say.
type corpusFile struct {
	name       string
	src        string
	plain      []string
	withClient []string

	refusedLine  int
	refusedWords string
}

// refusalMark marks the line a refusal points at, and what it says.
const refusalMark = "// sandbox: "

func readCorpus(t testing.TB, dir string) []corpusFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []corpusFile
	for _, p := range paths {
		if filepath.Base(p) == "cases.go" || strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, b, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		cf := corpusFile{name: filepath.Base(p), src: string(b)}
		for i, line := range strings.Split(cf.src, "\n") {
			if _, words, ok := strings.Cut(line, refusalMark); ok {
				cf.refusedLine, cf.refusedWords = i+1, words
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() {
				continue
			}
			switch n := fd.Type.Params.NumFields(); {
			case n == 0:
				cf.plain = append(cf.plain, fd.Name.Name)
			case n == 2:
				cf.withClient = append(cf.withClient, fd.Name.Name)
			default:
				t.Fatalf("%s: %s: a case takes nothing, or a context and a client", p, fd.Name.Name)
			}
		}
		files = append(files, cf)
	}
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	return files
}

// conformanceHarness is added to a corpus file to make it a reconciler:
// its imports go on the package clause's line, so no line of the file
// moves, and the reconciler after it.
const conformanceHarness = `

type DatabaseReconciler struct {
	cfclient.Client
	Scheme *cfruntime.Scheme
}

func (r *DatabaseReconciler) Reconcile(ctx cfcontext.Context, req cfctrl.Request) (cfctrl.Result, error) {
	var out []string
%s	return cfctrl.Result{}, cferrors.New(cfstrings.Join(out, "\n"))
}

func cfRun(f func() string) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = cffmt.Sprint("panic: ", r)
		}
	}()
	return f()
}
`

const conformanceImports = `; import (cfcontext "context"; cferrors "errors"; cffmt "fmt"; cfstrings "strings"; ` +
	`cfruntime "k8s.io/apimachinery/pkg/runtime"; cfctrl "sigs.k8s.io/controller-runtime"; cfclient "sigs.k8s.io/controller-runtime/pkg/client")`

// asLearnerCode is cf as the sandbox runs it.
func (cf corpusFile) asLearnerCode() string {
	var calls strings.Builder
	for _, n := range cf.plain {
		fmt.Fprintf(&calls, "\tout = append(out, %q+\"\\t\"+cfRun(%s))\n", n, n)
	}
	for _, n := range cf.withClient {
		fmt.Fprintf(&calls, "\tout = append(out, %q+\"\\t\"+cfRun(func() string { return %s(ctx, r.Client) }))\n", n, n)
	}
	pkg, _, _ := strings.Cut(cf.src[strings.Index(cf.src, "package "):], "\n")
	src := strings.Replace(cf.src, pkg, pkg+conformanceImports, 1)
	return src + fmt.Sprintf(conformanceHarness, calls.String())
}

// goAnswer is what the compiled case says, a panic as the harness says it.
func goAnswer(f func() string) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprint("panic: ", r)
		}
	}()
	return f()
}

// Every exported function of the corpus is in its index, so the compiled
// side runs what the sandbox runs.
func TestConformanceCasesAreListed(t *testing.T) {
	for _, cf := range readCorpus(t, refusedDir) {
		for _, n := range append(cf.plain, cf.withClient...) {
			if refused.Cases[n] == nil {
				t.Errorf("%s: %s is not in refused.Cases", cf.name, n)
			}
		}
		if cf.refusedLine == 0 {
			t.Errorf("%s has no %q line", cf.name, refusalMark)
		}
	}
	for _, cf := range readCorpus(t, conformanceDir) {
		for _, n := range cf.plain {
			if conformance.Cases[n] == nil {
				t.Errorf("%s: %s is not in conformance.Cases", cf.name, n)
			}
		}
		for _, n := range cf.withClient {
			if conformance.ClientCases[n] == nil {
				t.Errorf("%s: %s is not in conformance.ClientCases", cf.name, n)
			}
		}
	}
}

// TestConformance runs each corpus file compiled and in the sandbox and
// compares every function's answer.
func TestConformance(t *testing.T) {
	s := testSandbox(t)
	ctx := context.Background()
	for _, cf := range readCorpus(t, conformanceDir) {
		t.Run(strings.TrimSuffix(cf.name, ".go"), func(t *testing.T) {
			want := map[string]string{}
			for _, n := range cf.plain {
				want[n] = goAnswer(conformance.Cases[n])
			}
			for _, n := range cf.withClient {
				c := fakeClient(conformanceObjects()...)
				want[n] = goAnswer(func() string { return conformance.ClientCases[n](ctx, c) })
			}
			if serr := s.Compile(ctx, cf.asLearnerCode()); serr != nil {
				t.Fatalf("the sandbox refused the file: %v", serr)
			}
			_, err := s.Reconcile(ctx, fakeClient(conformanceObjects()...), req)
			se, ok := AsSourceError(err)
			if !ok || se.Kind != "error" {
				t.Fatalf("the harness did not answer: %v", err)
			}
			got := map[string]string{}
			for _, line := range strings.Split(se.Message, "\n") {
				n, answer, _ := strings.Cut(line, "\t")
				got[n] = answer
			}
			names := append(slices.Clone(cf.plain), cf.withClient...)
			for _, n := range names {
				t.Logf("%s: %q", n, got[n])
				if got[n] != want[n] {
					t.Errorf("%s:\n  Go:      %q\n  sandbox: %q", n, want[n], got[n])
				}
			}
		})
	}
}

// TestConformanceRefusals compiles each file of the refused corpus in the
// sandbox: it must be refused, at the marked line, in the marked words.
// Go's own answers are logged, to say what the sandbox declined to get
// wrong.
func TestConformanceRefusals(t *testing.T) {
	s := testSandbox(t)
	ctx := context.Background()
	for _, cf := range readCorpus(t, refusedDir) {
		t.Run(strings.TrimSuffix(cf.name, ".go"), func(t *testing.T) {
			for _, n := range cf.plain {
				t.Logf("Go: %s: %q", n, goAnswer(refused.Cases[n]))
			}
			serr := s.Compile(ctx, cf.asLearnerCode())
			if serr == nil {
				t.Fatalf("the sandbox ran it")
			}
			if serr.Kind != "compile" || serr.Line != cf.refusedLine || !strings.Contains(serr.Message, cf.refusedWords) {
				t.Fatalf("got %v (%s), want a refusal at line %d saying %q", serr, serr.Kind, cf.refusedLine, cf.refusedWords)
			}
			t.Logf("refused: %v", serr)
		})
	}
}

// withoutRewrites are the corpus's cases the interpreter answers unlike Go
// when the child does not rewrite them, each with what it did: the
// constructs the rewrites exist for. A case that turns right on its own (a
// newer yaegi) fails this test, so that its rewrite can go.
var withoutRewrites = map[string]string{
	"AssignFieldsWithCall":             "False Before 3/3",
	"AssignInStatementSlots":           "[5 4 3 2 1] 5 0",
	"AssignIndexEvaluatedFirst":        "1 [9 0 0] 2 map[2:one]",
	"AssignIntoConditions":             "n=0n=1",
	"AssignValueThenCall":              "0 777 0",
	"ClearAMap":                        "not run: undefined: clear",
	"CombosCapturedLoopWithTwoVars":    "32,32,32",
	"CombosMethodValueLast":            "error: reflect.Value.Call: call of nil function",
	"CombosDeferInLoopWithMethodValue": "333",
	"CombosDeferredAssign":             "Xy",
	"CombosTypeSwitchInLoop":           "3other,3other,3other",
	"ClosuresDeferInLoop":              "333",
	"ClosuresForLoop":                  "3,3,3",
	"ClosuresLoopPointers":             "ccc3 3 3",
	"ClosuresLoopVarChangedInBody":     "6,6,6",
	"ClosuresRangeLoop":                "3c,3c,3c",
	"ConstsIota":                       "0 1 3 2 1024 1048576 1024 5 2",
	"DeferInLiteralOfLaterFunction":    "body;",
	"DeferMethodValue":                 "[second second]",
	"DeferOrder":                       "[closure2 arg2]",
	"DeferRecoverValue":                "false",
	"EmbeddingInterface":               "not run: too many arguments",
	"MethodsExpressions":               "error: reflect: Call with too many input arguments",
	"MethodsOfAPITypes":                "error: reflect.Set: value of type func() string is not assignable to type func(*v1alpha1.Database) string",
	"MethodsStringerThroughFmt":        "{7} &{7} gauge(7) {7}|{%!s(int=7)}",
	"MethodsValueBindsACopy":           "3 3 3",
	"MinMax":                           "not run: undefined: min",
	"RangeIntCaptured":                 "not run: panic: nil type",
	"RangeIntNested":                   "not run: panic: nil type",
	"RangeIntForms":                    "not run: panic: nil type",
	"ReconcileConditions":              "true false true False Available3 100 false 1",
	"SwitchesTypeSwitch":               "nil,integer 1,integer 2,string S,other *errors.errorString,stringer 1s,secret ,object ,other float64",
}

// TestConformanceNeedsTheRewrites runs the corpus's plain cases in an
// interpreter in this process, as the child would without rewrite.go,
// and lists those whose answers differ from Go's.
func TestConformanceNeedsTheRewrites(t *testing.T) {
	got := map[string]string{}
	for _, cf := range readCorpus(t, conformanceDir) {
		pkg, serr := Check(cf.src)
		if serr != nil {
			t.Fatal(serr)
		}
		in, serr := prepareWith(cf.src, pkg, false)
		if serr != nil {
			t.Fatal(serr)
		}
		i := interp.New(interp.Options{SourcecodeFilesystem: fstest.MapFS{}, Stdout: io.Discard, Stderr: io.Discard})
		if err := i.Use(symbols.Symbols); err != nil {
			t.Fatal(err)
		}
		evalErr := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			_, err = i.Eval(in.src)
			return err
		}()
		for _, n := range cf.plain {
			want := goAnswer(conformance.Cases[n])
			var answer string
			if evalErr != nil {
				answer = "not run: " + stripPos(evalErr.Error())
			} else {
				answer = func() (s string) {
					defer func() {
						if r := recover(); r != nil {
							s = fmt.Sprint("panic: ", r)
						}
					}()
					v, err := i.Eval(pkg + "." + n + "()")
					if err != nil {
						return "error: " + err.Error()
					}
					return v.String()
				}()
			}
			if answer != want {
				got[n] = answer
			}
		}
	}
	names := slices.Sorted(maps.Keys(got))
	for _, n := range names {
		t.Logf("%s: %q", n, got[n])
	}
	if len(got) == 0 {
		t.Fatal("the interpreter answers every case as Go does without the rewrites")
	}
	for n := range withoutRewrites {
		if _, ok := got[n]; !ok {
			t.Errorf("%s: the interpreter now answers as Go does without the rewrites", n)
		}
	}
	for _, n := range names {
		if _, ok := withoutRewrites[n]; !ok {
			t.Errorf("%s is not listed in withoutRewrites: %q", n, got[n])
		}
	}
}
