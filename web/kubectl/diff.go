package kubectl

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/pmezard/go-difflib/difflib"
)

// DiffArg is the last argument of the diff kubectl diff runs in the child
// (KUBECTL_EXTERNAL_DIFF): `oplab LIVE MERGED oplab-diff`. The child may
// start no program but itself, and a container image has no diff(1).
const DiffArg = "oplab-diff"

// RunDiff compares the files of two directories as `diff -u -N` does,
// writing a unified diff of each pair that differs (a file missing on one
// side is empty), and returns diff's status: 0 the same, 1 different, 2
// trouble.
func RunDiff(from, to string, out io.Writer) int {
	names := map[string]bool{}
	for _, dir := range []string{from, to} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(out, "diff: %v\n", err)
			return 2
		}
		for _, e := range entries {
			if !e.IsDir() {
				names[e.Name()] = true
			}
		}
	}
	status := 0
	for _, name := range slices.Sorted(maps.Keys(names)) {
		a, b := filepath.Join(from, name), filepath.Join(to, name)
		left, lerr := readOrEmpty(a)
		right, rerr := readOrEmpty(b)
		if lerr != nil || rerr != nil {
			fmt.Fprintf(out, "diff: %v\n", firstErr(lerr, rerr))
			return 2
		}
		if left == right {
			continue
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(left), B: difflib.SplitLines(right),
			FromFile: a, ToFile: b, Context: 3,
		})
		if err != nil {
			fmt.Fprintf(out, "diff: %v\n", err)
			return 2
		}
		fmt.Fprintf(out, "diff -u -N %s %s\n%s", a, b, text)
		status = 1
	}
	return status
}

func readOrEmpty(path string) (string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", nil
	}
	return string(b), err
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
