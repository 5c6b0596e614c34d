package demo

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/lessons/content"
)

// A demo is a markdown file whose YAML front matter holds its steps, so an
// instructor can write one without Go. Each step's action (do) and
// condition (until) is a short line from a closed vocabulary, checked when
// oplab starts, so a typo stops oplab with the file, step and field at
// fault instead of failing in front of a room.

// frontMatter is a demo file's YAML head.
type frontMatter struct {
	ID        string     `json:"id"`
	Order     int        `json:"order"`
	Title     string     `json:"title"`
	Summary   string     `json:"summary"`
	Databases []string   `json:"databases"`
	Advance   string     `json:"advance"`
	Steps     []stepYAML `json:"steps"`
}

type stepYAML struct {
	Title   string `json:"title"`
	Say     string `json:"say"`
	Do      string `json:"do"`
	Until   string `json:"until"`
	Timeout string `json:"timeout"`
	Dwell   string `json:"dwell"`
}

// verb is one word of the vocabulary: its arguments' names, for the usage
// line an error shows, and how it is built from checked arguments.
type verb[T any] struct {
	usage string
	build func(a *args) T
}

// actions are the words a step's do may start with.
var actions = map[string]verb[*Action]{
	"create": {"create NAME ENGINE VERSION REPLICAS", func(a *args) *Action {
		return createDatabase(a.created(0), a.engine(1), a.version(2), a.replicas(3))
	}},
	"scale":              {"scale NAME REPLICAS", func(a *args) *Action { return scaleDatabase(a.name(0), a.replicas(1)) }},
	"pitfall":            {"pitfall NAME PITFALL", func(a *args) *Action { return setPitfall(a.name(0), a.pitfall(1)) }},
	"delete-statefulset": {"delete-statefulset NAME", func(a *args) *Action { return deleteStatefulSet(a.noted(0, "statefulset")) }},
	"delete":             {"delete NAME", func(a *args) *Action { return deleteDatabase(a.noted(0, "database")) }},
	"pause-namespace":    {"pause-namespace", func(*args) *Action { return pauseNamespace }},
	"resume-namespace":   {"resume-namespace", func(*args) *Action { return resumeNamespace }},
}

// conditions are the words a step's until may start with. ready takes an
// optional REPLICAS, so it is listed under both counts.
var conditions = map[string]verb[*Wait]{
	"finalizer-added":       {"finalizer-added NAME", func(a *args) *Wait { return finalizerAdded(a.name(0)) }},
	"ready":                 {"ready NAME [REPLICAS]", func(a *args) *Wait { return ready(a.name(0), a.optionalReplicas(1)) }},
	"statefulset-recreated": {"statefulset-recreated NAME", func(a *args) *Wait { return statefulSetRecreated(a.after(0, "statefulset", "delete-statefulset")) }},
	"terminating":           {"terminating NAME", func(a *args) *Wait { return heldTerminating(a.name(0)) }},
	"snapshot-taken":        {"snapshot-taken NAME", func(a *args) *Wait { return snapshotTaken(a.after(0, "database", "delete")) }},
}

// Load returns the embedded demos (lessons/content/demos), then those of dir, an
// instructor's own folder ("" for none), each set in its files' order
// (front matter order, then file name). Every defect of every file is
// reported, each naming its file, step and field.
func Load(dir string) ([]Script, error) {
	scripts, err := LoadFS(content.Demos, "lessons/content/demos")
	if err != nil {
		return nil, fmt.Errorf("the embedded demos: %w", err)
	}
	if dir == "" {
		return scripts, nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("demos folder: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("demos folder %s is a file, not a folder", dir)
	}
	own, err := LoadFS(os.DirFS(dir), dir)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range own {
		if i := slices.IndexFunc(scripts, func(e Script) bool { return e.ID == s.ID }); i >= 0 {
			errs = append(errs, fmt.Errorf("%s: id %q is taken by the embedded demo %s: choose another id (and file name)", s.File, s.ID, scripts[i].File))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return append(scripts, own...), nil
}

// LoadFS reads every .md file at the root of files as a demo; where names
// the folder in errors and in each Script's File.
func LoadFS(files fs.FS, where string) ([]Script, error) {
	names, err := fs.Glob(files, "*.md")
	if err != nil {
		return nil, fmt.Errorf("list the demos in %s: %w", where, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no demos: %s holds no .md files", where)
	}
	type loaded struct {
		order  int
		script Script
	}
	var all []loaded
	var errs []error
	for _, name := range names {
		file := filepath.Join(where, name)
		src, err := fs.ReadFile(files, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", file, err))
			continue
		}
		var fm frontMatter
		if _, err := lessons.SplitFrontMatter(src, &fm); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		s, err := fm.script(strings.TrimSuffix(path.Base(name), ".md"))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		s.File = file
		all = append(all, loaded{fm.Order, s})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Demos with an order come first, by it; the rest by file name.
	slices.SortStableFunc(all, func(a, b loaded) int {
		if (a.order == 0) != (b.order == 0) {
			if a.order == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.order, b.order)
	})
	out := make([]Script, len(all))
	for i, l := range all {
		out[i] = l.script
	}
	return out, nil
}

// script validates the front matter and builds the Script; base is the
// file's name without ".md", which the id must equal.
func (fm frontMatter) script(base string) (Script, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !lessons.ValidSlug(fm.ID) {
		bad("id %q must be lowercase letters, digits and dashes", fm.ID)
	} else if fm.ID != base {
		bad("id %q must equal the file name %q", fm.ID, base)
	}
	if fm.Order < 0 {
		bad("order %d must be a positive number (or left out)", fm.Order)
	}
	if strings.TrimSpace(fm.Title) == "" {
		bad("title is empty")
	}
	if strings.TrimSpace(fm.Summary) == "" {
		bad("summary is empty: say in one sentence what the demo shows")
	}
	declared := map[string]bool{}
	for i, name := range fm.Databases {
		switch {
		case len(validation.IsDNS1123Label(name)) > 0:
			bad("databases[%d] %q is not a Database name: lowercase letters, digits and dashes, at most 63", i, name)
		case declared[name]:
			bad("databases[%d] %q is named twice", i, name)
		}
		declared[name] = true
	}
	advance := AdvanceManual
	switch fm.Advance {
	case "", string(AdvanceManual):
	case string(AdvanceAuto):
		advance = AdvanceAuto
	default:
		bad("advance %q must be manual (the presenter presses Next; the default) or auto (timed to the narration)", fm.Advance)
	}
	if len(fm.Steps) == 0 {
		bad("steps: a demo needs at least one step")
	}
	s := Script{ID: fm.ID, Title: fm.Title, Summary: fm.Summary, Databases: fm.Databases, Advance: advance}
	// done notes what earlier steps did, by "what/NAME": "created/shop",
	// "statefulset/shop" (its StatefulSet deleted), "database/shop".
	done := map[string]bool{}
	for i, y := range fm.Steps {
		where := fmt.Sprintf("steps[%d]", i)
		if y.Title != "" {
			where = fmt.Sprintf("steps[%d] (%s)", i, y.Title)
		}
		st := Step{Title: strings.TrimSpace(y.Title), Say: strings.TrimSpace(y.Say)}
		if st.Title == "" {
			bad("%s: title is empty", where)
		}
		if st.Say == "" {
			bad("%s: say is empty: write the narration the room hears", where)
		}
		a := &args{field: "do", declared: declared, done: done}
		if y.Do != "" {
			st.Do = parse(a, y.Do, actions)
			errs = append(errs, prefixed(where, a.errs)...)
		}
		a = &args{field: "until", declared: declared, done: done}
		if y.Until != "" {
			st.Until = parse(a, y.Until, conditions)
			errs = append(errs, prefixed(where, a.errs)...)
		}
		var err error
		if st.Timeout, err = duration(y.Timeout); err != nil {
			bad("%s: timeout: %w", where, err)
		} else if st.Timeout > 0 && y.Until == "" {
			bad("%s: timeout %s bounds nothing: the step has no until", where, y.Timeout)
		}
		if st.Dwell, err = duration(y.Dwell); err != nil {
			bad("%s: dwell: %w", where, err)
		}
		s.Steps = append(s.Steps, st)
	}
	for _, name := range fm.Databases {
		if !done["created/"+name] {
			bad("databases: %q is declared but no step creates it (create %s ENGINE VERSION REPLICAS)", name, name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Script{}, err
	}
	return s, nil
}

// parse reads one do or until line against vocabulary, noting each defect
// in a.errs.
func parse[T any](a *args, line string, vocabulary map[string]verb[T]) T {
	var zero T
	words := strings.Fields(line)
	if len(words) == 0 {
		a.fail("is blank: leave it out, or write one of %s", usages(vocabulary))
		return zero
	}
	v, ok := vocabulary[words[0]]
	if !ok {
		kind := map[string]string{"do": "action", "until": "condition"}[a.field]
		a.fail("unknown %s %q: want one of %s", kind, words[0], usages(vocabulary))
		return zero
	}
	a.words, a.usage = words[1:], v.usage
	want := strings.Count(v.usage, " ") - strings.Count(v.usage, "[")
	optional := strings.Count(v.usage, "[")
	if n := len(a.words); n < want || n > want+optional {
		a.fail("%s takes %s, got %d (%q): %s", words[0], lessons.Plural(want, "argument")+orMore(optional), n, line, v.usage)
		return zero
	}
	out := v.build(a)
	if len(a.errs) > 0 {
		return zero
	}
	return out
}

// usages lists the vocabulary's usage lines, sorted.
func usages[T any](vocabulary map[string]verb[T]) string {
	out := make([]string, 0, len(vocabulary))
	for _, v := range vocabulary {
		out = append(out, v.usage)
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func orMore(optional int) string {
	if optional > 0 {
		return fmt.Sprintf(" or %d", optional+1)
	}
	return ""
}

// args are a do or until line's arguments while it is checked; each getter
// checks its word and notes what is wrong in errs.
type args struct {
	field    string
	usage    string
	words    []string
	declared map[string]bool
	done     map[string]bool
	errs     []error
}

func (a *args) fail(format string, v ...any) {
	a.errs = append(a.errs, fmt.Errorf(a.field+": "+format, v...))
}

// name is a Database the demo declares, and has created by now.
func (a *args) name(i int) string {
	n := a.words[i]
	switch {
	case !a.declared[n]:
		a.fail("Database %q is not one the demo declares in databases (%s): add it there, or fix the name", n, a.declaredList())
	case !a.done["created/"+n]:
		a.fail("Database %q is used before the step that creates it", n)
	}
	return n
}

// created is the name a create step creates.
func (a *args) created(i int) string {
	n := a.words[i]
	if !a.declared[n] {
		a.fail("Database %q is not one the demo declares in databases (%s): add it there, so Play refuses while one of that name exists", n, a.declaredList())
	}
	a.done["created/"+n] = true
	return n
}

// noted is a Database name whose object the action notes for a later wait
// (its StatefulSet's or its own UID), under key.
func (a *args) noted(i int, key string) string {
	n := a.name(i)
	a.done[key+"/"+n] = true
	return n
}

// after is a Database name the wait needs an earlier action on: the UID
// that action noted tells the new object from the old.
func (a *args) after(i int, key, action string) string {
	n := a.name(i)
	if a.declared[n] && !a.done[key+"/"+n] {
		a.fail("%s %s needs an earlier step (or this one's do) to be %s %s", a.usage[:strings.Index(a.usage, " ")], n, action, n)
	}
	return n
}

func (a *args) declaredList() string {
	if len(a.declared) == 0 {
		return "none"
	}
	names := make([]string, 0, len(a.declared))
	for n := range a.declared {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (a *args) engine(i int) v1alpha1.Engine {
	e := v1alpha1.Engine(a.words[i])
	if e != v1alpha1.EnginePostgres && e != v1alpha1.EngineMySQL {
		a.fail("engine %q must be %s or %s", e, v1alpha1.EnginePostgres, v1alpha1.EngineMySQL)
	}
	return e
}

// version follows the CRD's rule for spec.version.
func (a *args) version(i int) string {
	v := a.words[i]
	ok := len(v) <= 32 && v[0] != '.' && v[0] != '_' && v[0] != '-'
	for _, r := range v {
		ok = ok && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '_' || r == '-')
	}
	if !ok {
		a.fail("version %q must be letters, digits, dots, dashes and underscores, starting with a letter or digit, at most 32", v)
	}
	return v
}

// replicas follows the CRD's bounds on spec.replicas.
func (a *args) replicas(i int) int32 {
	n, err := strconv.Atoi(a.words[i])
	if err != nil || n < 1 || n > 5 {
		a.fail("replicas %q must be a whole number from 1 to 5", a.words[i])
	}
	return int32(n)
}

func (a *args) optionalReplicas(i int) int32 {
	if i >= len(a.words) {
		return 0
	}
	return a.replicas(i)
}

// pitfall is one of the controller's pitfalls, or none ("" switches it off).
func (a *args) pitfall(i int) string {
	p := a.words[i]
	if p == "none" {
		return ""
	}
	names := []string{"none"}
	for _, info := range controller.Pitfalls {
		if info.Name == p {
			return p
		}
		names = append(names, info.Name)
	}
	a.fail("pitfall %q must be one of %s", p, strings.Join(names, ", "))
	return p
}

// duration reads a step's timeout or dwell ("" is zero).
func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q must be a positive duration such as 8s or 2m", s)
	}
	return d, nil
}

func prefixed(where string, errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		out[i] = fmt.Errorf("%s: %w", where, err)
	}
	return out
}
