package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/traefik/yaegi/interp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/oplab-dev/oplab/controller/sandbox/symbols"
)

// ChildArg is the hidden subcommand that runs the child: `oplab sandbox`.
const ChildArg = "sandbox"

// maxMessage bounds one protocol line (a source file, an object, a list).
const maxMessage = 8 << 20

// RunChild is the sandbox child's main: it limits itself (limits_linux.go),
// then compiles and runs learner code as the parent asks over in and out.
// It returns the process's exit code. It is the only place learner code is
// ever interpreted, and it runs in a process of its own (see Sandbox).
func RunChild(in io.Reader, out io.Writer) int {
	if err := limitSelf(); err != nil {
		fmt.Fprintln(out, `{"op":"result","error":{"kind":"crash","message":"the sandbox could not limit itself"}}`)
		return 1
	}
	layers, err := fence()
	if err != nil {
		// Learner code never runs unfenced.
		_ = json.NewEncoder(out).Encode(message{Op: opResult, Error: &SourceError{Kind: "crash", Message: "the sandbox could not fence itself in: " + err.Error()}})
		return 1
	}
	dec := json.NewDecoder(bufio.NewReaderSize(io.LimitReader(in, 1<<40), 64<<10))
	enc := json.NewEncoder(out)
	ch := &child{enc: enc, dec: dec, scheme: newScheme()}
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			// The parent closed the pipe (or spoke nonsense): nothing left to do.
			return 0
		}
		var resp message
		switch m.Op {
		case opCompile:
			resp = message{Op: opCompiled, Error: ch.compile(m.Source), Fence: layers}
		case opReconcile:
			resp = ch.reconcile(m.Namespace, m.Name)
		case opProbe:
			if childProbe == nil {
				resp = message{Op: opResult, Error: &SourceError{Kind: "crash", Message: "unexpected message " + strconv.Quote(m.Op)}}
				break
			}
			resp = message{Op: opProbed, Output: childProbe(m.Source)}
		default:
			resp = message{Op: opResult, Error: &SourceError{Kind: "crash", Message: "unexpected message " + strconv.Quote(m.Op)}}
		}
		if err := enc.Encode(resp); err != nil {
			return 0
		}
	}
}

// childProbe, set only in this package's tests (fence_probe_test.go),
// tries from inside a fenced child what an escape from the interpreter
// would try first, and reports what the kernel answered. oplab's binary
// has no probe: the op is unknown to it.
var childProbe func(arg string) string

type reconcileFunc = func(context.Context, ctrl.Request) (ctrl.Result, error)

type child struct {
	enc    *json.Encoder
	dec    *json.Decoder
	scheme *runtime.Scheme
	// output collects what the code prints (print, println, and the
	// interpreter's own panic reports), for the line of a panic.
	output bytes.Buffer
	run    reconcileFunc
	// where is the line and column of the last statement the code began
	// (where.go), read after a panic; nil before a compile.
	where func() (int, int)
	// broken is set when reading a reply failed: the child then only exits.
	broken bool
}

// ask sends one facade call and waits for the parent's reply.
func (ch *child) ask(c call) reply {
	if ch.broken {
		return reply{Error: "the sandbox lost its parent"}
	}
	if err := ch.enc.Encode(message{Op: opCall, Call: &c}); err != nil {
		ch.broken = true
		return reply{Error: "the sandbox lost its parent"}
	}
	var m message
	if err := ch.dec.Decode(&m); err != nil || m.Op != opReply || m.Reply == nil {
		ch.broken = true
		return reply{Error: "the sandbox lost its parent"}
	}
	return *m.Reply
}

// The glue the child adds after the learner's file, in the same package:
// it builds the reconciler as a kubebuilder main.go does and hands out its
// Reconcile method.
const glue = `package %s

import (
	oplabcontext "context"
	oplabruntime "k8s.io/apimachinery/pkg/runtime"
	oplabctrl "sigs.k8s.io/controller-runtime"
	oplabclient "sigs.k8s.io/controller-runtime/pkg/client"
)

func OplabNewReconciler(c oplabclient.Client, s *oplabruntime.Scheme) func(oplabcontext.Context, oplabctrl.Request) (oplabctrl.Result, error) {
	r := &DatabaseReconciler{Client: c, Scheme: s}
	return r.Reconcile
}
`

// compile checks src, interprets its declarations and keeps its
// DatabaseReconciler's Reconcile for the reconciles to come.
func (ch *child) compile(src string) *SourceError {
	ch.run, ch.where = nil, nil
	pkg, serr := Check(src)
	if serr != nil {
		return serr
	}
	in, serr := prepareSafely(src, pkg)
	if serr != nil {
		return serr
	}
	ch.output.Reset()
	i := interp.New(interp.Options{
		// No environment, no arguments, no standard input; output only
		// into a buffer; and an empty file system for source imports, so
		// an import of anything not whitelisted finds nothing.
		Env:                  nil,
		Args:                 []string{},
		Stdin:                strings.NewReader(""),
		Stdout:               limitedWriter{&ch.output, 64 << 10},
		Stderr:               limitedWriter{&ch.output, 64 << 10},
		SourcecodeFilesystem: fstest.MapFS{},
	})
	if err := i.Use(symbols.Symbols); err != nil {
		return &SourceError{Kind: "crash", Message: "loading the sandbox's packages: " + err.Error()}
	}
	if err := i.Use(rtExports); err != nil {
		return &SourceError{Kind: "crash", Message: "loading the sandbox's packages: " + err.Error()}
	}
	var se *SourceError
	func() {
		defer func() {
			if r := recover(); r != nil {
				se = ch.panicError(r)
			}
		}()
		if _, err := i.Eval(in.src); err != nil {
			se = errorAt("compile", err.Error())
			if se.Col > 0 {
				se.Col = in.column(se.Line, se.Col)
			}
			// Go's type checker accepted the code (prepare): this is
			// the interpreter's limit, not the learner's mistake.
			se.Message = "Go accepts this, but the sandbox's interpreter cannot run it: " + se.Message
			return
		}
		if v, err := i.Eval(pkg + ".OplabWhere"); err == nil {
			ch.where, _ = v.Interface().(func() (int, int))
		}
		if _, err := i.Eval(fmt.Sprintf(glue, pkg)); err != nil {
			se = &SourceError{Kind: "compile", Message: "oplab runs your code as kubebuilder does: it needs " +
				"`type DatabaseReconciler struct { client.Client; Scheme *runtime.Scheme }` and its method " +
				"`Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error)` (" + stripPos(err.Error()) + ")"}
			return
		}
		v, err := i.Eval(pkg + ".OplabNewReconciler")
		if err != nil {
			se = &SourceError{Kind: "compile", Message: "finding DatabaseReconciler: " + err.Error()}
			return
		}
		newRec, ok := v.Interface().(func(symbols.Client, *runtime.Scheme) reconcileFunc)
		if !ok {
			se = &SourceError{Kind: "compile", Message: "DatabaseReconciler.Reconcile has the wrong signature: " + reflect.TypeOf(v.Interface()).String()}
			return
		}
		ch.run = newRec(symbols.NewClient(&facade{ask: ch.ask, scheme: ch.scheme}), ch.scheme)
	}()
	return se
}

// prepareSafely is prepare, with a panic in the type checker or the
// rewrites (a bug, or an input no one foresaw) a compile error rather
// than the child's end.
func prepareSafely(src, pkg string) (in instrumented, se *SourceError) {
	defer func() {
		if r := recover(); r != nil {
			se = &SourceError{Kind: "crash", Message: fmt.Sprintf("the sandbox failed checking your code: %v", r)}
		}
	}()
	return prepare(src, pkg)
}

// reconcile runs the compiled Reconcile once, turning a panic or a
// returned error into a SourceError.
func (ch *child) reconcile(ns, name string) (resp message) {
	resp.Op = opResult
	if ch.run == nil {
		resp.Error = &SourceError{Kind: "compile", Message: "no code compiled"}
		return resp
	}
	ch.output.Reset()
	defer func() {
		if r := recover(); r != nil {
			resp.Error = ch.panicError(r)
		}
		resp.Output = tail(ch.output.String(), 4<<10)
	}()
	res, err := ch.run(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	resp.Requeue, resp.RequeueAfter = res.Requeue, res.RequeueAfter //nolint:staticcheck // Requeue is what the learner may set.
	if err != nil {
		resp.Error = &SourceError{Kind: "error", Message: err.Error()}
	}
	return resp
}

// panicError is a panic in learner code, in Go's words, at the statement
// that was running (where.go); before the code has run one (a package
// initialiser), at the line the interpreter reported.
func (ch *child) panicError(r any) *SourceError {
	se := &SourceError{Kind: "panic", Message: "panic: " + goWords(fmt.Sprint(r))}
	if ch.where != nil {
		if se.Line, se.Col = ch.where(); se.Line > 0 {
			return se
		}
	}
	if m := panicPos.FindStringSubmatch(ch.output.String()); m != nil {
		se.Line, _ = strconv.Atoi(m[1])
		se.Col, _ = strconv.Atoi(m[2])
	}
	return se
}

// panicPos finds where the interpreter reported a panic: "_.go:12:5: panic: …"
// or "12:5: panic".
var panicPos = regexp.MustCompile(`(?m)(?:^|:)(\d+):(\d+): panic`)

// errPos finds the first position in an interpreter error.
var errPos = regexp.MustCompile(`(?:^|[\s:])(\d+):(\d+): `)

func errorAt(kind, msg string) *SourceError {
	se := &SourceError{Kind: kind, Message: stripPos(msg)}
	if m := errPos.FindStringSubmatch(msg); m != nil {
		se.Line, _ = strconv.Atoi(m[1])
		se.Col, _ = strconv.Atoi(m[2])
	}
	return se
}

// stripPos drops a leading "file:line:col: " from an error message.
func stripPos(msg string) string {
	if loc := errPos.FindStringIndex(msg); loc != nil && loc[0] <= 8 {
		return msg[loc[1]:]
	}
	return msg
}

func fmtLine(line, col int) string {
	if col > 0 {
		return fmt.Sprintf("line %d:%d: ", line, col)
	}
	return fmt.Sprintf("line %d: ", line)
}

// Check parses src and refuses what the sandbox does not run, before the
// interpreter sees it: an import outside the whitelist, a go statement (a
// goroutine would outlive its reconcile, and nothing could stop it but
// killing the child). It returns the package name.
func Check(src string) (string, *SourceError) {
	if len(src) > 256<<10 {
		return "", &SourceError{Kind: "compile", Message: "the code is longer than 256 KiB"}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "reconciler.go", src, parser.AllErrors|parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if ok := asErrorList(err, &list); ok && len(list) > 0 {
			msg := list[0].Msg
			if more := len(list) - 1; more > 0 {
				// One at a time, as go build's first line: a later error
				// often follows from the first, and goes with it.
				msg += fmt.Sprintf(" (and %d more syntax error%s after it, on line%s %s: fix this one first, they may go with it)",
					more, plural(more), plural(more), errorLines(list[1:]))
			}
			se := &SourceError{Kind: "compile", Message: msg, Line: list[0].Pos.Line, Col: list[0].Pos.Column}
			if len(list) > 1 {
				for _, e := range list {
					se.Errors = append(se.Errors, SourceError{Kind: "compile", Message: e.Msg, Line: e.Pos.Line, Col: e.Pos.Column})
				}
			}
			return "", se
		}
		return "", &SourceError{Kind: "compile", Message: err.Error()}
	}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !Importable(p) {
			pos := fset.Position(imp.Pos())
			return "", &SourceError{Kind: "compile", Line: pos.Line, Col: pos.Column,
				Message: fmt.Sprintf("package %q is not available in the sandbox; you may import %s", p, strings.Join(ImportPaths(), ", "))}
		}
	}
	var refused *SourceError
	ast.Inspect(f, func(n ast.Node) bool {
		if refused != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			pos := fset.Position(n.Pos())
			refused = &SourceError{Kind: "compile", Line: pos.Line, Col: pos.Column,
				Message: "go statements are not allowed: a reconcile does its work and returns (requeue to come back later)"}
		case *ast.Ident:
			// The glue and the statement recorder (where.go) add names
			// of their own to the learner's package.
			if strings.HasPrefix(strings.ToLower(n.Name), "oplab") {
				pos := fset.Position(n.Pos())
				refused = &SourceError{Kind: "compile", Line: pos.Line, Col: pos.Column,
					Message: fmt.Sprintf("%s: names starting with oplab are the sandbox's own; rename it", n.Name)}
			}
		}
		return true
	})
	if refused != nil {
		return "", refused
	}
	if f.Name.Name == "_" || strings.HasPrefix(f.Name.Name, "oplab") {
		return "", &SourceError{Kind: "compile", Line: 1, Message: "name the package controller (or main)"}
	}
	return f.Name.Name, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// errorLines lists the lines of errs, at most five, each once.
func errorLines(errs scanner.ErrorList) string {
	var lines []string
	for _, e := range errs {
		l := strconv.Itoa(e.Pos.Line)
		if !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 5 {
		return strings.Join(lines[:5], ", ") + ", …"
	}
	return strings.Join(lines, ", ")
}

func asErrorList(err error, list *scanner.ErrorList) bool {
	l, ok := err.(scanner.ErrorList)
	if ok {
		*list = l
	}
	return ok
}

// Importable reports whether learner code may import path.
func Importable(path string) bool {
	_, ok := symbols.Symbols[path+"/"+pathBase(path)]
	if !ok {
		// controller-runtime's root package is named ctrl's "controllerruntime".
		for k := range symbols.Symbols {
			if strings.HasPrefix(k, path+"/") && !strings.Contains(k[len(path)+1:], "/") {
				return true
			}
		}
	}
	return ok
}

// ImportPaths lists the packages learner code may import, sorted.
func ImportPaths() []string {
	var out []string
	for k := range symbols.Symbols {
		out = append(out, k[:strings.LastIndex(k, "/")])
	}
	sort.Strings(out)
	return out
}

func pathBase(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// limitedWriter writes at most n more bytes into w and drops the rest.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
