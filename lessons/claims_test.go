package lessons

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// A claim renders as its text alone, is collected with its screen and
// wording (the title when there is one), in prose and in a live block's
// body alike; the live box and Live.Text read without the markup.
func TestScreenClaimsRenderAsTextAndAreCollected(t *testing.T) {
	md := goodFront + "## Sec\n\nPress [**Pause my namespace**](screen:lab), then watch for\n[in sync ×N](screen:timeline \"in sync ×\") and a [normal link](/quiz).\n\n" +
		"```live:finalizer Delete it\nPress [Delete Database](screen:lab) <now>.\n```\n"
	c, err := Load(fstest.MapFS{"a.md": {Data: []byte(md)}}, fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	l := c.Lessons[0]
	for _, want := range []string{
		`Press <span data-screen="lab"><strong>Pause my namespace</strong></span>, then watch for`,
		`<span data-screen="timeline">in sync ×N</span> and a <a href="/quiz">normal link</a>.`,
		`<p>Press <span data-screen="lab">Delete Database</span> &lt;now&gt;.</p>`,
	} {
		if !strings.Contains(l.HTML, want) {
			t.Errorf("HTML lacks %q:\n%s", want, l.HTML)
		}
	}
	if strings.Contains(l.HTML, "screen:") {
		t.Errorf("HTML shows the claim markup:\n%s", l.HTML)
	}
	want := []Claim{
		{Screen: "lab", Wording: "Pause my namespace", File: "a.md"},
		{Screen: "timeline", Wording: "in sync ×", File: "a.md"},
		{Screen: "lab", Wording: "Delete Database", File: "a.md"},
	}
	if got := c.Claims(); !slices.Equal(got, want) {
		t.Errorf("Claims = %+v, want %+v", got, want)
	}
	if got := l.Live[0].Text; got != "Press Delete Database <now>." {
		t.Errorf("Live text = %q, want the body without the markup", got)
	}
}

func TestScreenClaimsRejectUnknownScreens(t *testing.T) {
	for name, md := range map[string]string{
		"prose":      goodFront + "Press [Pause](screen:labb).\n",
		"live block": goodFront + "```live:finalizer\nPress [Pause](screen:labb).\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(fstest.MapFS{"a.md": {Data: []byte(md)}}, fstest.MapFS{})
			checkErr(t, err, `names screen "labb": write one of screen:code, screen:lab, screen:timeline`)
		})
	}
}

// The real course's claims name known screens; the lessons that teach
// what the lab shows make some.
func TestTheCourseMakesScreenClaims(t *testing.T) {
	c := mustLoadReal(t)
	for _, l := range c.Kind(KindLesson) {
		if len(l.Claims()) == 0 {
			t.Errorf("lesson %s names nothing on the screen with screen: markup", l.Slug)
		}
	}
}
