package sandbox

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The interpreter (yaegi v0.16.1) runs some of Go wrongly, and the
// conformance corpus (package conformance, conformance_test.go) shows
// each case against Go compiled. The child therefore runs a rewritten copy
// of the learner's file, where each such construct is said in Go the
// interpreter runs rightly, using the type checker's information
// (typecheck.go):
//
//   - `a, b = x, f()`: the interpreter drops the plain values when a call
//     is among them, and evaluates a left index after assigning; rewritten
//     into Go's two phases with temporaries (multiAssign).
//   - a loop variable a function literal or a pointer captures: one for
//     the whole loop in the interpreter, one per iteration in Go 1.22;
//     rewritten into a copy per iteration (forLoop, rangeLoop).
//   - range over an integer: unknown (it panics); a counting loop (rangeInt).
//   - a deferred call's arguments and receiver: read when the call runs;
//     evaluated into temporaries at the defer (deferStmt).
//   - a type switch: its interface cases and those of the code's own types
//     are never taken; an expression switch over assertions (typeSwitch).
//   - a method value: bound when called (or a panic, for the packages'
//     types), and a method expression: a panic; function literals
//     (methodValue).
//   - fmt and a type of the code's own with a String method: its fields
//     are printed; a wrapper that formats as fmt does (fmtArg, rt.go).
//   - recover: its value arrives as a reflect.Value; unwrapped (rt.go).
//   - min, max, clear of a map: unknown; helpers and a loop.
//
// What no rewrite can say rightly is refused, naming the construct and
// what to write instead: an error type of the code's own, a generic
// declaration, a range over a function, a deferred function literal using
// its loop's variables, a defer that reaches a function value its function
// made (the interpreter deadlocks), a type assertion the interpreter may
// answer wrongly (refuseLookalike), a value fmt would call String on inside
// a slice, map or struct, clear of a slice.
//
// A rewrite is a list of edits to the learner's text that leave its lines
// where they are (edits add no line breaks) and most of its text in
// place, so that the statement recorder's edits (where.go) and those of
// rewrites inside rewrites compose, and a column the interpreter reports
// maps back (instrumented.column).

// edit replaces src[start:end] with text; start == end inserts.
type edit struct {
	start, end int
	text       string
	// depth orders insertions at one offset: openings outer first,
	// closings (closing set) inner first. The recorder's edits of a node
	// take 2*depth, a rewrite's 2*depth+1, so that the recorder's wrap
	// the rewrite's.
	depth   int
	closing bool
}

// errTangled is an edit inside another's replaced text: two rewrites of
// one statement that do not compose.
var errTangled = errors.New("tangled rewrite")

// applyEdits returns src with eds applied, and where each one went.
func applyEdits(src string, eds []edit) (string, []placed, error) {
	rank := func(e edit) int {
		switch {
		case e.start == e.end && e.closing:
			return 0
		case e.start == e.end:
			return 1
		}
		return 2
	}
	sort.SliceStable(eds, func(i, j int) bool {
		a, b := eds[i], eds[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if a.closing {
			return a.depth > b.depth
		}
		return a.depth < b.depth
	})
	var out strings.Builder
	var places []placed
	last, line, lineStart := 0, 1, 0
	for _, e := range eds {
		if e.start < last {
			return "", nil, errTangled
		}
		for i := last; i < e.start; i++ {
			if src[i] == '\n' {
				line, lineStart = line+1, i+1
			}
		}
		out.WriteString(src[last:e.start])
		text := e.text
		// Replaced text's line breaks stay, so that no line moves.
		if n := strings.Count(src[e.start:e.end], "\n"); n > 0 {
			text += strings.Repeat("\n", n)
		}
		out.WriteString(text)
		places = append(places, placed{line: line, col: e.start - lineStart + 1, text: text, replaced: e.end - e.start})
		for i := e.start; i < e.end; i++ {
			if src[i] == '\n' {
				line, lineStart = line+1, i+1
			}
		}
		last = e.end
	}
	out.WriteString(src[last:])
	return out.String(), places, nil
}

// rtPath is the package of helpers the rewritten code calls (rt.go); the
// child gives the interpreter it, and only the rewritten code names it.
const rtPath = "oplab/rt"

// prepare type-checks src, a file that passed Check in package pkgName,
// and returns it as the child runs it: rewritten, refusals refused, and
// instrumented (where.go).
func prepare(src, pkgName string) (in instrumented, serr *SourceError) {
	return prepareWith(src, pkgName, true)
}

// prepareWith is prepare, without the rewrites and refusals when rewrite
// is false: the tests show with it what the interpreter does unaided.
func prepareWith(src, pkgName string, rewrite bool) (in instrumented, serr *SourceError) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "reconciler.go", src, parser.SkipObjectResolution)
	if err != nil {
		return instrumented{}, errorAt("compile", err.Error())
	}
	pkg, info, errs := typeCheck(fset, f, pkgName)
	if len(errs) > 0 {
		return instrumented{}, errorList(errs)
	}
	depth := map[ast.Node]int{}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		depth[n] = len(stack)
		stack = append(stack, n)
		return true
	})
	// The recorder's edits come first, so that text a rewrite moves takes
	// its recorder calls along.
	rw := &rewriter{fset: fset, file: f, src: src, info: info, pkg: pkg, depth: depth, edits: whereEdits(fset, f, depth)}
	if rewrite {
		rw.run()
	}
	if len(rw.refusals) > 0 {
		return instrumented{}, errorList(sortErrors(rw.refusals))
	}
	eds := rw.edits
	if rw.needRT {
		off := fset.Position(f.Name.End()).Offset
		eds = append(eds, edit{start: off, end: off, text: fmt.Sprintf("; import oplabrt %q", rtPath)})
	}
	out, places, err := applyEdits(src, eds)
	if err != nil {
		return instrumented{}, &SourceError{Kind: "compile", Message: "the sandbox could not rewrite your code for its interpreter " +
			"(two of its rewrites meet in one statement): split the statement into simpler ones"}
	}
	var tail strings.Builder
	tail.WriteString(whereDecls)
	for _, d := range rw.decls {
		tail.WriteString("\n" + d + "\n")
	}
	in = instrumented{src: out + tail.String(), edits: places}
	// A rewrite that does not parse is the sandbox's bug, never the
	// learner's: say so rather than show the interpreter's confusion.
	if _, err := parser.ParseFile(token.NewFileSet(), "rewritten.go", in.src, parser.SkipObjectResolution); err != nil {
		return instrumented{}, &SourceError{Kind: "crash", Message: "the sandbox failed checking your code: its rewrite does not parse: " + err.Error()}
	}
	return in, nil
}

// rewriter collects a file's edits and refusals.
type rewriter struct {
	fset  *token.FileSet
	file  *ast.File
	src   string
	info  *types.Info
	pkg   *types.Package
	depth map[ast.Node]int

	edits    []edit
	refusals []SourceError
	// decls are helper functions added after the file; declared names
	// them, to add each once.
	decls    []string
	declared map[string]string
	n        int
	needRT   bool
}

func (rw *rewriter) off(p token.Pos) int { return rw.fset.Position(p).Offset }

func (rw *rewriter) text(n ast.Node) string { return rw.src[rw.off(n.Pos()):rw.off(n.End())] }

// insert adds text at p for node n; closing says it closes what an
// earlier insertion of n opened.
func (rw *rewriter) insert(p token.Pos, text string, n ast.Node, closing bool) {
	o := rw.off(p)
	rw.edits = append(rw.edits, edit{start: o, end: o, text: text, depth: 2*rw.depth[n] + 1, closing: closing})
}

// replace puts text in place of the source from p to end.
func (rw *rewriter) replace(p, end token.Pos, text string, n ast.Node) {
	rw.edits = append(rw.edits, edit{start: rw.off(p), end: rw.off(end), text: text, depth: 2*rw.depth[n] + 1})
}

func (rw *rewriter) refuse(p token.Pos, msg string) {
	pos := rw.fset.Position(p)
	rw.refusals = append(rw.refusals, SourceError{Kind: "compile", Message: msg, Line: pos.Line, Col: pos.Column})
}

// name is a fresh name for a temporary; learner code may not name
// anything oplab… (Check), so none collides with the learner's.
func (rw *rewriter) name(what string) string {
	rw.n++
	return fmt.Sprintf("oplab%s%d", what, rw.n)
}

func (rw *rewriter) rt() string {
	rw.needRT = true
	return "oplabrt"
}

// typeString writes t as the code at p can name it: the learner's own
// types by their names, others through the file's imports. It fails when
// a package t needs is not imported by the file (or a name is shadowed at
// p), and the rewrite that needed it is refused instead.
func (rw *rewriter) typeString(t types.Type, p token.Pos) (string, bool) {
	ok := true
	scope := rw.pkg.Scope().Innermost(p)
	if scope == nil {
		scope = rw.pkg.Scope()
	}
	qual := func(other *types.Package) string {
		if other == rw.pkg {
			return ""
		}
		for _, imp := range rw.file.Imports {
			var obj types.Object
			if imp.Name != nil {
				obj = rw.info.Defs[imp.Name]
			} else {
				obj = rw.info.Implicits[imp]
			}
			pn, isPkg := obj.(*types.PkgName)
			if !isPkg || pn.Imported() != other || pn.Name() == "_" || pn.Name() == "." {
				continue
			}
			if _, found := scope.LookupParent(pn.Name(), p); found == pn {
				return pn.Name()
			}
		}
		ok = false
		return other.Name()
	}
	s := types.TypeString(t, qual)
	// The code's own named types must be what their names mean at p.
	var check func(t types.Type)
	seen := map[types.Type]bool{}
	check = func(t types.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Named:
			if o := t.Obj(); o.Pkg() == rw.pkg {
				if _, found := scope.LookupParent(o.Name(), p); found != o {
					ok = false
				}
			}
			if t.TypeArgs().Len() > 0 {
				ok = false
			}
		case *types.Alias:
			if o := t.Obj(); o.Pkg() == rw.pkg {
				if _, found := scope.LookupParent(o.Name(), p); found != o {
					ok = false
				}
			}
		case *types.Pointer:
			check(t.Elem())
		case *types.Slice:
			check(t.Elem())
		case *types.Array:
			check(t.Elem())
		case *types.Map:
			check(t.Key())
			check(t.Elem())
		case *types.Chan:
			check(t.Elem())
		case *types.Signature:
			for i := range t.Params().Len() {
				check(t.Params().At(i).Type())
			}
			for i := range t.Results().Len() {
				check(t.Results().At(i).Type())
			}
		case *types.Struct:
			for i := range t.NumFields() {
				check(t.Field(i).Type())
			}
		}
	}
	check(t)
	return s, ok
}

// run walks the file and collects its edits and refusals. Most rewrites
// edit around their operands and run as the walk enters a node; those
// that move an operand's text (the left side of an assignment, a deferred
// call's arguments) run as it leaves, when the edits inside that text are
// known and can move with it (render).
func (rw *rewriter) run() {
	rw.refuseErrorTypes()
	var stack []ast.Node
	ast.Inspect(rw.file, func(n ast.Node) bool {
		if n == nil {
			n = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			var parent ast.Node
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			switch n := n.(type) {
			case *ast.AssignStmt:
				rw.multiAssign(n, parent)
			case *ast.DeferStmt:
				rw.deferStmt(n, stack)
			}
			return true
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Type.TypeParams != nil {
				rw.refuse(n.Name.Pos(), fmt.Sprintf("%s is generic: the sandbox's interpreter runs generic functions wrongly, "+
					"so the sandbox refuses them; write %s for the types you need", n.Name.Name, n.Name.Name))
			}
		case *ast.TypeSpec:
			if n.TypeParams != nil {
				rw.refuse(n.Name.Pos(), fmt.Sprintf("%s is generic: the sandbox's interpreter runs generic types wrongly, "+
					"so the sandbox refuses them; declare %s for the types you need", n.Name.Name, n.Name.Name))
			}
		case *ast.ForStmt:
			rw.forLoop(n)
		case *ast.RangeStmt:
			rw.rangeLoop(n)
		case *ast.TypeSwitchStmt:
			rw.typeSwitch(n)
		case *ast.TypeAssertExpr:
			if n.Type != nil {
				rw.refuseLookalike(n.Type)
			}
		case *ast.SelectorExpr:
			rw.methodValue(n, parent)
		case *ast.CallExpr:
			rw.call(n, parent)
		}
		return true
	})
}

// render is n's text with the edits inside it applied, for a rewrite that
// moves it; those edits go with it. Moved text is made one line (no line
// below may move); a comment inside it cannot be, and fails.
func (rw *rewriter) render(n ast.Node, own ast.Node) (string, bool) {
	start, end := rw.off(n.Pos()), rw.off(n.End())
	for _, c := range rw.file.Comments {
		if o := rw.off(c.Pos()); o >= start && o < end {
			return "", false
		}
	}
	ownDepth := 2*rw.depth[own] + 1
	var inside, rest []edit
	for _, e := range rw.edits {
		if e.start >= start && e.end <= end && e.depth > ownDepth {
			e.start, e.end = e.start-start, e.end-start
			inside = append(inside, e)
			continue
		}
		rest = append(rest, e)
	}
	text, _, err := applyEdits(rw.src[start:end], inside)
	if err != nil {
		return "", false
	}
	rw.edits = rest
	return strings.ReplaceAll(text, "\n", " "), true
}

// refuseErrorTypes refuses a type of the code's own that is an error.
// The interpreter hands such a value to Go code (fmt.Errorf, errors.Is,
// errors.As, apierrors) in a wrapper of its own: errors.As panics on it,
// a wrapped one is not found again (errors.Is, a type assertion after
// errors.Unwrap), its Unwrap method is not seen, and a nil pointer of the
// type returned as an error is nil, where in Go it is not.
func (rw *rewriter) refuseErrorTypes() {
	for id, obj := range rw.info.Defs {
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() || tn.Pkg() != rw.pkg {
			continue
		}
		if hasErrorMethod(tn.Type()) || hasErrorMethod(types.NewPointer(tn.Type())) {
			if _, isIface := tn.Type().Underlying().(*types.Interface); isIface {
				continue
			}
			rw.refuse(id.Pos(), fmt.Sprintf("%s is an error type of your own, which the sandbox's interpreter does not run as Go does "+
				"(errors.Is and errors.As do not find it once it is wrapped, its Unwrap is not seen, a nil *%s returned as an error is nil); "+
				"make errors with errors.New or fmt.Errorf(\"…: %%w\", err) and tell them apart with errors.Is and a sentinel "+
				"(var errNotReady = errors.New(\"not ready\"))", tn.Name(), tn.Name()))
		}
	}
}

func hasErrorMethod(t types.Type) bool {
	sel := types.NewMethodSet(t).Lookup(nil, "Error")
	if sel == nil {
		return false
	}
	sig := sel.Type().(*types.Signature)
	return sig.Params().Len() == 0 && sig.Results().Len() == 1 && types.Identical(sig.Results().At(0).Type(), types.Typ[types.String])
}

// hasStringMethod reports whether t's method set has String() string,
// which fmt calls for %v and %s.
func hasStringMethod(t types.Type) bool {
	sel := types.NewMethodSet(t).Lookup(nil, "String")
	if sel == nil {
		return false
	}
	sig := sel.Type().(*types.Signature)
	return sig.Params().Len() == 0 && sig.Results().Len() == 1 && types.Identical(sig.Results().At(0).Type(), types.Typ[types.String])
}

// own reports whether t, or what it points to, is a type the code
// declares (the interpreter's own; the packages' types are Go's).
func (rw *rewriter) own(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() == rw.pkg
}

// value is an operand the rewrites evaluate ahead (a right-hand side, a
// deferred call's argument): into a temporary, or, for a constant or nil,
// which evaluates to the same wherever it is, moved to where it is used.
type value struct {
	expr ast.Expr
	// tmp names the temporary; empty when the operand is moved, and
	// moved is its text then.
	tmp, moved string
	// conv converts the temporary where it is used: an untyped
	// comparison's bool to the named bool type it was assigned to.
	conv string
}

// use is the operand where it is used.
func (v value) use() string {
	switch {
	case v.tmp == "":
		return "(" + v.moved + ")"
	case v.conv != "":
		return v.conv + "(" + v.tmp + ")"
	}
	return v.tmp
}

// evaluate plans e, which is assigned to (or passed as) a target of type
// target (nil: no conversion needed).
func (rw *rewriter) evaluate(e ast.Expr, target types.Type) (value, bool) {
	tv := rw.info.Types[e]
	if tv.Value != nil || tv.IsNil() {
		return value{expr: e}, true
	}
	v := value{expr: e, tmp: rw.name("T")}
	if untypedBool(e) && target != nil {
		if b, ok := target.Underlying().(*types.Basic); ok && b.Kind() == types.Bool && !types.Identical(target, types.Typ[types.Bool]) {
			s, ok := rw.typeString(target, e.Pos())
			if !ok {
				return v, false
			}
			v.conv = s
		}
	}
	return v, true
}

// untypedBool reports whether e is a comparison or a logical operation on
// them, whose type (an untyped bool) its context decides.
func untypedBool(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return untypedBool(e.X)
	case *ast.UnaryExpr:
		return e.Op == token.NOT && untypedBool(e.X)
	case *ast.BinaryExpr:
		switch e.Op {
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
			return true
		case token.LAND, token.LOR:
			return untypedBool(e.X) && untypedBool(e.Y)
		}
	}
	return false
}

// containsCall reports whether e calls anything (or receives).
func containsCall(e ast.Node) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			found = true
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				found = true
			}
		case *ast.FuncLit:
			found = true
		}
		return !found
	})
	return found
}

// multiAssign rewrites `a, b = x, f()`, whose plain values the
// interpreter drops when a call is among them (and whose left index
// operands it evaluates after assigning), into Go's two phases: the
// left's operands and the right's values into temporaries, in order, then
// the assignments, left to right:
//
//	c.Status, c.Reason = metav1.ConditionTrue, fmt.Sprint(n)
//	→ { oplabT1 := fmt.Sprint(n); c.Status = (metav1.ConditionTrue); c.Reason = oplabT1 }
func (rw *rewriter) multiAssign(as *ast.AssignStmt, parent ast.Node) {
	if as.Tok != token.ASSIGN || len(as.Lhs) < 2 || len(as.Lhs) != len(as.Rhs) {
		return
	}
	tangled := func() {
		rw.refuse(as.Pos(), "the sandbox cannot run this assignment as Go does as it is written (a comment or a function literal on its left); assign one at a time")
	}
	// The variables this statement assigns: a left operand that reads one
	// is evaluated before any is assigned.
	assigned := map[types.Object]bool{}
	for _, l := range as.Lhs {
		if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
			assigned[rw.info.Uses[id]] = true
		}
	}
	// before declares the left's operands; after holds where each value
	// goes.
	var before, after []string
	for _, l := range as.Lhs {
		if containsFuncLit(l) {
			tangled()
			return
		}
		if id, ok := l.(*ast.Ident); ok {
			after = append(after, id.Name)
			continue
		}
		if !containsCall(l) && !reads(rw.info, l, assigned) {
			t, ok := rw.render(l, as)
			if !ok {
				tangled()
				return
			}
			after = append(after, t)
			continue
		}
		if ix, ok := ast.Unparen(l).(*ast.IndexExpr); ok {
			if _, isMap := rw.info.Types[ix.X].Type.Underlying().(*types.Map); isMap {
				mt, ok1 := rw.render(ix.X, as)
				kt, ok2 := rw.render(ix.Index, as)
				if !ok1 || !ok2 {
					tangled()
					return
				}
				m, k := rw.name("M"), rw.name("K")
				before = append(before, m+" := "+mt, k+" := "+kt)
				after = append(after, m+"["+k+"]")
				continue
			}
		}
		t, ok := rw.render(l, as)
		if !ok {
			tangled()
			return
		}
		p := rw.name("P")
		before = append(before, p+" := &("+t+")")
		after = append(after, "*"+p)
	}
	vals := make([]value, len(as.Rhs))
	for i, r := range as.Rhs {
		var target types.Type
		if id, ok := as.Lhs[i].(*ast.Ident); !ok || id.Name != "_" {
			target = rw.info.Types[as.Lhs[i]].Type
		}
		v, ok := rw.evaluate(r, target)
		if !ok {
			rw.refuse(r.Pos(), "the sandbox cannot name this value's type here to run the assignment as Go does; assign one at a time")
			return
		}
		if v.tmp == "" {
			// A constant moves to where it is used.
			t, ok := rw.render(r, as)
			if !ok {
				tangled()
				return
			}
			v.moved = t
		}
		vals[i] = v
	}
	for i := range after {
		after[i] += " = " + vals[i].use()
	}
	open, close := "{ ", " }"
	if isSimpleStmtSlot(as, parent) {
		// An if's, switch's or for's own statement must stay one.
		open, close = "func() { ", " }()"
	}
	rw.evaluateInPlace(as, as.Pos(), as.End(), vals, open+strings.Join(append(before, ""), "; "), "; "+strings.Join(after, "; ")+close)
}

// evaluateInPlace rewrites the source from start to end, in which vals
// appear in order: each kept value's text stays in place behind its
// temporary's declaration, each moved one's text goes; the source before
// the first value and between values becomes declarations. prefix opens
// them ("{ "), suffix ends them ("; a = oplabT1 }").
func (rw *rewriter) evaluateInPlace(n ast.Node, start, end token.Pos, vals []value, prefix, suffix string) {
	from, pending, kept := start, prefix, false
	for _, v := range vals {
		if v.tmp == "" {
			continue
		}
		rw.replace(from, v.expr.Pos(), pending+v.tmp+" := ", n)
		from, pending, kept = v.expr.End(), "; ", true
	}
	if !kept {
		// Nothing kept: all of it goes.
		rw.replace(from, end, prefix+strings.TrimPrefix(suffix, "; "), n)
		return
	}
	if from == end {
		// The last value ends the statement: what follows it closes the
		// statement's rewrite, inside any that encloses it (a for's post).
		rw.insert(end, strings.TrimSuffix(pending, "; ")+suffix, n, true)
		return
	}
	rw.replace(from, end, strings.TrimSuffix(pending, "; ")+suffix, n)
}

func containsFuncLit(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			found = true
		}
		return !found
	})
	return found
}

// reads reports whether e reads one of vars.
func reads(info *types.Info, e ast.Node, vars map[types.Object]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && vars[info.Uses[id]] {
			found = true
		}
		return !found
	})
	return found
}

// isSimpleStmtSlot reports whether s is the init or post statement of its
// parent, where a block may not stand.
func isSimpleStmtSlot(s ast.Stmt, parent ast.Node) bool {
	switch p := parent.(type) {
	case *ast.IfStmt:
		return p.Init == s
	case *ast.SwitchStmt:
		return p.Init == s
	case *ast.TypeSwitchStmt:
		return p.Init == s
	case *ast.ForStmt:
		return p.Init == s || p.Post == s
	}
	return false
}

// captured returns the variables of vars that the loop body captures: uses
// them in a function literal, takes their address (explicitly, by a
// pointer method, or by slicing an array). Only those can tell one
// variable per loop from one per iteration.
func (rw *rewriter) captured(body ast.Node, vars []*types.Var) map[*types.Var]bool {
	want := map[types.Object]*types.Var{}
	for _, v := range vars {
		want[v] = v
	}
	out := map[*types.Var]bool{}
	var walk func(n ast.Node, inLit bool)
	walk = func(n ast.Node, inLit bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				walk(n.Body, true)
				return false
			case *ast.Ident:
				if v := want[rw.info.Uses[n]]; v != nil && inLit {
					out[v] = true
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					if v := want[rw.rootVar(n.X)]; v != nil {
						out[v] = true
					}
				}
			case *ast.SliceExpr:
				if _, isArray := rw.info.Types[n.X].Type.Underlying().(*types.Array); isArray {
					if v := want[rw.rootVar(n.X)]; v != nil {
						out[v] = true
					}
				}
			case *ast.SelectorExpr:
				if sel := rw.info.Selections[n]; sel != nil && sel.Kind() != types.FieldVal {
					recv := sel.Obj().Type().(*types.Signature).Recv()
					if recv != nil {
						if _, ptr := recv.Type().(*types.Pointer); ptr {
							if v := want[rw.rootVar(n.X)]; v != nil {
								out[v] = true
							}
						}
					}
				}
			}
			return true
		})
	}
	walk(body, false)
	return out
}

// rootVar is the variable e is a part of (x in x, x.f, x[i] of an array),
// or nil.
func (rw *rewriter) rootVar(e ast.Expr) types.Object {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.SelectorExpr:
			if _, ptr := rw.info.Types[x.X].Type.Underlying().(*types.Pointer); ptr {
				return nil
			}
			e = x.X
		case *ast.IndexExpr:
			if _, isArray := rw.info.Types[x.X].Type.Underlying().(*types.Array); !isArray {
				return nil
			}
			e = x.X
		case *ast.Ident:
			return rw.info.Uses[x]
		default:
			return nil
		}
	}
}

// forLoop gives a three-clause loop's variables one copy per iteration,
// as Go 1.22 does, when the body captures them: each iteration declares
// its own from the loop's, and its last value goes back to the loop's
// before the post statement (a continue goes there too), which then
// counts on:
//
//	for i, oplabS1 := 0, func() {}; i < n; func() { oplabS1(); i++ }() {
//		oplabP2 := &i; i := i; oplabS1 = func() { *oplabP2 = i }; …
func (rw *rewriter) forLoop(fs *ast.ForStmt) {
	init, ok := fs.Init.(*ast.AssignStmt)
	if !ok || init.Tok != token.DEFINE {
		return
	}
	var vars []*types.Var
	for _, l := range init.Lhs {
		if v, ok := rw.info.Defs[l.(*ast.Ident)].(*types.Var); ok {
			vars = append(vars, v)
		}
	}
	caught := rw.captured(fs.Body, vars)
	if len(caught) == 0 {
		return
	}
	if len(init.Rhs) != len(init.Lhs) {
		rw.refuse(fs.Pos(), "the sandbox cannot give this loop's variables one copy per iteration, as Go does, when they come from one call "+
			"and a function literal captures them; declare them one by one")
		return
	}
	sync := rw.name("S")
	rw.insert(init.Lhs[len(init.Lhs)-1].End(), ", "+sync, fs, false)
	rw.insert(init.Rhs[len(init.Rhs)-1].End(), ", func() {}", fs, true)
	var head, back []string
	for _, v := range vars {
		p := rw.name("P")
		head = append(head, p+" := &"+v.Name(), v.Name()+" := "+v.Name())
		back = append(back, "*"+p+" = "+v.Name())
	}
	rw.insert(fs.Body.Lbrace+1, " "+strings.Join(head, "; ")+"; "+sync+" = func() { "+strings.Join(back, "; ")+" }; _ = "+sync+";", fs, false)
	if fs.Post == nil {
		rw.insert(fs.Body.Lbrace, sync+"() ", fs, false)
		return
	}
	rw.insert(fs.Post.Pos(), "func() { "+sync+"(); ", fs, false)
	rw.insert(fs.Post.End(), " }()", fs, true)
}

// rangeLoop rewrites a range over an integer, which the interpreter does
// not know, into a counting loop; gives a range loop's variables one copy
// per iteration when the body captures them; and refuses a range over a
// function (an iterator), which the interpreter does not know either.
func (rw *rewriter) rangeLoop(rs *ast.RangeStmt) {
	t := rw.info.Types[rs.X].Type
	if t == nil {
		return
	}
	switch u := t.Underlying().(type) {
	case *types.Signature:
		rw.refuse(rs.X.Pos(), "range over a function (an iterator) is not known to the sandbox's interpreter; loop with for, or over a slice")
		return
	case *types.Basic:
		if u.Info()&types.IsInteger != 0 {
			rw.rangeInt(rs)
			return
		}
	}
	if rs.Tok != token.DEFINE {
		return
	}
	var vars []*types.Var
	for _, e := range []ast.Expr{rs.Key, rs.Value} {
		if id, ok := e.(*ast.Ident); ok {
			if v, ok := rw.info.Defs[id].(*types.Var); ok {
				vars = append(vars, v)
			}
		}
	}
	caught := rw.captured(rs.Body, vars)
	var copies []string
	for _, v := range vars {
		if caught[v] {
			copies = append(copies, v.Name()+" := "+v.Name()+";")
		}
	}
	if len(copies) > 0 {
		rw.insert(rs.Body.Lbrace+1, " "+strings.Join(copies, " "), rs, false)
	}
}

// rangeInt: `for i := range n {` becomes
// `for oplabN1, oplabI2 := T(n), T(0); oplabI2 < oplabN1; oplabI2++ { i := oplabI2;`,
// each iteration with its own i, as in Go.
func (rw *rewriter) rangeInt(rs *ast.RangeStmt) {
	var t types.Type
	if rs.Key != nil {
		t = rw.info.Types[rs.Key].Type
		if id, ok := rs.Key.(*ast.Ident); ok && rs.Tok == token.DEFINE {
			if v := rw.info.Defs[id]; v != nil {
				t = v.Type()
			}
		}
	}
	if t == nil {
		t = types.Default(rw.info.Types[rs.X].Type)
	}
	ts, ok := rw.typeString(t, rs.Pos())
	if !ok {
		rw.refuse(rs.X.Pos(), "the sandbox cannot name this range's type here; write for i := 0; i < n; i++")
		return
	}
	n, i := rw.name("N"), rw.name("I")
	start := rs.Range
	if rs.Key != nil {
		start = rs.Key.Pos()
	}
	rw.replace(start, rs.X.Pos(), n+", "+i+" := "+ts+"(", rs)
	rw.insert(rs.X.End(), fmt.Sprintf("), %s(0); %s < %s; %s++", ts, i, n, i), rs, true)
	if id, ok := rs.Key.(*ast.Ident); ok && id.Name != "_" {
		op := " = "
		if rs.Tok == token.DEFINE {
			op = " := "
		}
		rw.insert(rs.Body.Lbrace+1, fmt.Sprintf(" %s%s%s; _ = %s;", id.Name, op, i, id.Name), rs, false)
	} else if rs.Key != nil && rs.Tok != token.DEFINE {
		// `for x.f = range n` assigns a non-identifier.
		rw.insert(rs.Body.Lbrace+1, fmt.Sprintf(" %s = %s;", rw.text(rs.Key), i), rs, false)
	}
}

// deferStmt evaluates a deferred call's function and arguments at the
// defer, as Go does; the interpreter reads a variable argument (and a
// method's receiver) only when the deferred call runs:
//
//	defer f(x, y)    →  { oplabT1 := x; oplabT2 := y; defer f(oplabT1, oplabT2) }
//	defer s.add(x)   →  { oplabT1 := s; oplabT2 := x; defer oplabT1.add(oplabT2) }
//
// A function literal stays where it is, as the deferred function: recover
// works only there, and the literal, which the interpreter makes when the
// deferred call runs, then sees the variables it uses as they are then,
// as in Go, but for variables of a loop around the defer, one per
// iteration in Go: that is refused. So is a defer that reaches a function
// value this function made: the interpreter runs a function's deferred
// calls holding a lock that such a value's call waits for, for ever.
// Deferred in a function literal, a call of a function or method declared
// below the literal is dropped by the interpreter; it goes into a deferred
// literal of its own, which the interpreter runs (unless the function
// recovers, which it could then not: that is refused).
func (rw *rewriter) deferStmt(ds *ast.DeferStmt, stack []ast.Node) {
	call := ds.Call
	fn, loop := enclosing(stack)
	if rw.reachesOwnFuncValue(ds, fn) {
		return
	}
	lit, isLit := ast.Unparen(call.Fun).(*ast.FuncLit)
	if isLit && loop != nil {
		if v := rw.loopVarUsed(lit, loop); v != nil {
			rw.refuse(ds.Pos(), fmt.Sprintf("this deferred function literal uses %s, a variable of the loop around it, which the sandbox's interpreter "+
				"reads when the deferred call runs, not at the defer; pass it as an argument: defer func(%s %s) { … }(%s)",
				v.Name(), v.Name(), types.TypeString(v.Type(), types.RelativeTo(rw.pkg)), v.Name()))
			return
		}
	}
	var vals []value
	fnText := "" // what the new defer calls; empty: the function stays in place
	var callee *types.Func
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.FuncLit:
	case *ast.Ident:
		switch obj := rw.info.Uses[f].(type) {
		case *types.Func:
			fnText, callee = f.Name, obj
		case *types.Builtin:
			fnText = f.Name
		}
	case *ast.SelectorExpr:
		if id, ok := f.X.(*ast.Ident); ok {
			if _, isPkg := rw.info.Uses[id].(*types.PkgName); isPkg {
				fnText = rw.text(f)
				break
			}
		}
		if sel := rw.info.Selections[f]; sel != nil && sel.Kind() == types.MethodVal {
			prefix, _, _ := rw.receiver(sel, f.X)
			recv := rw.name("T")
			text, ok := rw.render(f.X, ds)
			if !ok {
				rw.refuse(ds.Pos(), "the sandbox cannot defer this call as Go does as it is written (a comment inside it); put the receiver in a variable first")
				return
			}
			if prefix != "" {
				text = prefix + text + ")"
			}
			vals = append(vals, value{tmp: recv, moved: text})
			fnText = recv + "." + f.Sel.Name
			callee, _ = sel.Obj().(*types.Func)
		}
	}
	later, recovers := rw.declaredBelow(callee, fn)
	if recovers {
		rw.refuse(ds.Pos(), fmt.Sprintf("the sandbox's interpreter drops a call deferred in a function literal to a function declared "+
			"below it, and %s recovers, so the sandbox cannot move the call; declare %s above this function", callee.Name(), callee.Name()))
		return
	}
	if fnText == "" && !isLit {
		// A function value: a variable, a field, a call's result.
		text, ok := rw.render(call.Fun, ds)
		if !ok {
			rw.refuse(ds.Pos(), "the sandbox cannot defer this call as Go does as it is written (a comment inside it); put the function in a variable first")
			return
		}
		fnText = rw.name("T")
		vals = append(vals, value{tmp: fnText, moved: text})
	}
	sig, _ := rw.info.Types[call.Fun].Type.(*types.Signature)
	var args []string
	for i, a := range call.Args {
		var target types.Type
		if sig != nil {
			target = paramType(sig, i, call.Ellipsis.IsValid())
		}
		v, ok := rw.evaluate(a, target)
		if !ok {
			rw.refuse(a.Pos(), "the sandbox cannot name this argument's type here to defer the call as Go does; assign it to a variable first")
			return
		}
		text, ok := rw.render(a, ds)
		if !ok {
			rw.refuse(a.Pos(), "the sandbox cannot defer this call as Go does as it is written (a comment inside it); assign the argument to a variable first")
			return
		}
		v.moved = text
		if v.tmp != "" {
			vals = append(vals, v)
		}
		args = append(args, v.use())
	}
	var decls []string
	for _, v := range vals {
		decls = append(decls, v.tmp+" := "+v.moved)
	}
	ell := ""
	if call.Ellipsis.IsValid() {
		ell = "..."
	}
	callArgs := "(" + strings.Join(args, ", ") + ell + ")"
	open, close := "defer ", ""
	if len(decls) > 0 {
		open, close = "{ "+strings.Join(decls, "; ")+"; defer ", " }"
	}
	if later {
		// Deferred from a literal, a call of a function declared below
		// the literal is dropped by the interpreter; one inside a
		// deferred literal is not.
		rw.replace(ds.Pos(), ds.End(), open+"func() { "+fnText+callArgs+" }()"+close, ds)
		return
	}
	if len(vals) == 0 && len(call.Args) == 0 {
		return
	}
	if fnText == "" {
		// The literal stays in place between the declarations and the
		// arguments.
		rw.replace(ds.Pos(), call.Fun.Pos(), open, ds)
		rw.replace(call.Fun.End(), ds.End(), callArgs+close, ds)
		return
	}
	rw.replace(ds.Pos(), ds.End(), open+fnText+callArgs+close, ds)
}

// declaredBelow reports whether callee, a function or method of the
// code's own, is declared below the function literal fn, and whether it
// calls recover.
func (rw *rewriter) declaredBelow(callee *types.Func, fn ast.Node) (below, recovers bool) {
	lit, ok := fn.(*ast.FuncLit)
	if !ok || callee == nil || callee.Pkg() != rw.pkg || callee.Pos() < lit.End() {
		return false, false
	}
	for _, d := range rw.file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Pos() != callee.Pos() || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := ast.Unparen(c.Fun).(*ast.Ident); ok {
					if b, ok := rw.info.Uses[id].(*types.Builtin); ok && b.Name() == "recover" {
						recovers = true
					}
				}
			}
			return !recovers
		})
	}
	return true, recovers
}

// enclosing finds, in a walk's stack, the innermost function (a
// declaration or a literal) and the innermost loop inside it.
func enclosing(stack []ast.Node) (fn, loop ast.Node) {
	for i := len(stack) - 1; i >= 0; i-- {
		switch n := stack[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return n, loop
		case *ast.ForStmt, *ast.RangeStmt:
			if loop == nil {
				loop = n
			}
		}
	}
	return nil, loop
}

// reachesOwnFuncValue refuses a defer that reaches a function value fn's
// own code made (a variable of fn, not a parameter, that holds a
// function, or a function literal passed along) and reports whether it did.
func (rw *rewriter) reachesOwnFuncValue(ds *ast.DeferStmt, fn ast.Node) bool {
	var body *ast.BlockStmt
	switch f := fn.(type) {
	case *ast.FuncDecl:
		body = f.Body
	case *ast.FuncLit:
		body = f.Body
	}
	if body == nil {
		return false
	}
	lit, _ := ast.Unparen(ds.Call.Fun).(*ast.FuncLit)
	var found string
	ast.Inspect(ds.Call, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			if n != lit && !within(n, lit) {
				found = "a function literal passed along"
			}
		case *ast.Ident:
			v, ok := rw.info.Uses[n].(*types.Var)
			if !ok || !holdsFunc(v.Type(), map[types.Type]bool{}) {
				return true
			}
			if v.Pos() >= body.Pos() && v.Pos() < body.End() && !rw.inNestedLit(v.Pos(), body) {
				found = v.Name()
			}
		}
		return true
	})
	if found == "" {
		return false
	}
	rw.refuse(ds.Pos(), fmt.Sprintf("this deferred call reaches %s, a function value this function made, which the sandbox's interpreter "+
		"waits on for ever when a deferred call runs it; declare the function with func at the top level, or do the work without the defer", found))
	return true
}

// within reports whether n lies inside outer (nil: never).
func within(n, outer ast.Node) bool {
	return outer != nil && n.Pos() >= outer.Pos() && n.End() <= outer.End()
}

// inNestedLit reports whether p is inside a function literal in body:
// such a variable belongs to the literal's calls, not to body's function.
func (rw *rewriter) inNestedLit(p token.Pos, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok && p >= lit.Pos() && p < lit.End() {
			found = true
		}
		return !found
	})
	return found
}

// holdsFunc reports whether a value of t can hold a function.
func holdsFunc(t types.Type, seen map[types.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch u := t.Underlying().(type) {
	case *types.Signature:
		return true
	case *types.Slice:
		return holdsFunc(u.Elem(), seen)
	case *types.Array:
		return holdsFunc(u.Elem(), seen)
	case *types.Map:
		return holdsFunc(u.Elem(), seen)
	case *types.Pointer:
		return holdsFunc(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			if holdsFunc(u.Field(i).Type(), seen) {
				return true
			}
		}
	}
	return false
}

// loopVarUsed is a variable declared inside loop (its own or its body's)
// that lit uses, or nil.
func (rw *rewriter) loopVarUsed(lit *ast.FuncLit, loop ast.Node) *types.Var {
	var found *types.Var
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := rw.info.Uses[id].(*types.Var); ok && v.Pos() >= loop.Pos() && v.Pos() < loop.End() &&
				(v.Pos() < lit.Pos() || v.Pos() >= lit.End()) {
				found = v
			}
		}
		return true
	})
	return found
}

// paramType is the type of the i-th argument of a call of sig.
func paramType(sig *types.Signature, i int, spread bool) types.Type {
	ps := sig.Params()
	if ps.Len() == 0 {
		return nil
	}
	if sig.Variadic() && i >= ps.Len()-1 {
		last := ps.At(ps.Len() - 1).Type()
		if spread {
			return last
		}
		if s, ok := last.(*types.Slice); ok {
			return s.Elem()
		}
		return nil
	}
	if i < ps.Len() {
		return ps.At(i).Type()
	}
	return nil
}

// receiver says how Go evaluates x as the receiver of the method that sel
// selects when binding it (a method value, a deferred method call): a
// pointer method of an addressable value takes its address, a value
// method through a pointer copies what it points to. It returns the
// prefix to put before x ("&(" or "*(", closed by ")") and the receiver's
// type.
func (rw *rewriter) receiver(sel *types.Selection, x ast.Expr) (prefix string, t types.Type, ok bool) {
	xt := rw.info.Types[x].Type
	sig := sel.Obj().Type().(*types.Signature)
	if sig.Recv() == nil || len(sel.Index()) > 1 {
		// An interface's method, or one promoted through embedding: x as
		// it is (an embedded pointer is followed when called, as in Go).
		return "", xt, true
	}
	_, recvPtr := sig.Recv().Type().(*types.Pointer)
	xp, xPtr := xt.Underlying().(*types.Pointer)
	switch {
	case recvPtr && !xPtr:
		return "&(", types.NewPointer(xt), true
	case !recvPtr && xPtr:
		return "*(", xp.Elem(), true
	}
	return "", xt, true
}

// typeSwitch rewrites a type switch, whose interface cases (error,
// fmt.Stringer, client.Object) and cases of the code's own types the
// interpreter never takes, into an expression switch over type
// assertions, which it runs rightly:
//
//	switch x := v.(type) { case A, B: … case C: … }
//	→ switch oplabV1 := v; { case func() bool { _, oplabOK := oplabV1.(A); return oplabOK }() || …: x := oplabV1; …
//	                        case …(C)…: x := oplabV1.(C); … }
//
// With an init statement the new switch goes inside a switch that keeps
// it: `switch init; { default: switch oplabV1 := v; { … } }`.
func (rw *rewriter) typeSwitch(ts *ast.TypeSwitchStmt) {
	var bound *ast.Ident
	var assert *ast.TypeAssertExpr
	switch a := ts.Assign.(type) {
	case *ast.ExprStmt:
		assert = a.X.(*ast.TypeAssertExpr)
	case *ast.AssignStmt:
		bound = a.Lhs[0].(*ast.Ident)
		assert = a.Rhs[0].(*ast.TypeAssertExpr)
	}
	v := rw.name("V")
	if ts.Init == nil {
		rw.replace(ts.Switch+token.Pos(len("switch")), assert.X.Pos(), " "+v+" := ", ts)
	} else {
		rw.replace(ts.Init.End(), assert.X.Pos(), "; { default: switch "+v+" := ", ts)
		rw.insert(ts.Body.End(), " }", ts, true)
	}
	rw.replace(assert.X.End(), ts.Assign.End(), "; ", ts)
	for _, s := range ts.Body.List {
		cc := s.(*ast.CaseClause)
		for _, t := range cc.List {
			rw.refuseLookalike(t)
		}
		for i, t := range cc.List {
			if i > 0 {
				rw.replace(cc.List[i-1].End(), t.Pos(), " || ", cc)
			}
			if rw.info.Types[t].IsNil() {
				rw.insert(t.Pos(), v+" == ", cc, false)
				continue
			}
			rw.insert(t.Pos(), "func() bool { _, oplabOK := "+v+".(", cc, false)
			rw.insert(t.End(), "); return oplabOK }()", cc, true)
		}
		if bound == nil || rw.info.Implicits[cc] == nil {
			continue
		}
		bind := v
		if len(cc.List) == 1 && !rw.info.Types[cc.List[0]].IsNil() {
			bind = v + ".(" + rw.text(cc.List[0]) + ")"
		}
		rw.insert(cc.Colon+1, fmt.Sprintf(" %s := %s; _ = %s;", bound.Name, bind, bound.Name), cc, false)
	}
}

// methodValue rewrites a method value x.M (not called there), which the
// interpreter binds late (x as it is when called) or cannot bind (methods
// of the packages' types), and a method expression T.M, into function
// literals:
//
//	x.M  →  func(oplabR1 X) func(int) string { return func(oplabA0 int) string { return oplabR1.M(oplabA0) } }(x)
//	T.M  →  func(oplabR1 T, oplabA0 int) string { return oplabR1.M(oplabA0) }
func (rw *rewriter) methodValue(se *ast.SelectorExpr, parent ast.Node) {
	sel := rw.info.Selections[se]
	if sel == nil {
		return
	}
	path, viaIface := rw.promotedPath(sel)
	if call, ok := parent.(*ast.CallExpr); sel.Kind() == types.FieldVal || ok && call.Fun == se {
		if viaIface {
			// A method promoted from an embedded interface: the
			// interpreter panics ("invalid interface value") on
			// h.area() but not on h.shape.area().
			rw.insert(se.X.End(), path, se, false)
		}
		return
	}
	sig := sel.Type().(*types.Signature)
	r := rw.name("R")
	fail := func() {
		rw.refuse(se.Pos(), fmt.Sprintf("the sandbox's interpreter cannot run the method value %s as Go does, "+
			"and cannot name its types here to rewrite it; write a function literal that calls it (func(…) { %s(…) })", rw.text(se), rw.text(se)))
	}
	var params, args []string
	for i := range sig.Params().Len() {
		t := sig.Params().At(i).Type()
		a := fmt.Sprintf("oplabA%d", i)
		if sig.Variadic() && i == sig.Params().Len()-1 {
			s, ok := rw.typeString(t.(*types.Slice).Elem(), se.Pos())
			if !ok {
				fail()
				return
			}
			params = append(params, a+" ..."+s)
			args = append(args, a+"...")
			continue
		}
		s, ok := rw.typeString(t, se.Pos())
		if !ok {
			fail()
			return
		}
		params = append(params, a+" "+s)
		args = append(args, a)
	}
	var results []string
	for i := range sig.Results().Len() {
		s, ok := rw.typeString(sig.Results().At(i).Type(), se.Pos())
		if !ok {
			fail()
			return
		}
		results = append(results, s)
	}
	res := strings.Join(results, ", ")
	if len(results) > 1 {
		res = "(" + res + ")"
	}
	ret := "return "
	if len(results) == 0 {
		ret = ""
	}
	if sel.Kind() == types.MethodExpr {
		// The signature's first parameter is the receiver.
		body := fmt.Sprintf("%s%s%s.%s(%s)", ret, args[0], path, se.Sel.Name, strings.Join(args[1:], ", "))
		rw.replace(se.Pos(), se.End(), fmt.Sprintf("func(%s) %s { %s }", strings.Join(params, ", "), res, body), se)
		return
	}
	body := fmt.Sprintf("%s%s%s.%s(%s)", ret, r, path, se.Sel.Name, strings.Join(args, ", "))
	prefix, rt, ok := rw.receiver(sel, se.X)
	if !ok {
		fail()
		return
	}
	recv, ok := rw.typeString(rt, se.Pos())
	if !ok {
		fail()
		return
	}
	fn := fmt.Sprintf("func(%s) %s", strings.Join(params, ", "), res)
	rw.insert(se.Pos(), fmt.Sprintf("func(%s %s) %s { return %s { %s } }(%s", r, recv, fn, fn, body, prefix), se, false)
	closeArg := ")"
	if prefix != "" {
		closeArg = "))"
	}
	rw.replace(se.X.End(), se.End(), closeArg, se)
}

// promotedPath is, for a selection of a method promoted through an
// embedded interface, the embedded fields that lead to that interface
// (".shape"), written out; viaIface is false for any other selection, or
// when a field on the way cannot be named here.
func (rw *rewriter) promotedPath(sel *types.Selection) (path string, viaIface bool) {
	idx := sel.Index()
	if len(idx) < 2 {
		return "", false
	}
	t := sel.Recv()
	var names []string
	last := -1
	for i, fi := range idx[:len(idx)-1] {
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			return "", false
		}
		f := st.Field(fi)
		if !f.Exported() && f.Pkg() != rw.pkg {
			if last < 0 && !types.IsInterface(f.Type()) {
				// Unnameable, but no interface yet: keep looking.
				names = append(names, "")
				t = f.Type()
				continue
			}
			return "", false
		}
		names = append(names, f.Name())
		t = f.Type()
		if types.IsInterface(t) {
			last = i
		}
	}
	if last < 0 {
		return "", false
	}
	for _, n := range names[:last+1] {
		if n == "" {
			return "", false
		}
	}
	return "." + strings.Join(names[:last+1], "."), true
}

// call rewrites calls the interpreter runs wrongly or does not know:
// fmt's formatting of the code's own Stringers, recover, min, max, clear.
func (rw *rewriter) call(c *ast.CallExpr, parent ast.Node) {
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		b, ok := rw.info.Uses[f].(*types.Builtin)
		if !ok {
			return
		}
		switch b.Name() {
		case "recover":
			// The interpreter hands the panic's value over as a
			// reflect.Value: r.(error) is never true.
			rw.insert(c.Pos(), rw.rt()+".Recovered(", c, false)
			rw.insert(c.End(), ")", c, true)
		case "min", "max":
			rw.minMax(c, f, b.Name())
		case "clear":
			rw.clear(c, parent)
		}
	case *ast.SelectorExpr:
		id, ok := f.X.(*ast.Ident)
		if !ok {
			return
		}
		pn, ok := rw.info.Uses[id].(*types.PkgName)
		if !ok || pn.Imported().Path() != "fmt" {
			return
		}
		first := 0
		switch f.Sel.Name {
		case "Sprintf", "Errorf":
			first = 1
		case "Sprint", "Sprintln":
		default:
			return
		}
		if first == 1 && len(c.Args) > 0 {
			rw.fmtNames(c)
		}
		for i := first; i < len(c.Args); i++ {
			if c.Ellipsis.IsValid() && i == len(c.Args)-1 {
				continue
			}
			rw.fmtArg(c.Args[i])
		}
	}
}

// fmtNames refuses the verbs that print names of the code's own types or
// of their fields: the interpreter makes its types of Go's reflect types
// with names of its own (a field x is Xx, the type pt is
// struct { Xx int }), so %+v, %#v and %T of them would not print what
// Go prints. It reads the format when it is a constant.
func (rw *rewriter) fmtNames(c *ast.CallExpr) {
	tv := rw.info.Types[c.Args[0]]
	if tv.Value == nil || tv.Value.Kind() != constant.String {
		return
	}
	for _, v := range fmtVerbs(constant.StringVal(tv.Value)) {
		i := 1 + v.arg
		if i >= len(c.Args) || (c.Ellipsis.IsValid() && i == len(c.Args)-1) {
			return
		}
		a := c.Args[i]
		t := rw.info.Types[a].Type
		if t == nil {
			continue
		}
		var what string
		switch {
		case v.verb == 'T' && rw.containsOwn(t):
			what = "%T"
		case v.verb == 'v' && v.sharp && rw.containsOwn(t):
			what = "%#v"
		case v.verb == 'v' && v.plus && rw.ownStructInside(t) && !(rw.own(t) && hasStringMethod(t)):
			what = "%+v"
		default:
			continue
		}
		rw.refuse(a.Pos(), fmt.Sprintf("the sandbox's interpreter names your types and their fields otherwise than Go does, so %s of "+
			"this %s would not print what Go prints; use %%v, or print the fields you need", what, types.TypeString(t, types.RelativeTo(rw.pkg))))
	}
}

// ownStructInside reports whether a struct type of the code's own is, or
// is inside, t: %+v prints its fields' names.
func (rw *rewriter) ownStructInside(t types.Type) bool {
	found := false
	seen := map[types.Type]bool{}
	var walk func(t types.Type)
	walk = func(t types.Type) {
		if found || seen[t] {
			return
		}
		seen[t] = true
		if n, ok := t.(*types.Named); ok && n.Obj().Pkg() == rw.pkg {
			if _, isStruct := n.Underlying().(*types.Struct); isStruct {
				found = true
				return
			}
		}
		switch u := t.Underlying().(type) {
		case *types.Pointer:
			walk(u.Elem())
		case *types.Slice:
			walk(u.Elem())
		case *types.Array:
			walk(u.Elem())
		case *types.Map:
			walk(u.Key())
			walk(u.Elem())
		case *types.Struct:
			for i := range u.NumFields() {
				walk(u.Field(i).Type())
			}
		}
	}
	walk(t)
	return found
}

// fmtVerb is one verb of a format and the operand it formats (0 is the
// first after the format).
type fmtVerb struct {
	verb        rune
	plus, sharp bool
	arg         int
}

// fmtVerbs reads format as fmt does, far enough to pair verbs with
// operands: flags, * widths and precisions (which take an operand each),
// %%. An explicit index ([n]) ends the reading: what follows is unpaired.
func fmtVerbs(format string) []fmtVerb {
	var out []fmtVerb
	arg := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		var v fmtVerb
	flags:
		for ; i < len(format); i++ {
			switch format[i] {
			case '+':
				v.plus = true
			case '#':
				v.sharp = true
			case '-', ' ', '0':
			default:
				break flags
			}
		}
		for ; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				arg++
				continue
			}
			if c == '[' {
				return out
			}
			if c != '.' && (c < '0' || c > '9') {
				break
			}
		}
		if i >= len(format) {
			break
		}
		r, size := utf8.DecodeRuneInString(format[i:])
		i += size - 1
		if r == '%' {
			continue
		}
		v.verb, v.arg = r, arg
		out = append(out, v)
		arg++
	}
	return out
}

// fmtArg hands fmt a value of the code's own type that has a String
// method in a wrapper that calls it (rt.go): the interpreter passes fmt the
// bare value, whose fields fmt prints. A value that holds such a value
// inside (a slice of them, a field) is refused: fmt would call String on
// each in Go.
func (rw *rewriter) fmtArg(a ast.Expr) {
	t := rw.info.Types[a].Type
	if t == nil {
		return
	}
	if rw.own(t) && hasStringMethod(t) {
		rw.insert(a.Pos(), rw.rt()+".Stringer(", a, false)
		rw.insert(a.End(), ")", a, true)
		return
	}
	if inner := rw.innerStringer(t, map[types.Type]bool{}, true); inner != nil {
		rw.refuse(a.Pos(), fmt.Sprintf("fmt would call the String method of %s inside this %s, which the sandbox's interpreter does not do; "+
			"format each %s yourself (with its String method)", types.TypeString(inner, types.RelativeTo(rw.pkg)),
			types.TypeString(t, types.RelativeTo(rw.pkg)), types.TypeString(inner, types.RelativeTo(rw.pkg))))
	}
}

// innerStringer finds a type of the code's own with a String method that
// fmt would reach inside a value of type t, or nil.
func (rw *rewriter) innerStringer(t types.Type, seen map[types.Type]bool, top bool) types.Type {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if !top && rw.own(t) && hasStringMethod(t) {
		return t
	}
	switch u := t.Underlying().(type) {
	case *types.Slice:
		return rw.innerStringer(u.Elem(), seen, false)
	case *types.Array:
		return rw.innerStringer(u.Elem(), seen, false)
	case *types.Map:
		if in := rw.innerStringer(u.Key(), seen, false); in != nil {
			return in
		}
		return rw.innerStringer(u.Elem(), seen, false)
	case *types.Pointer:
		if top {
			return rw.innerStringer(u.Elem(), seen, true)
		}
	case *types.Struct:
		for i := range u.NumFields() {
			// fmt calls methods only of exported fields' values.
			if f := u.Field(i); f.Exported() {
				if in := rw.innerStringer(f.Type(), seen, false); in != nil {
					return in
				}
			}
		}
	}
	return nil
}

// minMax calls a helper for the type of min's or max's result, which the
// interpreter does not know; a constant one becomes its value.
func (rw *rewriter) minMax(c *ast.CallExpr, f *ast.Ident, op string) {
	tv := rw.info.Types[c]
	if tv.Value != nil {
		lit := constLiteral(tv.Value, tv.Type)
		if b, ok := tv.Type.(*types.Basic); !ok || b.Info()&types.IsUntyped == 0 {
			ts, ok := rw.typeString(tv.Type, c.Pos())
			if !ok {
				rw.refuse(c.Pos(), op+" of constants of a type the sandbox cannot name here; write the value")
				return
			}
			lit = ts + "(" + lit + ")"
		}
		rw.replace(c.Pos(), c.End(), lit, c)
		return
	}
	// The helper is declared at the package level: its type must be
	// nameable there (not a type declared inside a function).
	ts, ok := rw.typeString(tv.Type, rw.file.Name.Pos())
	if !ok {
		rw.refuse(c.Pos(), op+" of a type the sandbox cannot name outside this function; compare with if")
		return
	}
	key := op + " " + ts
	if rw.declared == nil {
		rw.declared = map[string]string{}
	}
	name, ok := rw.declared[key]
	if !ok {
		name = rw.name(strings.ToUpper(op[:1]) + op[1:])
		rw.declared[key] = name
		less := "y < x"
		if op == "max" {
			less = "y > x"
		}
		nan := ""
		if b, ok := tv.Type.Underlying().(*types.Basic); ok && b.Info()&types.IsFloat != 0 {
			// Go: a NaN among the arguments is the result.
			nan = "if x != x { return x }; "
			less = "y != y || " + less
		}
		rw.decls = append(rw.decls, fmt.Sprintf("func %s(x %s, ys ...%s) %s { %sfor _, y := range ys { if %s { x = y } }; return x }",
			name, ts, ts, ts, nan, less))
	}
	rw.replace(f.Pos(), f.End(), name, c)
}

// constLiteral writes a constant of type t as Go source of the same
// type, an untyped one of the same kind.
func constLiteral(v constant.Value, t types.Type) string {
	switch v.Kind() {
	case constant.String:
		return strconv.Quote(constant.StringVal(v))
	case constant.Float:
		f, _ := constant.Float64Val(v)
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEIN") {
			s += ".0" // still a float
		}
		return s
	case constant.Int:
		if b, ok := t.(*types.Basic); ok && b.Kind() == types.UntypedRune {
			return "rune(" + v.ExactString() + ")"
		}
	}
	return v.ExactString()
}

// clear of a map becomes a loop of deletes; the interpreter knows no
// clear. Of a slice it is refused (rare in a reconciler).
func (rw *rewriter) clear(c *ast.CallExpr, parent ast.Node) {
	if _, isMap := rw.info.Types[c.Args[0]].Type.Underlying().(*types.Map); !isMap {
		rw.refuse(c.Pos(), "clear of a slice is not known to the sandbox's interpreter; set the elements in a loop")
		return
	}
	if _, isStmt := parent.(*ast.ExprStmt); !isStmt {
		rw.refuse(c.Pos(), "clear is not known to the sandbox's interpreter; delete the keys in a loop (for k := range m { delete(m, k) })")
		return
	}
	m, k := rw.name("M"), rw.name("K")
	rw.replace(c.Pos(), c.Args[0].Pos(), "{ "+m+" := ", c)
	rw.replace(c.Args[0].End(), c.End(), fmt.Sprintf("; for %s := range %s { delete(%s, %s) } }", k, m, m, k), c)
}

// refuseLookalike refuses a type assertion (or a type switch's case) the
// interpreter may answer wrongly. To a concrete type: it keeps a type of
// the code's own as the type it is made of, so in an any a `type phase
// string` is a string (v.(string) holds for a phase, and v.(phase) for a
// string), and two struct types with the same fields are one. To an
// interface that a type of the code's own implements: it does not always
// keep such a value's methods in an any, and the assertion fails, or
// succeeds and its method call panics.
func (rw *rewriter) refuseLookalike(te ast.Expr) {
	t := rw.info.Types[te].Type
	if t == nil || rw.info.Types[te].IsNil() {
		return
	}
	q := types.RelativeTo(rw.pkg)
	if iface, ok := t.Underlying().(*types.Interface); ok {
		if iface.Empty() {
			return
		}
		if own := rw.ownImplementer(iface); own != nil {
			rw.refuse(te.Pos(), fmt.Sprintf("the sandbox's interpreter does not always keep the methods of %s, a type of your own, "+
				"in an interface value, so this assertion to %s could fail where Go's succeeds (or its call panic); "+
				"call the method on a variable of %s itself, or on an interface variable you assigned it to",
				types.TypeString(own, q), types.TypeString(t, q), types.TypeString(own, q)))
		}
		return
	}
	other := rw.lookalike(t)
	if other == nil {
		return
	}
	rw.refuse(te.Pos(), fmt.Sprintf("the sandbox's interpreter cannot tell %s from %s once either is in an interface (it keeps "+
		"your types as the types they are made of), so this type assertion could take one for the other; "+
		"give your type a method and assert to an interface that has it, or keep them out of one interface",
		types.TypeString(t, q), types.TypeString(other, q)))
}

// ownTypes are the code's own named types that are not interfaces, in
// the order of the file.
func (rw *rewriter) ownTypes() []types.Type {
	var names []*types.TypeName
	for _, obj := range rw.info.Defs {
		if tn, ok := obj.(*types.TypeName); ok && !tn.IsAlias() && !types.IsInterface(tn.Type()) {
			names = append(names, tn)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Pos() < names[j].Pos() })
	out := make([]types.Type, len(names))
	for i, tn := range names {
		out[i] = tn.Type()
	}
	return out
}

// ownImplementer is a type of the code's own (or a pointer to one) that
// implements iface, or nil.
func (rw *rewriter) ownImplementer(iface *types.Interface) types.Type {
	for _, t := range rw.ownTypes() {
		for _, c := range []types.Type{t, types.NewPointer(t)} {
			if types.Implements(c, iface) {
				return c
			}
		}
	}
	return nil
}

// lookalike is a type the interpreter represents as it represents t, or
// nil: the type a type of the code's own is made of, or another of its
// own made of the same.
func (rw *rewriter) lookalike(t types.Type) types.Type {
	et := rw.erase(t)
	var candidates []types.Type
	if rw.containsOwn(t) {
		if b, ok := et.(*types.Basic); ok {
			candidates = append(candidates, b)
		}
	}
	for _, o := range rw.ownTypes() {
		candidates = append(candidates, o, types.NewPointer(o))
	}
	for _, c := range candidates {
		if !types.Identical(c, t) && types.Identical(rw.erase(c), et) {
			return c
		}
	}
	return nil
}

// containsOwn reports whether t is, or is made with, a type of the code's
// own.
func (rw *rewriter) containsOwn(t types.Type) bool {
	return !types.Identical(rw.erase(t), t)
}

// erase is t with each type of the code's own replaced by what it is
// made of: t as the interpreter tells types apart.
func (rw *rewriter) erase(t types.Type) types.Type {
	switch t := t.(type) {
	case *types.Named:
		if t.Obj().Pkg() == rw.pkg && !types.IsInterface(t) {
			return rw.erase(t.Underlying())
		}
	case *types.Pointer:
		return types.NewPointer(rw.erase(t.Elem()))
	case *types.Slice:
		return types.NewSlice(rw.erase(t.Elem()))
	case *types.Array:
		return types.NewArray(rw.erase(t.Elem()), t.Len())
	case *types.Map:
		return types.NewMap(rw.erase(t.Key()), rw.erase(t.Elem()))
	case *types.Chan:
		return types.NewChan(t.Dir(), rw.erase(t.Elem()))
	case *types.Struct:
		fields := make([]*types.Var, t.NumFields())
		tags := make([]string, t.NumFields())
		for i := range t.NumFields() {
			f := t.Field(i)
			fields[i] = types.NewField(f.Pos(), f.Pkg(), f.Name(), rw.erase(f.Type()), f.Embedded())
			tags[i] = t.Tag(i)
		}
		return types.NewStruct(fields, tags)
	}
	return t
}
