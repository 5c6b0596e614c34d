package lessons

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Region is a stretch of controller source marked for a lesson with
//
//	// lesson:begin NAME
//	...
//	// lesson:end NAME
//
// Lessons show regions instead of copies so the code a learner reads is the
// code that is compiled and running.
type Region struct {
	// Name is the marker's NAME.
	Name string
	// File is the source file's name, e.g. "database_controller.go".
	File string
	// Start and End are the 1-based lines of the first and last line of
	// code between the markers.
	Start, End int
	// Code is the region's text, without marker lines, dedented.
	Code string
}

// markerRE matches a region marker line whatever name follows the verb, so
// that a name that is not a slug (ValidSlug, so it reads the same in Go
// comments and in markdown fences) is an error rather than a line of code.
var markerRE = regexp.MustCompile(`^\s*// lesson:(begin|end)\b\s*(.*?)\s*$`)

// Regions reads every non-test .go file at the root of code and returns its
// marked regions by name. controller.Source embeds only the files that carry
// regions, so that is all it reads there. A region may not span files, nest inside itself,
// be left open, or share its name with another region.
func Regions(code fs.FS) (map[string]Region, error) {
	files, err := fs.Glob(code, "*.go")
	if err != nil {
		return nil, fmt.Errorf("list controller source: %w", err)
	}
	regions := map[string]Region{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := fs.ReadFile(code, f)
		if err != nil {
			return nil, fmt.Errorf("read controller source %s: %w", f, err)
		}
		found, err := fileRegions(path.Base(f), src)
		if err != nil {
			return nil, err
		}
		for name, r := range found {
			if prev, dup := regions[name]; dup {
				return nil, fmt.Errorf("region %q is marked twice: in %s and %s", name, prev.File, r.File)
			}
			regions[name] = r
		}
	}
	return regions, nil
}

// openRegion is a region whose end marker has not been seen yet.
type openRegion struct {
	start int
	lines []string
}

// fileRegions extracts the regions of one file. Marker lines of other
// regions nested inside a region are left out of its code.
func fileRegions(file string, src []byte) (map[string]Region, error) {
	open := map[string]*openRegion{}
	done := map[string]Region{}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := markerRE.FindStringSubmatch(line)
		if m == nil {
			for _, o := range open {
				o.lines = append(o.lines, line)
			}
			continue
		}
		verb, name := m[1], m[2]
		if !ValidSlug(name) {
			return nil, fmt.Errorf("%s:%d: region name %q must be lowercase letters, digits and inner dashes", file, n, name)
		}
		if err := applyMarker(file, n, verb, name, open, done); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan %s: %w", file, err)
	}
	for _, name := range sortedKeys(open) {
		return nil, fmt.Errorf("%s:%d: region %q has no // lesson:end %s", file, open[name].start-1, name, name)
	}
	return done, nil
}

// applyMarker opens or closes a region at line n.
func applyMarker(file string, n int, verb, name string, open map[string]*openRegion, done map[string]Region) error {
	if verb == "begin" {
		if _, ok := open[name]; ok {
			return fmt.Errorf("%s:%d: region %q begins again before it ends", file, n, name)
		}
		if _, ok := done[name]; ok {
			return fmt.Errorf("%s:%d: region %q is marked twice in this file", file, n, name)
		}
		open[name] = &openRegion{start: n + 1}
		return nil
	}
	o, ok := open[name]
	if !ok {
		return fmt.Errorf("%s:%d: // lesson:end %s has no matching begin", file, n, name)
	}
	delete(open, name)
	if strings.TrimSpace(strings.Join(o.lines, "")) == "" {
		return fmt.Errorf("%s:%d: region %q is empty", file, n, name)
	}
	done[name] = Region{Name: name, File: file, Start: o.start, End: n - 1, Code: dedent(o.lines)}
	return nil
}

// dedent removes the longest leading whitespace shared by every non-blank
// line, so a region cut from inside a function starts at the left margin.
func dedent(lines []string) string {
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = indent, false
			continue
		}
		prefix = commonPrefix(prefix, indent)
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, prefix)
		if strings.TrimSpace(l) == "" {
			out[i] = ""
		}
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}

func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
