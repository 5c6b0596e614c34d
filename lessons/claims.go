package lessons

import (
	"fmt"
	stdhtml "html"
	"regexp"
	"slices"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A screen claim is a phrase of a lesson that names something on oplab's
// screen with its exact wording: a button, a pill, a card field, a panel,
// the words of a timeline row. The lesson writer marks it as a markdown
// link whose destination is the screen it is on:
//
//	Press [Pause my namespace](screen:lab), then delete the Database.
//	The timeline marks its rows [*your code*](screen:timeline).
//	Similar reconciles fold into [in sync ×N](screen:timeline "in sync ×").
//
// It renders as the text alone (inside <span data-screen="lab">, no link,
// no style), so the page reads as if it were unmarked. The wording claimed
// is the link's text, or its title when the prose cannot quote the screen
// exactly (a count, a name that varies). The same markup works in the body
// of a live block. A web/ test (TestBrowserLessonClaimsOnScreen) drives
// the real lab in Chromium through the states the lessons talk about and
// fails when a claimed wording is not on its screen; so a lesson that names
// a label must say it as the screen does, and a relabelled button fails a
// test instead of confusing a learner.

// Screens are the places a claim can name, with what each covers.
var Screens = map[string]string{
	"lab":      "the lab page (/lab): cards, buttons, menus, the controller bar, the panels and their headings",
	"timeline": "the lab's timeline rows (drawn by web/static/lab/timeline.js)",
	"code":     "the code page (/code)",
}

// claimScheme is the destination prefix of a claim.
const claimScheme = "screen:"

// Claim is one phrase of a lesson that names something on the screen.
type Claim struct {
	// Screen is where the wording is (a key of Screens).
	Screen string
	// Wording is what the screen shows, exactly (whitespace aside).
	Wording string
	// File is the lesson's file, for messages.
	File string
}

func (c Claim) String() string {
	return fmt.Sprintf("%s: %q on the %s screen", c.File, c.Wording, c.Screen)
}

// Claims are the page's screen claims, in order of appearance.
func (l Lesson) Claims() []Claim { return slices.Clone(l.claims) }

// Claims are every page's screen claims, in course order.
func (c *Course) Claims() []Claim {
	var out []Claim
	for _, l := range c.Lessons {
		out = append(out, l.claims...)
	}
	return out
}

// addClaim records a claim, or an error for a screen that does not exist
// or a wording that is empty.
func (l *Lesson) addClaim(screen, wording string) error {
	wording = strings.Join(strings.Fields(wording), " ")
	if _, ok := Screens[screen]; !ok {
		names := make([]string, 0, len(Screens))
		for s := range Screens {
			names = append(names, s)
		}
		slices.Sort(names)
		return fmt.Errorf("screen claim %q names screen %q: write one of screen:%s", wording, screen, strings.Join(names, ", screen:"))
	}
	if wording == "" {
		return fmt.Errorf("screen claim on %q has no wording", screen)
	}
	l.claims = append(l.claims, Claim{Screen: screen, Wording: wording, File: l.file})
	return nil
}

// kindClaim is the inline node a claim link becomes.
var kindClaim = ast.NewNodeKind("ScreenClaim")

// claimNode is a claim in the tree: its children are the link's text.
type claimNode struct {
	ast.BaseInline
	Screen, Title string
}

func (n *claimNode) Kind() ast.NodeKind { return kindClaim }

func (n *claimNode) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"Screen": n.Screen, "Title": n.Title}, nil)
}

// claimTransformer turns each link to screen:NAME into a claimNode.
type claimTransformer struct{}

func (claimTransformer) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	var links []*ast.Link
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if l, ok := n.(*ast.Link); ok && entering && strings.HasPrefix(string(l.Destination), claimScheme) {
			links = append(links, l)
		}
		return ast.WalkContinue, nil
	})
	for _, l := range links {
		c := &claimNode{Screen: strings.TrimPrefix(string(l.Destination), claimScheme), Title: string(l.Title)}
		for child := l.FirstChild(); child != nil; {
			next := child.NextSibling()
			c.AppendChild(c, child)
			child = next
		}
		l.Parent().ReplaceChild(l.Parent(), l, c)
	}
}

// claimRenderer renders a claim as its text in a span.
type claimRenderer struct{}

func (claimRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindClaim, func(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			fmt.Fprintf(w, `<span data-screen="%s">`, stdhtml.EscapeString(node.(*claimNode).Screen))
		} else {
			_, _ = w.WriteString("</span>")
		}
		return ast.WalkContinue, nil
	})
}

// liveClaim is a claim in a live block's body, which is plain text, not
// markdown: the same link syntax, found by pattern.
var liveClaim = regexp.MustCompile(`\[([^\[\]]+)\]\(` + claimScheme + `([^\s)]*)(?:\s+"([^"]*)")?\)`)

// liveText is a live block's body without its claims' markup, and the
// claims as (screen, wording) pairs.
func liveText(body string) (plain string, claims [][2]string) {
	plain = liveClaim.ReplaceAllStringFunc(body, func(m string) string {
		sub := liveClaim.FindStringSubmatch(m)
		wording := sub[1]
		if sub[3] != "" {
			wording = sub[3]
		}
		claims = append(claims, [2]string{sub[2], wording})
		return sub[1]
	})
	return plain, claims
}

// liveHTML is a live block's body as HTML: escaped, each claim in its span.
func liveHTML(body string) string {
	var b strings.Builder
	last := 0
	for _, m := range liveClaim.FindAllStringSubmatchIndex(body, -1) {
		b.WriteString(stdhtml.EscapeString(body[last:m[0]]))
		fmt.Fprintf(&b, `<span data-screen="%s">%s</span>`, stdhtml.EscapeString(body[m[4]:m[5]]), stdhtml.EscapeString(body[m[2]:m[3]]))
		last = m[1]
	}
	b.WriteString(stdhtml.EscapeString(body[last:]))
	return b.String()
}
