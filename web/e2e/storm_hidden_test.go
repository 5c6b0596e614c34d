package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/challenges"
)

// The status-storm challenge asks which Database thrashes, to be told from
// the trace: nothing the learner's browser receives may name the pitfalls
// its start switched on, while the pitfall of a Database nobody hid still
// shows by name.

// stormPitfalls are the pitfalls the status-storm start hides.
var stormPitfalls = []string{controller.PitfallStatusThrash, controller.PitfallNonIdempotentCreate}

var pitfallMenu = regexp.MustCompile(`(?s)<select name="pitfall">.*?</select>`)

// cardReveals says what in a Database card's HTML names a hidden pitfall,
// "" when nothing does. The card's menu offers every pitfall by name: there
// only "keep as it is" may be selected.
func cardReveals(html string) string {
	menus := pitfallMenu.FindAllString(html, -1)
	if len(menus) == 0 {
		return "no pitfall menu in the card"
	}
	for _, m := range menus {
		selected := regexp.MustCompile(`<option[^>]*\bselected\b[^>]*>[^<]*`).FindAllString(m, -1)
		if len(selected) != 1 || !strings.Contains(selected[0], `value="`+controller.PitfallHidden+`"`) {
			return fmt.Sprintf("the menu selects %q, want only the keep-it-hidden option", selected)
		}
	}
	rest := pitfallMenu.ReplaceAllString(html, "")
	for _, p := range stormPitfalls {
		if strings.Contains(rest, p) {
			return "the card names " + p
		}
	}
	if !strings.Contains(rest, "pitfall: hidden") {
		return `no "pitfall: hidden" on the card`
	}
	return ""
}

// messageReveals says what in one stream message names a hidden pitfall.
func messageReveals(raw []byte) string {
	var m trace.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return "not a message: " + err.Error()
	}
	if m.Type != "state" || m.State == nil {
		for _, p := range stormPitfalls {
			if strings.Contains(string(raw), p) {
				return fmt.Sprintf("a %s message names %s: %s", m.Type, p, raw)
			}
		}
		return ""
	}
	var st struct {
		Pitfall string `json:"pitfall"`
		HTML    string `json:"html"`
	}
	if err := json.Unmarshal(m.State, &st); err != nil {
		return "a state that is no Database: " + err.Error()
	}
	if m.Object.Kind != "Database" {
		return ""
	}
	if st.Pitfall != controller.PitfallHidden {
		return fmt.Sprintf("the state of %s says pitfall %q", m.Object.Name, st.Pitfall)
	}
	// An older state in an export is its view model alone: no card.
	if st.HTML == "" && !strings.Contains(string(m.State), `"html"`) {
		return ""
	}
	if why := cardReveals(st.HTML); why != "" {
		return "the state of " + m.Object.Name + ": " + why
	}
	return ""
}

// cardHTML cuts Database name's card out of the lab page.
func cardHTML(t *testing.T, page, name string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, `<article class="db" id="db-`+name+`"`)
	if !ok {
		t.Fatalf("no card of %s on the lab page", name)
	}
	card, _, _ := strings.Cut(after, "</article>")
	return card
}

func getBody(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, b := get(t, c, u)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s", u, resp.StatusCode, b)
	}
	return b
}

// streamFrames reads what a fresh viewer of c's namespace gets in a second
// of quiet, message by message.
func streamFrames(t *testing.T, c *http.Client) [][]byte {
	t.Helper()
	u, _ := url.Parse(shared.http.URL)
	hdr := http.Header{"Origin": {shared.http.URL}}
	for _, ck := range c.Jar.Cookies(u) {
		hdr.Add("Cookie", ck.String())
	}
	conn, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws://"+u.Host+"/ws", hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out [][]byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		var frame []json.RawMessage
		if err := json.Unmarshal(data, &frame); err != nil {
			t.Fatalf("a frame that is no array of messages: %v", err)
		}
		for _, m := range frame {
			out = append(out, m)
		}
	}
	return out
}

func startChallenge(t *testing.T, c *http.Client, id string) {
	t.Helper()
	if resp, b := postAccept(t, c, shared.http.URL+"/challenges/"+id+"/start", url.Values{"confirm": {"wipe"}}, "application/json"); resp.StatusCode != http.StatusOK {
		t.Fatalf("start %s = %d %s", id, resp.StatusCode, b)
	}
}

func TestStatusStormStartNamesNoPitfall(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	startChallenge(t, c, "status-storm")

	// The pitfalls are on, and the storm is on the trace: the thrasher's
	// status writes reach the stream, unnamed.
	pitfalls := map[string]string{}
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		var db v1alpha1.Database
		if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &db); err != nil {
			t.Fatal(err)
		}
		pitfalls[name] = controller.PitfallOf(&db)
	}
	var thrasher string
	for name, p := range pitfalls {
		if p == controller.PitfallStatusThrash {
			thrasher = name
		}
	}
	polltest.Until(t, deadline, "three status writes of the thrasher "+thrasher, func() (bool, error) {
		n := 0
		for _, raw := range e.recorder.Export(ns).Messages {
			var m trace.Message
			if json.Unmarshal(raw, &m) == nil && m.Type == controller.StepStatus && m.Database == thrasher && !m.Skipped {
				n++
			}
		}
		return n >= 3, nil
	})

	page := getBody(t, c, e.http.URL+"/lab")
	for name := range pitfalls {
		if why := cardReveals(cardHTML(t, page, name)); why != "" {
			t.Errorf("the lab page, card %s (pitfall %q): %s", name, pitfalls[name], why)
		}
	}
	frames := streamFrames(t, c)
	if len(frames) == 0 {
		t.Fatal("the stream sent nothing")
	}
	cards := 0
	for _, raw := range frames {
		if why := messageReveals(raw); why != "" {
			t.Errorf("the stream: %s", why)
		}
		cards += strings.Count(string(raw), `"html":`)
	}
	// A catch-up draws each Database's latest card again (the ring keeps
	// none): those were read.
	if cards < len(pitfalls) {
		t.Errorf("the stream's catch-up has %d states with a card, want one at least per Database (%d)", cards, len(pitfalls))
	}
	var export trace.Export
	if err := json.Unmarshal([]byte(getBody(t, c, e.http.URL+"/lab/export")), &export); err != nil || len(export.Messages) == 0 {
		t.Fatalf("the export: %v, %d messages", err, len(export.Messages))
	}
	states := 0
	for _, raw := range export.Messages {
		if why := messageReveals(raw); why != "" {
			t.Errorf("the export: %s", why)
		}
		var m trace.Message
		if json.Unmarshal(raw, &m) == nil && m.Type == trace.TypeState && m.Object.Kind == "Database" && len(m.State) > 0 && string(m.State) != "null" {
			states++
		}
	}
	// Each Database's states are there, as view models: those were read.
	if states < len(pitfalls) {
		t.Errorf("the export has %d Database states, want one at least per Database (%d)", states, len(pitfalls))
	}

	// The menu's "keep as it is" keeps it; "none" switches the pitfall off
	// and the hiding with it.
	form := url.Values{"pitfall": {controller.PitfallHidden}}
	if code, res := postForm(t, c, e.http.URL, "/lab/databases/"+thrasher+"/pitfall", form); code != http.StatusOK || strings.Contains(res.Message, controller.PitfallStatusThrash) {
		t.Errorf("keep: %d %+v", code, res)
	}
	var db v1alpha1.Database
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: thrasher}, &db); err != nil || controller.PitfallOf(&db) != controller.PitfallStatusThrash || !controller.PitfallHiddenOf(&db) {
		t.Errorf("after keep: %v %v, want the pitfall on and hidden", err, db.Annotations)
	}
	if code, res := postForm(t, c, e.http.URL, "/lab/databases/"+thrasher+"/pitfall", url.Values{"pitfall": {""}}); code != http.StatusOK {
		t.Errorf("none: %d %+v", code, res)
	}
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: thrasher}, &db); err != nil || len(db.Annotations) != 0 {
		t.Errorf("after none: %v %v, want no pitfall annotation left", err, db.Annotations)
	}
	polltest.Until(t, deadline, thrasher+"'s card without a pitfall", func() (bool, error) {
		d, ok := e.latestState(ns, thrasher)
		return ok && d.Pitfall == "", nil
	})
}

// A pitfall nobody hid is named, on the card and on the trace.
func TestVisiblePitfallIsNamed(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	form := url.Values{"name": {"loud"}, "replicas": {"1"}, "pitfall": {controller.PitfallStatusThrash}}
	if code, res := postForm(t, c, e.http.URL, "/lab/databases", form); code != http.StatusOK {
		t.Fatalf("create: %d %+v", code, res)
	}
	polltest.Until(t, deadline, "a status write of loud naming its pitfall", func() (bool, error) {
		for _, raw := range e.recorder.Export(ns).Messages {
			var m trace.Message
			if json.Unmarshal(raw, &m) == nil && m.Type == controller.StepStatus && m.Database == "loud" && m.Pitfall == controller.PitfallStatusThrash {
				return true, nil
			}
		}
		return false, nil
	})
	card := cardHTML(t, getBody(t, c, e.http.URL+"/lab"), "loud")
	if !strings.Contains(card, "pitfall: "+controller.PitfallStatusThrash) {
		t.Errorf("the card of loud does not name its pitfall:\n%s", card)
	}
	if !regexp.MustCompile(`<option value="` + controller.PitfallStatusThrash + `"[^>]*\bselected\b`).MatchString(card) {
		t.Errorf("the menu of loud does not select its pitfall:\n%s", pitfallMenu.FindString(card))
	}
	if strings.Contains(card, "pitfall: hidden") {
		t.Error("the card of loud says its pitfall is hidden")
	}
}

// In the browser, after the status-storm Start: the cards and the timeline
// say "pitfall: hidden" of all three alike and name no pitfall, while the
// timeline still shows what each does. The screenshot is for a person to
// judge whether the thrasher can be told from the timeline alone.
func TestBrowserStatusStormHidesThePitfalls(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	ctx := e.tab(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/challenges/status-storm"), chromedp.WaitVisible(chromedp.CSS("#start-form"))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#start-form input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`#start-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	shows(t, ctx, "the Start message", `document.getElementById("start-message").textContent.startsWith("Started")`, "#start")
	e.openLab(t, ctx, "")
	shows(t, ctx, "three cards and the thrasher's status writes on the timeline", `["alpha", "bravo", "charlie"].every(n => document.getElementById("db-" + n)) &&
		[...document.querySelectorAll("#rows .steps li")].filter(li => li.textContent.includes("written, observedGeneration")).length >= 3`, "#rows")
	showsNow(t, ctx, `"pitfall: hidden" on every card`, `["alpha", "bravo", "charlie"].every(n =>
		document.querySelector("#db-" + n + " .db-head").textContent.includes("pitfall: hidden"))`, "#databases")
	showsNow(t, ctx, "the Start's divider on the timeline", `[...document.querySelectorAll("#rows .row.divider")].some(r => r.textContent.includes("challenge started") && r.textContent.includes("the rows below are from before"))`, "#rows")
	showsNow(t, ctx, `"pitfall: hidden" on the timeline's rows`, `[...document.querySelectorAll("#rows .row-head")].some(h => h.textContent.includes("pitfall: hidden"))`, "#rows")
	for _, p := range stormPitfalls {
		showsNow(t, ctx, "no card or row naming "+p, fmt.Sprintf(`!document.getElementById("databases").innerText.includes(%[1]q) &&
			!document.getElementById("rows").innerText.includes(%[1]q) &&
			[...document.querySelectorAll('#databases select[name="pitfall"]')].every(s => s.value === %[2]q)`, p, controller.PitfallHidden), "#databases", "#rows")
	}
	screenshot(t, ctx, "status-storm-lab")
}

// TestAFinishedChallengeLeavesNothingRetrying: the status-storm challenge
// done (the thrasher's pitfall off, a resync of quiet), its decoy's error
// loop is switched off too, as the status that finds it complete says,
// so nothing of it retries on the learner's timeline afterwards.
func TestAFinishedChallengeLeavesNothingRetrying(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	started := time.Now()
	startChallenge(t, c, "status-storm")
	pitfalls := map[string]string{}
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		var db v1alpha1.Database
		if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &db); err != nil {
			t.Fatal(err)
		}
		pitfalls[controller.PitfallOf(&db)] = name
	}
	thrasher, decoy := pitfalls[controller.PitfallStatusThrash], pitfalls[controller.PitfallNonIdempotentCreate]
	// The learner watches the storm on the timeline before they act.
	polltest.Until(t, deadline, "three status writes of the thrasher "+thrasher, func() (bool, error) {
		n := 0
		for _, raw := range e.recorder.Export(ns).Messages {
			var m trace.Message
			if json.Unmarshal(raw, &m) == nil && m.Type == controller.StepStatus && m.Database == thrasher && !m.Skipped {
				n++
			}
		}
		return n >= 3, nil
	})
	if code, res := postForm(t, c, e.http.URL, "/lab/databases/"+thrasher+"/pitfall", url.Values{"pitfall": {""}}); code != http.StatusOK {
		t.Fatalf("switch off %s: %d %+v", thrasher, code, res)
	}
	// As the page asks: the tasks it has seen done stay done.
	var st challenges.Status
	var done []string
	polltest.Until(t, deadline, "the challenge complete", func() (bool, error) {
		st = getStatus(t, c, fmt.Sprintf("/challenges/status-storm/status?since=%d&done=%s", started.UnixMilli(), strings.Join(done, ",")))
		done = done[:0]
		for _, task := range st.Tasks {
			if task.State == "done" {
				done = append(done, task.ID)
			}
		}
		return st.Of > 0 && st.Done == st.Of, fmt.Errorf("%+v", st)
	})
	if !slices.Contains(st.Quieted, decoy) {
		t.Errorf("the status that found it complete quieted %v, want the decoy %s", st.Quieted, decoy)
	}
	var db v1alpha1.Database
	if err := e.client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: decoy}, &db); err != nil || controller.PitfallOf(&db) != "" {
		t.Errorf("the decoy %s after the challenge: %v, pitfall %q", decoy, err, controller.PitfallOf(&db))
	}
}
