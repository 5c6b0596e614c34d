// Command sandboxtypes writes the type information of the packages learner
// code may import (the tables in controller/sandbox/symbols) into
// controller/sandbox/exportdata/packages.zip, which the sandbox embeds and
// type-checks learner code against with go/types, so that every error is
// Go's own. It is a build step, not a committed file: `make run`, `make
// build`, `make test` and the rest run it first, and cmd/image runs it for
// the image's architecture.
//
// It asks the go command for the compiler's export data of exactly those
// packages (`go list -export`), reads each with gcexportdata and writes it
// again in gcexportdata's own format, one zip entry per package. Each
// entry is complete on its own (it carries the declarations it uses from
// other packages), so the sandbox reads only the packages a file imports.
// The output depends only on the packages' types: an unchanged file is not
// written again.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/tools/go/gcexportdata"

	"github.com/oplab-dev/oplab/controller/sandbox/symbols"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtypes:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("sandboxtypes", flag.ContinueOnError)
	out := fs.String("out", "", "the archive to write (default: controller/sandbox/exportdata/packages.zip in the module)")
	goos := fs.String("goos", "", "GOOS of the binary that embeds the archive (default: the go command's)")
	goarch := fs.String("goarch", "", "GOARCH of the binary that embeds the archive (default: the go command's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var env []string
	if *goos != "" {
		env = append(env, "GOOS="+*goos)
	}
	if *goarch != "" {
		env = append(env, "GOARCH="+*goarch)
	}
	if *out == "" {
		// The module's folder, wherever in it the command runs.
		mod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return fmt.Errorf("go env GOMOD: %w", err)
		}
		root := filepath.Dir(strings.TrimSpace(string(mod)))
		*out = filepath.Join(root, "controller", "sandbox", "exportdata", "packages.zip")
	}
	data, err := build(importPaths(), env)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(*out); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := *out + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, *out)
}

// importPaths are the packages learner code may import: the symbol
// tables' keys are "import/path/name".
func importPaths() []string {
	var paths []string
	for k := range symbols.Symbols {
		paths = append(paths, k[:strings.LastIndex(k, "/")])
	}
	slices.Sort(paths)
	return paths
}

// listed is what `go list -export -json` says of one package.
type listed struct {
	ImportPath string
	Export     string
	Error      *struct{ Err string }
}

// build returns the archive for paths, with env added to the go command's
// environment.
func build(paths, env []string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"list", "-export", "-json=ImportPath,Export,Error"}, paths...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(stdout))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Export == "" {
			return nil, fmt.Errorf("%s: go list gave no export data", p.ImportPath)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) != len(paths) {
		return nil, fmt.Errorf("go list described %d packages of %d", len(pkgs), len(paths))
	}
	slices.SortFunc(pkgs, func(a, b listed) int { return strings.Compare(a.ImportPath, b.ImportPath) })

	// One map for all, so that a type another package uses is one type.
	fset := token.NewFileSet()
	imports := map[string]*types.Package{}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range pkgs {
		pkg, err := read(p, fset, imports)
		if err != nil {
			return nil, err
		}
		// A fixed time keeps the archive the same for the same types.
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p.ImportPath, Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			return nil, err
		}
		// An empty FileSet: the positions of the packages' declarations
		// are of no use to a learner's error messages and take room.
		if err := gcexportdata.Write(w, token.NewFileSet(), pkg); err != nil {
			return nil, fmt.Errorf("writing %s: %w", p.ImportPath, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func read(p listed, fset *token.FileSet, imports map[string]*types.Package) (*types.Package, error) {
	f, err := os.Open(p.Export)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := gcexportdata.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ImportPath, err)
	}
	pkg, err := gcexportdata.Read(r, fset, imports, p.ImportPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ImportPath, err)
	}
	return pkg, nil
}
