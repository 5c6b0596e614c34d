package lessons

import (
	"bytes"
	"errors"
	"fmt"
	stdhtml "html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The fenced-block directives, as the info string's prefix.
const (
	directiveController = "controller:"
	directiveLive       = "live:"
)

// markdown is a goldmark instance that knows the directives.
type markdown struct {
	gm goldmark.Markdown
}

// Markdown is how the course's markdown is read, lessons and challenges
// alike: tables, strikethrough, and a stable #anchor on every heading that
// quiz questions and other pages link to. Raw HTML stays disabled
// (goldmark's default) because nothing in the course needs it.
func Markdown(more ...goldmark.Option) goldmark.Markdown {
	return goldmark.New(append([]goldmark.Option{
		goldmark.WithExtensions(extension.Table, extension.Strikethrough),
		goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	}, more...)...)
}

// newMarkdown builds the lessons' renderer: Markdown, with the directives
// and the claims.
func newMarkdown(regions map[string]Region) *markdown {
	gm := Markdown(
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(claimTransformer{}, 100))),
		goldmark.WithRendererOptions(
			renderer.WithNodeRenderers(util.Prioritized(&directiveRenderer{regions: regions}, 100), util.Prioritized(claimRenderer{}, 100)),
		),
	)
	return &markdown{gm: gm}
}

// render parses body, fills l's sections, live actions, code regions, links
// and problems from the tree, then renders its HTML.
func (m *markdown) render(l *Lesson, body []byte, regions map[string]Region) error {
	doc := m.gm.Parser().Parse(text.NewReader(body))
	l.anchors = map[string]bool{}
	if err := l.collect(doc, body, regions); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := m.gm.Renderer().Render(&buf, body, doc); err != nil {
		return fmt.Errorf("render markdown: %w", err)
	}
	l.HTML = buf.String()
	return nil
}

// collect walks the tree once, gathering what the page links to and shows.
func (l *Lesson) collect(doc ast.Node, src []byte, regions map[string]Region) error {
	section := ""
	return ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			id := headingID(n)
			l.anchors[id] = true
			if n.Level == 2 {
				section = id
				l.Sections = append(l.Sections, Section{ID: id, Title: plainText(n, src)})
			}
		case *ast.Link:
			l.addLink(string(n.Destination))
		case *ast.FencedCodeBlock:
			return ast.WalkSkipChildren, l.addDirective(n, src, regions, section)
		case *claimNode:
			wording := n.Title
			if wording == "" {
				wording = plainText(n, src)
			}
			return ast.WalkContinue, l.addClaim(n.Screen, wording)
		}
		return ast.WalkContinue, nil
	})
}

// addLink records links within oplab; a bare #fragment is relative to this
// page. Links to other sites are not checked.
func (l *Lesson) addLink(dest string) {
	switch {
	case strings.HasPrefix(dest, "#"):
		l.links = append(l.links, l.URL()+dest)
	case strings.HasPrefix(dest, "/"):
		l.links = append(l.links, dest)
	}
}

// addDirective records a controller region or live action. A live action
// without a scenario or a body is an error; an unmarked region is a problem.
func (l *Lesson) addDirective(n *ast.FencedCodeBlock, src []byte, regions map[string]Region, section string) error {
	info := string(n.Language(src))
	if name, ok := strings.CutPrefix(info, directiveController); ok {
		l.Code = append(l.Code, name)
		if _, ok := regions[name]; !ok {
			l.Problems = append(l.Problems, fmt.Sprintf("controller region %q is not marked in controller/ (// lesson:begin %s)", name, name))
		}
		return nil
	}
	if name, ok := strings.CutPrefix(info, directiveLive); ok {
		if name == "" {
			return errors.New("live block names no scenario: write ```live:SCENARIO")
		}
		body, claims := liveText(blockText(n, src))
		if body == "" {
			return fmt.Errorf("live block %q says nothing about what to watch: its body is empty", name)
		}
		for _, c := range claims {
			if err := l.addClaim(c[0], c[1]); err != nil {
				return fmt.Errorf("live block %q: %w", name, err)
			}
		}
		l.Live = append(l.Live, Live{Scenario: name, Title: liveTitle(n, src), Text: body, Section: section})
	}
	return nil
}

// directiveRenderer renders fenced code blocks, turning the directives into
// their boxes and every other block into plain <pre><code>.
type directiveRenderer struct {
	regions map[string]Region
}

// RegisterFuncs replaces goldmark's fenced code block renderer.
func (r *directiveRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, r.renderFenced)
}

func (r *directiveRenderer) renderFenced(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.FencedCodeBlock)
	info := string(n.Language(src))
	if name, ok := strings.CutPrefix(info, directiveController); ok {
		r.writeRegion(w, name)
		return ast.WalkSkipChildren, nil
	}
	if name, ok := strings.CutPrefix(info, directiveLive); ok {
		writeLive(w, name, liveTitle(n, src), blockText(n, src))
		return ast.WalkSkipChildren, nil
	}
	writeCode(w, info, rawLines(n, src))
	return ast.WalkSkipChildren, nil
}

func (r *directiveRenderer) writeRegion(w util.BufWriter, name string) {
	reg, ok := r.regions[name]
	if !ok {
		fmt.Fprintf(w, "<p class=\"code-missing\" role=\"note\">The controller code “%s” is not marked in controller/ yet.</p>\n", stdhtml.EscapeString(name))
		return
	}
	fmt.Fprintf(w, "<figure class=\"code\" data-region=\"%s\">\n<figcaption>controller/%s, lines %d–%d <span class=\"muted\">(compiled into this binary)</span></figcaption>\n",
		stdhtml.EscapeString(name), stdhtml.EscapeString(reg.File), reg.Start, reg.End)
	writeCode(w, "go", reg.Code+"\n")
	_, _ = w.WriteString("</figure>\n")
}

// liveTitle is the label after the scenario in a live block's info string.
func liveTitle(n *ast.FencedCodeBlock, src []byte) string {
	if n.Info == nil {
		return DefaultLiveTitle
	}
	_, label, _ := strings.Cut(string(n.Info.Segment.Value(src)), " ")
	if label = strings.TrimSpace(label); label != "" {
		return label
	}
	return DefaultLiveTitle
}

func writeLive(w util.BufWriter, scenario, title, body string) {
	fmt.Fprintf(w, "<aside class=\"live\" aria-label=\"Try it live\">\n<p class=\"live-kicker\">Try it live</p>\n<p>%s</p>\n<p><a class=\"button primary\" href=\"%s\">%s →</a></p>\n</aside>\n",
		liveHTML(body), stdhtml.EscapeString(ScenarioURL(scenario)), stdhtml.EscapeString(title))
}

// writeCode writes a code block. It is focusable (tabindex 0) so that a
// keyboard can scroll a line too wide for the screen.
func writeCode(w util.BufWriter, lang, code string) {
	_, _ = w.WriteString("<pre tabindex=\"0\"><code")
	if lang != "" {
		fmt.Fprintf(w, " class=\"language-%s\"", stdhtml.EscapeString(lang))
	}
	_, _ = w.WriteString(">")
	_, _ = w.WriteString(stdhtml.EscapeString(code))
	_, _ = w.WriteString("</code></pre>\n")
}

// rawLines is a code block's content exactly as written.
func rawLines(n ast.Node, src []byte) string {
	var b strings.Builder
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// blockText is a directive's body as one line of prose.
func blockText(n ast.Node, src []byte) string {
	return strings.Join(strings.Fields(rawLines(n, src)), " ")
}

// headingID is the id goldmark's auto heading IDs assigned.
func headingID(h *ast.Heading) string {
	v, ok := h.AttributeString("id")
	if !ok {
		return ""
	}
	b, _ := v.([]byte)
	return string(b)
}

// plainText concatenates the text under n, dropping inline markup.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}
