package sandbox

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
)

// The interpreter reports a panic at the first statement of the function
// it happened in (the frame's position), not at the statement that
// panicked: a nil map written on line 20 was reported on line 17. So the
// child runs an instrumented copy of the learner's file, where each
// statement first records its own line and column; after a panic the
// last one recorded is where it happened, in whichever function.

// whereDecls are added after the learner's file (so no line above them
// moves): the recorder each statement calls, and what the child reads.
const whereDecls = `

var oplabLine, oplabCol int

func oplabAt(line, col int) { oplabLine, oplabCol = line, col }

func oplabAtCond(line, col int) bool { oplabLine, oplabCol = line, col; return true }

func OplabWhere() (int, int) { return oplabLine, oplabCol }
`

// whereEdits adds the recorder before every statement of f's blocks and
// case clauses, and into every if's and for's condition. depth gives each
// node's nesting, which orders edits that meet at one offset (edit).
func whereEdits(fset *token.FileSet, f *ast.File, depth map[ast.Node]int) []edit {
	var eds []edit
	add := func(list []ast.Stmt) {
		for _, s := range list {
			switch s := s.(type) {
			case *ast.EmptyStmt:
				if s.Implicit {
					continue
				}
			case *ast.CaseClause, *ast.CommClause:
				// A switch's or select's body lists its clauses, which are
				// no statements: their own bodies are instrumented.
				continue
			}
			p := fset.Position(s.Pos())
			eds = append(eds, edit{start: p.Offset, end: p.Offset, depth: 2 * depth[s],
				text: fmt.Sprintf("oplabAt(%d, %d); ", p.Line, p.Column)})
		}
	}
	// A condition records its own line as it is evaluated: an else-if's
	// is not a statement of a block, and a loop's runs on each turn.
	cond := func(e ast.Expr) {
		if e == nil {
			return
		}
		p, end := fset.Position(e.Pos()), fset.Position(e.End())
		eds = append(eds,
			edit{start: p.Offset, end: p.Offset, depth: 2 * depth[e], text: fmt.Sprintf("oplabAtCond(%d, %d) && (", p.Line, p.Column)},
			edit{start: end.Offset, end: end.Offset, depth: 2 * depth[e], closing: true, text: ")"})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch b := n.(type) {
		case *ast.BlockStmt:
			add(b.List)
		case *ast.CaseClause:
			add(b.Body)
		case *ast.CommClause:
			add(b.Body)
		case *ast.IfStmt:
			cond(b.Cond)
		case *ast.ForStmt:
			cond(b.Cond)
		}
		return true
	})
	return eds
}

// instrumented is the learner's file as the child runs it: rewritten
// (rewrite.go), with a call to oplabAt before each statement, and the
// edits made, to map the interpreter's columns back to the learner's file
// (its lines do not move).
type instrumented struct {
	src   string
	edits []placed
}

// placed is an edit as applied: on line, at col of the learner's file,
// text replaced replaced bytes there.
type placed struct {
	line, col int
	text      string
	replaced  int
}

// column maps a column the interpreter gives on line of the instrumented
// file back to the learner's: a position inside added text is that of
// the text's place.
func (in instrumented) column(line, col int) int {
	shift := 0
	for _, e := range in.edits {
		if e.line != line {
			continue
		}
		start := e.col + shift
		if col < start {
			break
		}
		if col < start+len(e.text) {
			return e.col
		}
		shift += len(e.text) - e.replaced
	}
	return col - shift
}

// goWords says a panic the interpreter words in terms of reflect as Go
// itself would: the learner never called reflect.
func goWords(msg string) string {
	switch {
	case strings.Contains(msg, "reflect: slice index out of range"), strings.Contains(msg, "reflect: array index out of range"):
		return "runtime error: index out of range"
	case strings.Contains(msg, "reflect: string index out of range"):
		return "runtime error: index out of range (of a string)"
	case strings.Contains(msg, "on zero Value"), strings.Contains(msg, "reflect: call of reflect.Value") && strings.Contains(msg, "nil"):
		return "runtime error: invalid memory address or nil pointer dereference"
	case strings.Contains(msg, "reflect: slice bounds out of range"):
		return "runtime error: slice bounds out of range"
	}
	return msg
}
