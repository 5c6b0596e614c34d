package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/oplab-dev/oplab/"

// floors are the top-level folders from the bottom up (doc.go); the
// course's two folders, lessons/ and quiz/, share a floor: the judge grades
// a challenge's questions with the quiz, and the quiz links its lessons.
var floors = [][]string{{"cluster"}, {"controller"}, {"lessons", "quiz"}, {"web"}, {"cmd"}}

// below are the floors that may not import the web, their tests included:
// a domain package's test that needs the web is testing the web.
var below = []string{"cluster", "controller", "lessons", "quiz"}

// file is one Go file of the module and the module's packages it imports.
type file struct {
	path    string // slash-separated, from the module's root
	test    bool
	imports []string // without the module prefix
}

// files parses the imports of every Go file under root, testdata left out.
func files(t *testing.T, root string) []file {
	t.Helper()
	var out []file
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		ff := file{path: filepath.ToSlash(rel), test: strings.HasSuffix(p, "_test.go")}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(path, module); ok {
				ff.imports = append(ff.imports, rest)
			}
		}
		out = append(out, ff)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no Go files under %s", root)
	}
	return out
}

func top(path string) string { return strings.Split(path, "/")[0] }

func floor(path string) int {
	return slices.IndexFunc(floors, func(f []string) bool { return slices.Contains(f, top(path)) })
}

// upward lists, as "file imports package", each import of fs that runs to
// a higher floor: any file of a floor in below that imports web/, and any
// non-test file that imports from a floor above its own. A test may reach
// up otherwise (the end-to-end tests start the program cmd/ assembles).
func upward(fs []file) []string {
	var out []string
	for _, f := range fs {
		from := floor(f.path)
		for _, imp := range f.imports {
			to := floor(imp)
			switch {
			case from < 0 || to < 0:
			case slices.Contains(below, top(f.path)) && top(imp) == "web",
				!f.test && to > from:
				out = append(out, f.path+" imports "+imp)
			}
		}
	}
	return out
}

// TestNothingBelowTheWebImportsIt: no package under cluster/, controller/
// or lessons/, tests included, imports anything under web/, and no
// package imports from a floor above its own.
func TestNothingBelowTheWebImportsIt(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root is not two folders up: %v", err)
	}
	all := files(t, root)
	for _, f := range all {
		if floor(f.path) < 0 && strings.Contains(f.path, "/") && !strings.HasPrefix(f.path, "internal/") {
			t.Errorf("%s is in a folder no floor names: add the folder to floors in internal/layers", f.path)
		}
	}
	for _, v := range upward(all) {
		t.Errorf("%s: an import up the floors (internal/layers/doc.go)", v)
	}
	// The check itself can fail.
	bad := []file{
		{path: "lessons/judge/x_test.go", test: true, imports: []string{"web/stream"}},
		{path: "controller/x.go", imports: []string{"lessons"}},
		{path: "web/e2e/x_test.go", test: true, imports: []string{"cmd/oplab/app"}},
		{path: "web/x.go", imports: []string{"controller/trace"}},
	}
	if got := upward(bad); len(got) != 2 || !strings.HasPrefix(got[0], "lessons/judge/x_test.go") || !strings.HasPrefix(got[1], "controller/x.go") {
		t.Errorf("upward found %q; want the lessons test importing the web and the controller importing lessons", got)
	}
}
