package static

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every script oplab serves is an ES module, each about one thing (the
// lab's in lab/, the course pages' in learn/): this reads them as
// embedded, the way the browser gets them.

// maxModuleLines is the size past which a module is doing two things.
const maxModuleLines = 300

// modules are every script embedded, by name.
func modules(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var names []string
	for _, pattern := range []string{"*.js", "lab/*.js", "learn/*.js"} {
		found, err := fs.Glob(FS, pattern)
		if err != nil || len(found) == 0 {
			t.Fatalf("no scripts %s embedded (%v)", pattern, err)
		}
		names = append(names, found...)
	}
	for _, name := range names {
		out[name] = read(t, name)
	}
	return out
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// code is src without its comments and string contents, so a word in a
// comment or a sentence is not taken for code. Template literals keep
// their ${…} parts out too; good enough for the checks below.
func code(src string) string { return strip(src, false) }

// uncommented is src without its comments, strings kept: where a string is
// the code (setAttribute("data-x"), a selector), but a comment is not.
func uncommented(src string) string { return strip(src, true) }

func strip(src string, keepStrings bool) string {
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			i += end + 3
		case c == '/' && regexMayStart(b.String()):
			// A regex literal is code: kept whole, so a quote or a "//" in
			// it (/"[^"]*"/, /https?:\/\//) opens no string or comment.
			start := i
			for inClass := false; i+1 < len(src) && src[i+1] != '\n'; {
				i++
				if src[i] == '\\' {
					i++
					continue
				}
				if src[i] == '[' {
					inClass = true
				} else if src[i] == ']' {
					inClass = false
				} else if src[i] == '/' && !inClass {
					break
				}
			}
			b.WriteString(src[start:min(i+1, len(src))])
		case c == '"' || c == '\'' || c == '`':
			start := i
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
			if keepStrings {
				b.WriteString(src[start:min(i+1, len(src))])
			} else {
				b.WriteByte(c)
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// regexMayStart reports whether a "/" after the code out is the start of
// a regex literal rather than a division: JavaScript's own rule, by the
// token before it (an operator, an opening bracket, a keyword that takes
// an expression, or nothing).
func regexMayStart(out string) bool {
	out = strings.TrimRight(out, " \t\n\r")
	if out == "" {
		return true
	}
	if strings.ContainsRune("(,=:[!&|?{};+-*%<>~^", rune(out[len(out)-1])) {
		return true
	}
	for _, kw := range []string{"return", "typeof", "case", "in", "of", "delete", "void", "throw", "yield", "await"} {
		if before, ok := strings.CutSuffix(out, kw); ok && (before == "" || !isIdentByte(before[len(before)-1])) {
			return true
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func TestStripKnowsRegexLiterals(t *testing.T) {
	for _, tt := range []struct{ src, code, uncommented string }{
		// A quote inside a regex opens no string: the call after it stays code.
		{`s.split(/"/); el.dataset.x = 1;`, `s.split(/"/); el.dataset.x = 1;`, `s.split(/"/); el.dataset.x = 1;`},
		// "//" inside a regex is no comment.
		{`u = /https?:\/\//.test(v); go("a");`, `u = /https?:\/\//.test(v); go("");`, `u = /https?:\/\//.test(v); go("a");`},
		// A "/" inside a character class does not end the regex.
		{`return /[/"]/.exec(s) // why`, `return /[/"]/.exec(s) ` + "\n", `return /[/"]/.exec(s) ` + "\n"},
		// Division is not a regex: the string after it is still a string.
		{`a = b / c; d = "/";`, `a = b / c; d = "";`, `a = b / c; d = "/";`},
	} {
		if got := code(tt.src); got != tt.code {
			t.Errorf("code(%q) = %q, want %q", tt.src, got, tt.code)
		}
		if got := uncommented(tt.src); got != tt.uncommented {
			t.Errorf("uncommented(%q) = %q, want %q", tt.src, got, tt.uncommented)
		}
	}
}

func TestModulesStaySmall(t *testing.T) {
	for name, src := range modules(t) {
		if n := strings.Count(src, "\n"); n > maxModuleLines {
			t.Errorf("%s has %d lines; a module over %d does more than one thing: split it", name, n, maxModuleLines)
		}
	}
}

var (
	datasetWrite = regexp.MustCompile(`\.dataset\.(\w+)\s*(=[^=]|\+\+|--)|delete\s+[\w.]+\.dataset\.(\w+)`)
	// attrWrite matches a data attribute set by name, which code() cannot
	// see (it blanks strings): run it on uncommented().
	attrWrite = regexp.MustCompile(`(?:set|toggle)Attribute\(\s*["'\x60]data-([\w-]+)["'\x60]`)
	// hAttr matches a data attribute given to h() (base.js) as a key of
	// its attributes object: h("p", {"data-x": …}).
	hAttr = regexp.MustCompile(`["']data-([\w-]+)["']\s*:`)
	upper = regexp.MustCompile(`[A-Z]`)
)

// fieldOf is the dataset property of attribute data-name.
func fieldOf(name string) string {
	return regexp.MustCompile(`-(\w)`).ReplaceAllStringFunc(name, func(s string) string { return strings.ToUpper(s[1:]) })
}

// readsAttr reports whether stylesheet or script src reads attribute attr
// (data-…): a selector naming it, or getAttribute/hasAttribute of it. A
// mere mention (the script that writes it) is not a read.
func readsAttr(src, attr string) bool {
	return regexp.MustCompile(`\[` + regexp.QuoteMeta(attr) + `\b|(?:get|has)Attribute\(\s*["']` + regexp.QuoteMeta(attr) + `["']`).MatchString(src)
}

// readsField reports whether script code (comments and strings out) reads
// dataset property field, through el.dataset or a variable holding a
// dataset (const d = row.dataset; d.field), other than to assign it.
func readsField(code, field string) bool {
	holders := []string{"dataset"}
	for _, m := range datasetHolder.FindAllStringSubmatch(code, -1) {
		holders = append(holders, regexp.QuoteMeta(m[1]))
	}
	return regexp.MustCompile(`\b(?:` + strings.Join(holders, "|") + `)\.` + field + `\b\s*(?:[^=\s]|==|$)`).MatchString(code)
}

// A data attribute a script writes is page state that something else
// reads: a stylesheet, or a script (travel.js reads the rows' data-seq).
// One only the tests read is not the page's: a test reads what
// the page shows instead.
func TestDataAttributesWrittenAreRead(t *testing.T) {
	css, _ := fs.Glob(FS, "*.css")
	mods := modules(t)
	checked := 0
	for name, src := range mods {
		var attrs []string
		for _, m := range datasetWrite.FindAllStringSubmatch(code(src), -1) {
			attrs = append(attrs, "data-"+upper.ReplaceAllStringFunc(m[1]+m[3], func(s string) string { return "-" + strings.ToLower(s) }))
		}
		for _, re := range []*regexp.Regexp{attrWrite, hAttr} {
			for _, m := range re.FindAllStringSubmatch(uncommented(src), -1) {
				attrs = append(attrs, "data-"+m[1])
			}
		}
		for _, attr := range attrs {
			checked++
			var readers []string
			for _, c := range css {
				if readsAttr(uncommented(read(t, c)), attr) {
					readers = append(readers, c)
				}
			}
			for other, osrc := range mods {
				// Any script, the writer too (timeline.js filters its rows
				// by their data-db), but for the morph, which copies every
				// attribute and so reads none for what it means.
				if other == "morph.js" {
					continue
				}
				if readsAttr(uncommented(osrc), attr) || readsField(code(osrc), fieldOf(strings.TrimPrefix(attr, "data-"))) {
					readers = append(readers, other)
				}
			}
			if len(readers) == 0 {
				t.Errorf("%s writes %s, which no stylesheet or script reads: state kept for the tests? Let them read what the page shows", name, attr)
			}
		}
	}
	if checked < 5 {
		t.Errorf("found only %d data attributes written by the scripts", checked)
	}
}

var (
	// serverData matches a data attribute a template writes.
	serverData = regexp.MustCompile(`\bdata-([a-z][a-z0-9-]*)=`)
	// datasetHolder matches a variable given an element's dataset.
	datasetHolder = regexp.MustCompile(`\b(\w+)\s*=\s*[\w.]+\.dataset\b\s*[;,\n]`)
)

// Every data attribute the server's templates write is read by a script or
// a stylesheet: one no page reads is state kept for the tests (who should
// read what the page shows) or left over.
func TestDataAttributesTheServerWritesAreRead(t *testing.T) {
	var sheets, scripts strings.Builder
	css, _ := fs.Glob(FS, "*.css")
	for _, n := range css {
		sheets.WriteString(read(t, n))
	}
	for _, src := range modules(t) {
		scripts.WriteString(src)
	}
	all := uncommented(sheets.String() + scripts.String())
	progs := code(scripts.String())
	templates, err := filepath.Glob(filepath.Join("..", "*", "*.templ"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("..", "*", "*", "*.templ"))
	templates = append(templates, more...)
	if len(templates) < 10 {
		t.Fatalf("found only %v", templates)
	}
	checked := 0
	for _, f := range templates {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range serverData.FindAllStringSubmatch(string(b), -1) {
			checked++
			if !readsAttr(all, "data-"+m[1]) && !readsField(progs, fieldOf(m[1])) {
				t.Errorf("%s writes data-%s, which no script or stylesheet reads", f, m[1])
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d data attributes", checked)
	}
}

var (
	declared  = regexp.MustCompile(`(?m)(?:^|[^.\w$])function\s+([\w$]+)|(?:const|let|var)\s+([\w$]+)\s*=\s*(?:async\s*)?(?:\([^()]*\)|[\w$]+)\s*=>`)
	imported  = regexp.MustCompile(`import\s*\{([^}]*)\}\s*from\s*"([^"]+)"`)
	exported  = regexp.MustCompile(`(?m)^export\s+(?:async\s+)?(?:function|const|let|class)\s+([\w$]+)`)
	exportSet = regexp.MustCompile(`(?m)^export\s*\{([^}]*)\}`)
	letFunc   = regexp.MustCompile(`let\s+([\w$]+)\s*=\s*(?:async\s*)?(?:function\b|\([^()]*\)\s*=>|[\w$]+\s*=>)`)
	patchGlob = regexp.MustCompile(`(?:[^.\w$]|^)(?:window|document|window\.oplab)\.[\w$]+\s*=[^=]`)
	ourGlobal = regexp.MustCompile(`window\.oplab\w*`)
)

// No function is swapped at run time: a module that behaves differently
// (the replay's player) is given options or branches on state, it does
// not reassign a function another module calls. Nor does a module patch
// the page's globals, or read one of oplab's: it shares what it has by
// export, and imports what it uses.
func TestNoFunctionIsReassigned(t *testing.T) {
	for name, src := range modules(t) {
		c := code(src)
		names := map[string]bool{}
		for _, m := range declared.FindAllStringSubmatch(c, -1) {
			names[m[1]+m[2]] = true
		}
		for _, m := range imported.FindAllStringSubmatch(c, -1) {
			for _, n := range strings.Split(m[1], ",") {
				f := strings.Fields(strings.ReplaceAll(n, " as ", " "))
				if len(f) > 0 {
					names[f[len(f)-1]] = true
				}
			}
		}
		for n := range names {
			re := regexp.MustCompile(`(?:^|[^.\w$])` + regexp.QuoteMeta(n) + `\s*=[^=>]`)
			for _, loc := range re.FindAllStringIndex(c, -1) {
				before := strings.TrimRight(c[max(0, loc[0]-12):loc[0]+1], " ")
				if strings.HasSuffix(before, "const") || strings.HasSuffix(before, "let") || strings.HasSuffix(before, "var") {
					continue // its declaration
				}
				t.Errorf("%s reassigns %s: pass a module what differs (options, a branch on state) instead", name, n)
			}
		}
		for _, m := range letFunc.FindAllStringSubmatch(c, -1) {
			t.Errorf("%s holds function %s in a let, which invites reassigning it: declare it with function or const", name, m[1])
		}
		for _, m := range patchGlob.FindAllString(c, -1) {
			t.Errorf("%s sets a global (%s): a module shares what it has by export", name, strings.TrimSpace(m))
		}
		for _, m := range ourGlobal.FindAllString(c, -1) {
			t.Errorf("%s reads %s: import it from the module that exports it", name, m)
		}
	}
}

// Every name a module imports is exported by the module it names, and
// that module is embedded: the browser would refuse the whole lab for one
// missing name.
func TestModuleImportsResolve(t *testing.T) {
	mods := modules(t)
	for name, src := range mods {
		for _, m := range imported.FindAllStringSubmatch(code(src), -1) {
			target := path.Join(path.Dir(name), strings.Trim(m[2], `"`))
			tsrc, ok := mods[target]
			if !ok {
				t.Errorf("%s imports %s, which is not embedded", name, target)
				continue
			}
			var have []string
			for _, e := range exported.FindAllStringSubmatch(tsrc, -1) {
				have = append(have, e[1])
			}
			for _, e := range exportSet.FindAllStringSubmatch(tsrc, -1) {
				for _, n := range strings.Split(e[1], ",") {
					if f := strings.Fields(n); len(f) > 0 {
						have = append(have, f[len(f)-1]) // the name after "as", if any
					}
				}
			}
			for _, n := range strings.Split(m[1], ",") {
				f := strings.Fields(n)
				if len(f) > 0 && !slices.Contains(have, f[0]) {
					t.Errorf("%s imports %s from %s, which does not export it", name, f[0], target)
				}
			}
		}
	}
}

// importEdge is any static import: of names, of a namespace or for effect.
var importEdge = regexp.MustCompile(`(?m)^\s*import\s*(?:[^"';]*?\bfrom\s*)?"([^"]+)"`)

// No module imports, by any path, a module that imports it: a circle makes
// which of them runs first a matter of who the page loads first, and each
// holds half of what the other means. A module that must tell one above it
// something sends an event to the document (forms.js ANSWERED, player.js
// VIEW_CHANGED, stream.js FOLLOW_ENDED).
func TestModulesImportNoCircle(t *testing.T) {
	mods := modules(t)
	graph := map[string][]string{}
	for name, src := range mods {
		for _, m := range importEdge.FindAllStringSubmatch(uncommented(src), -1) {
			graph[name] = append(graph[name], path.Join(path.Dir(name), m[1]))
		}
	}
	if len(graph["lab/main.js"]) < 10 {
		t.Fatalf("found %d imports in lab/main.js; the pattern no longer reads them", len(graph["lab/main.js"]))
	}
	for _, c := range circles(graph) {
		t.Errorf("modules import each other: %s", strings.Join(c, " → "))
	}
	// The check itself can fail.
	if got := circles(map[string][]string{"a.js": {"b.js"}, "b.js": {"c.js"}, "c.js": {"a.js"}, "d.js": {"a.js"}}); len(got) != 1 || len(got[0]) != 4 {
		t.Errorf("circles of a → b → c → a = %v; want that one", got)
	}
}

// circles returns a path for each circle depth-first search meets in
// graph, from a module back to itself.
func circles(graph map[string][]string) [][]string {
	const (
		unseen = iota
		open
		done
	)
	mark := map[string]int{}
	var stack []string
	var out [][]string
	var visit func(string)
	visit = func(n string) {
		mark[n] = open
		stack = append(stack, n)
		for _, next := range graph[n] {
			switch mark[next] {
			case unseen:
				visit(next)
			case open:
				i := slices.Index(stack, next)
				out = append(out, append(slices.Clone(stack[i:]), next))
			}
		}
		stack = stack[:len(stack)-1]
		mark[n] = done
	}
	names := make([]string, 0, len(graph))
	for n := range graph {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if mark[n] == unseen {
			visit(n)
		}
	}
	return out
}
