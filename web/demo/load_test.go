package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// The embedded demo files load to the steps the demos had when they were
// written in Go: the same titles, narration, timing, actions and waits.
func TestEmbeddedDemosLoadToTheGoCodedSteps(t *testing.T) {
	got, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	// flat is what a step does, in words: the funcs themselves cannot be
	// compared, their descriptions name the verb and every argument.
	type flatStep struct {
		Title, Say, Do, Until string
		Timeout, Dwell        string
	}
	type flat struct {
		ID, Title, Summary string
		Databases          []string
		Steps              []flatStep
	}
	flatten := func(ss []Script) []flat {
		var out []flat
		for _, s := range ss {
			f := flat{ID: s.ID, Title: s.Title, Summary: s.Summary, Databases: s.Databases}
			for _, st := range s.Steps {
				fs := flatStep{Title: st.Title, Say: st.Say, Timeout: st.Timeout.String(), Dwell: st.Dwell.String()}
				if st.Do != nil {
					fs.Do = st.Do.What
				}
				if st.Until != nil {
					fs.Until = st.Until.What
				}
				f.Steps = append(f.Steps, fs)
			}
			out = append(out, f)
		}
		return out
	}
	if diff := cmp.Diff(flatten(goCoded), flatten(got)); diff != "" {
		t.Errorf("the embedded demos differ from the Go-coded ones (-Go +files):\n%s", diff)
	}
	for _, s := range got {
		if s.Advance != AdvanceManual {
			t.Errorf("%s advances %q, want manual (the default)", s.ID, s.Advance)
		}
		if !strings.HasPrefix(s.File, "lessons/content/demos/") {
			t.Errorf("%s was read from %q, want lessons/content/demos/", s.ID, s.File)
		}
		for i, st := range s.Steps {
			if len(st.Say) < 80 {
				t.Errorf("%s step %d: narration %q is too short for a room to follow", s.ID, i+1, st.Say)
			}
		}
	}
}

// valid is a demo file that loads; each case below breaks one thing.
const valid = `---
id: mine
title: Mine
summary: One Database, scaled and deleted.
databases: [cart]
steps:
  - title: Create cart
    say: We create cart.
    do: create cart postgres 16 1
    until: ready cart
  - title: Scale
    say: Three replicas.
    do: scale cart 3
    until: ready cart 3
    timeout: 2m
  - title: Delete
    say: Gone, with a snapshot.
    do: delete cart
    until: snapshot-taken cart
    dwell: 8s
---
Notes for whoever edits this file.
`

func TestLoaderErrorsNameTheFileStepAndField(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		want           []string // each must appear in the error
	}{
		{"unknown action", "do: scale cart 3", "do: grow cart 3", []string{"mine.md", "steps[1] (Scale)", `do: unknown action "grow"`, "scale NAME REPLICAS"}},
		{"unknown condition", "until: ready cart 3", "until: healthy cart", []string{"steps[1] (Scale)", `until: unknown condition "healthy"`, "ready NAME [REPLICAS]"}},
		{"too few arguments", "do: create cart postgres 16 1", "do: create cart postgres 16", []string{"steps[0] (Create cart)", "do: create takes 4 arguments, got 3", "create NAME ENGINE VERSION REPLICAS"}},
		{"too many arguments", "until: ready cart 3", "until: ready cart 3 4", []string{"steps[1] (Scale)", "until: ready takes 1 argument or 2, got 3"}},
		{"replicas not a number", "do: scale cart 3", "do: scale cart three", []string{"steps[1] (Scale)", `do: replicas "three" must be a whole number from 1 to 5`}},
		{"replicas out of range", "do: scale cart 3", "do: scale cart 9", []string{`replicas "9" must be a whole number from 1 to 5`}},
		{"unknown engine", "postgres 16 1", "oracle 16 1", []string{"steps[0] (Create cart)", `do: engine "oracle" must be postgres or mysql`}},
		{"undeclared Database", "do: scale cart 3", "do: scale shop 3", []string{"steps[1] (Scale)", `do: Database "shop" is not one the demo declares in databases (cart)`}},
		{"Database used before its create", "do: create cart postgres 16 1\n    until: ready cart\n  - title: Scale\n    say: Three replicas.\n    do: scale cart 3",
			"do: pitfall cart none\n    until: ready cart\n  - title: Scale\n    say: Three replicas.\n    do: create cart postgres 16 1",
			[]string{"steps[0] (Create cart)", `do: Database "cart" is used before the step that creates it`}},
		{"wait with no action to follow", "do: delete cart\n", "do: pitfall cart no-finalizer\n", []string{"steps[2] (Delete)", "until: snapshot-taken cart needs an earlier step (or this one's do) to be delete cart"}},
		{"unknown pitfall", "do: delete cart\n", "do: pitfall cart sloppy\n", []string{`do: pitfall "sloppy" must be one of none, non-idempotent-create`}},
		{"duration", "dwell: 8s", "dwell: eight", []string{"steps[2] (Delete)", `dwell: "eight" must be a positive duration`}},
		{"timeout with no until", "    until: snapshot-taken cart\n", "    timeout: 1m\n", []string{"steps[2] (Delete)", "timeout 1m bounds nothing"}},
		{"missing title", "  - title: Scale\n", "  - title: \"\"\n", []string{"steps[1]: title is empty"}},
		{"missing narration", "    say: Three replicas.\n", "", []string{"steps[1] (Scale): say is empty"}},
		{"missing summary", "summary: One Database, scaled and deleted.\n", "", []string{"mine.md: summary is empty"}},
		{"id not the file name", "id: mine", "id: yours", []string{`id "yours" must equal the file name "mine"`}},
		{"unknown field", "    dwell: 8s", "    dwel: 8s", []string{"mine.md: front matter", `unknown field "dwel"`}},
		{"advance", "databases: [cart]", "advance: sometimes\ndatabases: [cart]", []string{`advance "sometimes" must be manual`}},
		{"declared, never created", "databases: [cart]", "databases: [cart, shop]", []string{`databases: "shop" is declared but no step creates it`}},
		{"bad Database name", "databases: [cart]", "databases: [cart, Shop_1]", []string{`databases[1] "Shop_1" is not a Database name`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(valid, c.old, c.new, 1)
			if src == valid {
				t.Fatalf("the case changes nothing: %q not in the file", c.old)
			}
			want := c.want
			_, err := LoadFS(fstest.MapFS{"mine.md": {Data: []byte(src)}}, "demos")
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			for _, w := range append(want, "demos/mine.md") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
	// The valid file itself loads, as written.
	got, err := LoadFS(fstest.MapFS{"mine.md": {Data: []byte(valid)}}, "demos")
	if err != nil {
		t.Fatal(err)
	}
	s := got[0]
	if s.Advance != AdvanceManual || len(s.Steps) != 3 || s.Steps[1].Do.What != "scale Database cart to 3 replicas" ||
		s.Steps[1].Until.What != "Database cart to be Ready at 3 replicas with observedGeneration caught up" ||
		s.Steps[1].Timeout.String() != "2m0s" || s.Steps[2].Dwell.String() != "8s" {
		t.Errorf("loaded %+v", s)
	}
}

// An instructor's folder adds its demos after the embedded ones; an id the
// embedded demos use is refused, naming both files.
func TestLoadAddsAnInstructorsFolder(t *testing.T) {
	dir := t.TempDir()
	auto := strings.Replace(valid, "databases: [cart]", "advance: auto\ndatabases: [cart]", 1)
	if err := os.WriteFile(filepath.Join(dir, "mine.md"), []byte(auto), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, " ") != "reconcile-loop died-mid-deletion mine" {
		t.Errorf("demos %q; want the embedded ones in order, then mine", ids)
	}
	if last := got[len(got)-1]; last.Advance != AdvanceAuto || last.File != filepath.Join(dir, "mine.md") {
		t.Errorf("mine: advance %q from %q", last.Advance, last.File)
	}
	taken := strings.Replace(valid, "id: mine", "id: reconcile-loop", 1)
	if err := os.WriteFile(filepath.Join(dir, "reconcile-loop.md"), []byte(taken), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "reconcile-loop.md")+`: id "reconcile-loop" is taken by the embedded demo lessons/content/demos/reconcile-loop.md`) {
		t.Errorf("a taken id: %v", err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "nope"), "demos folder: stat"},
		{filepath.Join(dir, "mine.md"), "is a file, not a folder"},
		{t.TempDir(), "holds no .md files"},
	} {
		if _, err := Load(c.dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s): %v; want %q", c.dir, err, c.want)
		}
	}
}
