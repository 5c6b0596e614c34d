package sandbox

import (
	"archive/zip"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/tools/go/gcexportdata"

	"github.com/oplab-dev/oplab/controller/sandbox/symbols"
)

// Learner code is type-checked with go/types before the interpreter sees
// it, so that every error is Go's own (yaegi accepts code go build
// refuses, such as a variable declared and not used) and the rewrites
// (rewrite.go) know every expression's type. The types come from the
// compiler's export data of exactly the packages learner code may import,
// written at build time by cmd/sandboxtypes into exportdata/packages.zip
// and embedded here: the child has no files and no go command to ask.
//
// The check runs in the child (compile), not in the parent's Check: the
// type checker is a large program fed untrusted input, and there it runs
// under the compile's CPU budget, the child's memory limit and its kernel
// fence, where a pathological input costs only that learner's child; the
// memory the export data takes when decoded is the child's, not oplab's;
// and the rewrites that need the types run there anyway. The parent keeps
// the cheap checks (syntax, imports, go statements) that need no child.

//go:embed exportdata
var exportData embed.FS

// exportArchive is the generated archive inside exportData.
const exportArchive = "exportdata/packages.zip"

// errNoTypeData says how to build the archive when a binary was built
// without it (a plain `go build` in a fresh clone).
var errNoTypeData = errors.New("this oplab was built without the sandbox's type data " +
	"(controller/sandbox/exportdata/packages.zip): run `go run ./cmd/sandboxtypes` (every make target does) and build again")

// typeData opens the embedded archive once per process.
var typeData = sync.OnceValues(func() (*zip.Reader, error) { return openTypeData(exportData) })

// openTypeData opens the archive in fsys.
func openTypeData(fsys fs.FS) (*zip.Reader, error) {
	f, err := fsys.Open(exportArchive)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoTypeData
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// An embedded file reads at any offset without a copy.
	ra, ok := f.(io.ReaderAt)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, err
		}
		ra = bytes.NewReader(b)
	}
	return zip.NewReader(ra, st.Size())
}

// exportImporter imports the whitelisted packages from the archive, each
// read once into one map, so that a type two packages share is one type.
type exportImporter struct {
	fset *token.FileSet
	zr   *zip.Reader
	pkgs map[string]*types.Package
}

func (im *exportImporter) Import(path string) (*types.Package, error) {
	if !Importable(path) {
		// Check refused it already; this is the backstop.
		return nil, fmt.Errorf("package %q is not available in the sandbox", path)
	}
	if p := im.pkgs[path]; p != nil && p.Complete() {
		return p, nil
	}
	f, err := im.zr.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's type data has no package %q (rebuild it: go run ./cmd/sandboxtypes): %w", path, err)
	}
	defer f.Close()
	return gcexportdata.Read(f, im.fset, im.pkgs, path)
}

// goVersion is the Go language version learner code is checked as: the
// one oplab itself was built with, which the conformance tests compile
// the corpus with.
func goVersion() string {
	v := runtime.Version()
	if !strings.HasPrefix(v, "go1.") {
		return "" // a development toolchain: no limit
	}
	minor := v[len("go1."):]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	return "go1." + minor
}

// maxErrors bounds the errors a compile reports.
const maxErrors = 100

// typeCheck checks f, the learner's file, as package pkgName and returns
// what the rewrites need; or every error, Go's own words, each with its
// line and column, in the order of the file.
func typeCheck(fset *token.FileSet, f *ast.File, pkgName string) (*types.Package, *types.Info, []SourceError) {
	zr, err := typeData()
	if err != nil {
		return nil, nil, []SourceError{{Kind: "crash", Message: err.Error()}}
	}
	var errs []types.Error
	conf := types.Config{
		Importer:  &exportImporter{fset: fset, zr: zr, pkgs: map[string]*types.Package{}},
		Sizes:     types.SizesFor("gc", runtime.GOARCH),
		GoVersion: goVersion(),
		Error:     func(err error) { errs = append(errs, err.(types.Error)) },
	}
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Implicits:  map[ast.Node]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
		Scopes:     map[ast.Node]*types.Scope{},
	}
	pkg, _ := conf.Check(pkgName, fset, []*ast.File{f}, info)
	var out []SourceError
	for _, e := range errs {
		// go/types reports the further lines of one error ("other
		// declaration of x") as errors starting with a tab.
		if strings.HasPrefix(e.Msg, "\t") && len(out) > 0 {
			out[len(out)-1].Message += "\n" + e.Msg
			continue
		}
		pos := fset.Position(e.Pos)
		out = append(out, SourceError{Kind: "compile", Message: e.Msg, Line: pos.Line, Col: pos.Column})
	}
	out = append(out, unavailableSymbols(fset, f, info)...)
	if len(out) > 0 {
		return nil, nil, sortErrors(out)
	}
	return pkg, info, nil
}

// unavailableSymbols refuses a package-level name the sandbox's tables
// leave out (fmt.Println, time.Sleep): the export data describes the
// whole package, the interpreter has only the whitelist.
func unavailableSymbols(fset *token.FileSet, f *ast.File, info *types.Info) []SourceError {
	var out []SourceError
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		pn, ok := info.Uses[id].(*types.PkgName)
		if !ok {
			return true
		}
		p := pn.Imported()
		table := symbols.Symbols[p.Path()+"/"+p.Name()]
		if _, ok := table[sel.Sel.Name]; ok {
			return true
		}
		var names []string
		for k := range table {
			if !strings.HasPrefix(k, "_") {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		pos := fset.Position(sel.Sel.Pos())
		msg := fmt.Sprintf("%s.%s is not available in the sandbox", id.Name, sel.Sel.Name)
		if len(names) <= 20 {
			msg += fmt.Sprintf("; from %s it has %s", p.Path(), strings.Join(names, ", "))
		}
		out = append(out, SourceError{Kind: "compile", Message: msg, Line: pos.Line, Col: pos.Column})
		return true
	})
	return out
}

// sortErrors orders errs by position and keeps at most maxErrors.
func sortErrors(errs []SourceError) []SourceError {
	slices.SortStableFunc(errs, func(a, b SourceError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	if len(errs) > maxErrors {
		errs = errs[:maxErrors]
	}
	return errs
}

// errorList is errs as one SourceError: the first, which is where the
// page points, with a word on how many follow, and, when there are more
// than one, all of them in Errors.
func errorList(errs []SourceError) *SourceError {
	first := errs[0]
	se := &SourceError{Kind: first.Kind, Message: first.Message, Line: first.Line, Col: first.Col}
	if more := len(errs) - 1; more > 0 {
		var lines []string
		for _, e := range errs[1:] {
			l := strconv.Itoa(e.Line)
			if e.Line > 0 && !slices.Contains(lines, l) {
				lines = append(lines, l)
			}
		}
		note := fmt.Sprintf(" (and %d more error%s", more, plural(more))
		if len(lines) > 0 {
			if len(lines) > 5 {
				lines = append(lines[:5], "…")
			}
			note += fmt.Sprintf(", on line%s %s", plural(len(lines)), strings.Join(lines, ", "))
		}
		se.Message += note + ")"
		se.Errors = errs
	}
	return se
}
