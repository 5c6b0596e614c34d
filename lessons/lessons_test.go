package lessons

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/oplab-dev/oplab/controller"
)

// mustLoadReal loads the embedded course against the real controller source.
func mustLoadReal(t *testing.T) *Course {
	t.Helper()
	c, err := Load(Content, controller.Source)
	if err != nil {
		t.Fatalf("Load(embedded course): %v", err)
	}
	return c
}

func TestEveryLessonRenders(t *testing.T) {
	c := mustLoadReal(t)
	want := []string{
		"reconciliation-loop", "status-owners-finalizers", "pitfalls-interview",
		"revision-notes", "interview-tips", "cheat-sheet",
	}
	var got []string
	for _, l := range c.Lessons {
		got = append(got, l.Slug)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("course order = %v, want %v", got, want)
	}
	for _, l := range c.Lessons {
		t.Run(l.Slug, func(t *testing.T) {
			if len(l.HTML) < 500 {
				t.Errorf("HTML is only %d bytes: %q", len(l.HTML), l.HTML)
			}
			if len(l.Sections) == 0 {
				t.Error("no sections (## headings)")
			}
			for _, s := range l.Sections {
				if !strings.Contains(l.HTML, `id="`+s.ID+`"`) {
					t.Errorf("section %q has no id=%q in the HTML", s.Title, s.ID)
				}
			}
			if strings.Contains(l.HTML, "raw HTML omitted") {
				t.Error("page contains raw HTML, which the renderer drops")
			}
			if l.Kind == KindLesson && len(l.Live) == 0 {
				t.Error("a lesson needs at least one try-it-live action")
			}
		})
	}
}

// The issue names four live actions the lessons must offer.
func TestLessonsOfferTheIssuesLiveActions(t *testing.T) {
	c := mustLoadReal(t)
	offered := map[string]bool{}
	for _, l := range c.Kind(KindLesson) {
		for _, a := range l.Live {
			offered[a.Scenario] = true
			if !strings.Contains(l.HTML, `href="`+a.URL()+`"`) {
				t.Errorf("%s: live action %s is not linked in the HTML", l.Slug, a.Scenario)
			}
		}
	}
	for _, s := range []string{"first-reconcile", "finalizer", "status-thrash", "stuck-finalizer"} {
		if !offered[s] {
			t.Errorf("no lesson offers the %q live action", s)
		}
	}
}

// The lessons show the controller's real code: every region they name must
// be marked in controller/, and its code must appear in the page.
func TestControllerRegionsExist(t *testing.T) {
	c := mustLoadReal(t)
	if p := c.Problems(); len(p) > 0 {
		t.Fatalf("course has problems:\n%s", strings.Join(p, "\n"))
	}
	regions, err := Regions(controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, l := range c.Lessons {
		for _, name := range l.Code {
			r := regions[name]
			firstLine, _, _ := strings.Cut(r.Code, "\n")
			if !strings.Contains(l.HTML, escape(firstLine)) {
				t.Errorf("%s: region %s's first line %q is not in the page", l.Slug, name, firstLine)
			}
			shown++
		}
	}
	if shown == 0 {
		t.Error("no lesson shows controller code")
	}
}

func TestEveryLiveBlockHasALabel(t *testing.T) {
	for _, l := range mustLoadReal(t).Lessons {
		for _, live := range l.Live {
			if live.Title == DefaultLiveTitle {
				t.Errorf("%s: live block %q has no label (```live:%s LABEL)", l.file, live.Scenario, live.Scenario)
			}
		}
	}
}

func TestResolve(t *testing.T) {
	c := mustLoadReal(t)
	tests := []struct {
		link    string
		wantErr string // substring; "" means it resolves
	}{
		{"/", ""},
		{"/quiz", ""},
		{"/flashcards", ""},
		{"/lessons", ""},
		{"/lab", ""},
		{"/lab?scenario=finalizer", ""},
		{"/lessons/reconciliation-loop", ""},
		{"/lessons/reconciliation-loop#level-triggered-not-edge-triggered", ""},
		{"/lessons/status-owners-finalizers#observedgeneration", ""},
		{"/lessons/nope", `no lesson has slug "nope"`},
		{"/lessons/reconciliation-loop#nope", "has no section #nope"},
		{"/lab?scenario=", "only one scenario parameter"},
		{"/lab?scenario=finalizer&x=1", "only one scenario parameter"},
		{"/quiz?x=1", "takes no query or fragment"},
		{"https://example.com/", "not a path within oplab"},
		{"lessons/x", "not a path within oplab"},
		{"/admin", "leads to no oplab page"},
		{"/challenges", ""},
		{"/challenges/owner-gc", ""},
		{"/challenges/Bad_Id", "leads to no oplab page"},
	}
	for _, tt := range tests {
		t.Run(tt.link, func(t *testing.T) {
			err := c.Resolve(tt.link)
			checkErr(t, err, tt.wantErr)
		})
	}
}

const goodFront = "---\ntitle: T\nslug: s\norder: 1\nkind: lesson\nsummary: S\n---\n"

func TestLoadRejectsBadContent(t *testing.T) {
	code := fstest.MapFS{"a.go": {Data: []byte("package a\n// lesson:begin r\nfunc f() {}\n// lesson:end r\n")}}
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{"no files", map[string]string{}, "content holds no .md files"},
		{"no front matter", map[string]string{"a.md": "# hi\n"}, "a.md: front matter missing"},
		{"front matter not closed", map[string]string{"a.md": "---\ntitle: x\n"}, "a.md: front matter not closed"},
		{"unknown field", map[string]string{"a.md": strings.Replace(goodFront, "summary", "sumary", 1)}, `unknown field "sumary"`},
		{"bad slug", map[string]string{"a.md": strings.Replace(goodFront, "slug: s", "slug: Bad Slug", 1)}, `slug "Bad Slug" must be lowercase`},
		{"bad kind", map[string]string{"a.md": strings.Replace(goodFront, "kind: lesson", "kind: essay", 1)}, `kind "essay" must be`},
		{"zero order", map[string]string{"a.md": strings.Replace(goodFront, "order: 1", "order: 0", 1)}, "order 0 must be a positive number"},
		{"no title", map[string]string{"a.md": strings.Replace(goodFront, "title: T", "title: \"\"", 1)}, "title is empty"},
		{"no scenario", map[string]string{"a.md": goodFront + "```live:\nwatch\n```\n"}, "live block names no scenario"},
		{"empty live body", map[string]string{"a.md": goodFront + "```live:finalizer\n```\n"}, "its body is empty"},
		{"broken anchor", map[string]string{"a.md": goodFront + "## One\n[x](#two)\n"}, `lesson "s" has no section #two`},
		{"broken page link", map[string]string{"a.md": goodFront + "[x](/lessons/other)\n"}, `no lesson has slug "other"`},
		{"duplicate slug", map[string]string{"a.md": goodFront, "b.md": strings.Replace(goodFront, "order: 1", "order: 2", 1)}, `b.md: slug "s" is also used by a.md`},
		{"duplicate order", map[string]string{"a.md": goodFront, "b.md": strings.Replace(goodFront, "slug: s", "slug: t", 1)}, "b.md: order 1 is also used by a.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := fstest.MapFS{}
			for name, body := range tt.files {
				content[name] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := Load(content, code)
			checkErr(t, err, tt.wantErr)
		})
	}
}

func TestDirectivesRender(t *testing.T) {
	code := fstest.MapFS{
		"c.go": {Data: []byte("package c\n\nfunc f() {\n\t// lesson:begin cmp\n\tif a < b {\n\t\treturn\n\t}\n\t// lesson:end cmp\n}\n")},
	}
	md := goodFront + "## Sec\n\n```controller:cmp\n```\n\n```controller:gone\n```\n\n```live:finalizer Delete it now\nDelete <it>\nand watch.\n```\n\n```sh\necho <hi>\n```\n"
	c, err := Load(fstest.MapFS{"a.md": {Data: []byte(md)}}, code)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Lessons[0]
	for _, want := range []string{
		`<figure class="code" data-region="cmp">`,
		"controller/c.go, lines 5–7",
		"<pre tabindex=\"0\"><code class=\"language-go\">if a &lt; b {\n\treturn\n}\n</code></pre>",
		`The controller code “gone” is not marked`,
		`<aside class="live" aria-label="Try it live">`,
		"<p>Delete &lt;it&gt; and watch.</p>",
		`href="/lab?scenario=finalizer">Delete it now →</a>`,
		"<pre tabindex=\"0\"><code class=\"language-sh\">echo &lt;hi&gt;\n</code></pre>",
	} {
		if !strings.Contains(l.HTML, want) {
			t.Errorf("HTML lacks %q:\n%s", want, l.HTML)
		}
	}
	if !slices.Equal(l.Code, []string{"cmp", "gone"}) {
		t.Errorf("Code = %v, want [cmp gone]", l.Code)
	}
	if len(l.Problems) != 1 || !strings.Contains(l.Problems[0], `"gone"`) {
		t.Errorf("Problems = %v, want one naming region gone", l.Problems)
	}
	want := []Live{{Scenario: "finalizer", Title: "Delete it now", Text: "Delete <it> and watch.", Section: "sec"}}
	if !slices.Equal(l.Live, want) {
		t.Errorf("Live = %+v, want %+v", l.Live, want)
	}
}

func TestRegions(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    map[string]Region
		wantErr string
	}{
		{
			name: "nested regions drop each other's markers and dedent",
			files: map[string]string{"r.go": "package r\nfunc f() {\n\t// lesson:begin outer\n\tx := 1\n\t// lesson:begin inner\n\tif x > 0 {\n\n\t\tx++\n\t}\n\t// lesson:end inner\n\t// lesson:end outer\n}\n",
				"r_test.go": "package r\n// lesson:begin outer\n"},
			want: map[string]Region{
				"outer": {Name: "outer", File: "r.go", Start: 4, End: 10, Code: "x := 1\nif x > 0 {\n\n\tx++\n}"},
				"inner": {Name: "inner", File: "r.go", Start: 6, End: 9, Code: "if x > 0 {\n\n\tx++\n}"},
			},
		},
		{name: "no regions", files: map[string]string{"r.go": "package r\n"}, want: map[string]Region{}},
		{name: "unclosed", files: map[string]string{"r.go": "package r\n// lesson:begin a\nx\n"}, wantErr: `r.go:2: region "a" has no // lesson:end a`},
		{name: "end without begin", files: map[string]string{"r.go": "package r\n// lesson:end a\n"}, wantErr: "r.go:2: // lesson:end a has no matching begin"},
		{name: "begins twice", files: map[string]string{"r.go": "// lesson:begin a\n// lesson:begin a\n"}, wantErr: `r.go:2: region "a" begins again`},
		{name: "twice in a file", files: map[string]string{"r.go": "// lesson:begin a\nx\n// lesson:end a\n// lesson:begin a\nx\n// lesson:end a\n"}, wantErr: `r.go:4: region "a" is marked twice in this file`},
		{name: "name not a slug", files: map[string]string{"r.go": "// lesson:begin Reconcile-\nx\n// lesson:end Reconcile-\n"}, wantErr: `r.go:1: region name "Reconcile-" must be lowercase`},
		{name: "no name", files: map[string]string{"r.go": "x\n// lesson:end\n"}, wantErr: `r.go:2: region name "" must be lowercase`},
		{name: "empty", files: map[string]string{"r.go": "// lesson:begin a\n\n// lesson:end a\n"}, wantErr: `r.go:3: region "a" is empty`},
		{
			name:    "twice across files",
			files:   map[string]string{"a.go": "// lesson:begin a\nx\n// lesson:end a\n", "b.go": "// lesson:begin a\ny\n// lesson:end a\n"},
			wantErr: `region "a" is marked twice: in a.go and b.go`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			got, err := Regions(fsys)
			checkErr(t, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d regions %v, want %d", len(got), got, len(tt.want))
			}
			for name, w := range tt.want {
				if got[name] != w {
					t.Errorf("region %s = %+v, want %+v", name, got[name], w)
				}
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 questions", 1: "1 question", 2: "2 questions"} {
		if got := Plural(n, "question"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// Markdown is how lessons and challenges alike are read: every heading
// gets its anchor, tables render, and raw HTML in the source is dropped.
func TestMarkdownAnchorsTablesAndNoRawHTML(t *testing.T) {
	var buf bytes.Buffer
	src := "## Owners versus finalizers\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>\n"
	if err := Markdown().Convert([]byte(src), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`<h2 id="owners-versus-finalizers">`, "<table>", "<td>1</td>"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered %q lacks %s", out, want)
		}
	}
	if strings.Contains(out, "<script") {
		t.Errorf("raw HTML kept: %s", out)
	}
}
