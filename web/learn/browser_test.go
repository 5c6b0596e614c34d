package learn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// browser is the one Chromium this package's browser tests share, started
// by the first of them.
var browser = &browsertest.Browser{}

func TestMain(m *testing.M) { os.Exit(browser.Run(m)) }

func newTab(t *testing.T) context.Context { return browser.Tab(t) }

var (
	do         = browsertest.Do
	eventually = browsertest.Eventually
	text       = browsertest.Text
)

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	return browsertest.Eval[T](t, ctx, js)
}

// ratingsReady waits for the rating buttons to show their intervals. A
// whole-suite run once found them not ready two minutes after a click on
// the card, and a run alone never has; on failure it says what the page
// showed: whether the card turned, and the deck's error.
func ratingsReady(t *testing.T, ctx context.Context) {
	t.Helper()
	const js = `JSON.stringify({ready: [...document.querySelectorAll("#ratings button[data-rating] .interval")].every((i) => i.textContent !== ""),
		turned: document.getElementById("card").getAttribute("aria-expanded"),
		error: document.getElementById("deck-error").hidden ? "" : document.getElementById("deck-error").textContent.trim(),
		front: document.getElementById("card-front").textContent})`
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		last = eval[string](t, ctx, js)
		if strings.Contains(last, `"ready":true`) {
			return
		}
	}
	t.Fatalf("the rating buttons show no intervals after a minute; the page: %s", last)
}

func isHidden(sel string) string {
	return fmt.Sprintf(`String(document.querySelector(%q).closest("[hidden]") !== null)`, sel)
}

func TestBrowserQuizGivesImmediateFeedback(t *testing.T) {
	srv := newTestServer(t)
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(srv.URL+"/quiz"), chromedp.WaitVisible(chromedp.CSS("#quiz-live")))

	// Before answering, the page knows neither the answer nor its
	// explanation: both come from the server with the verdict.
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	lt, _ := quiz.Find(bank.Questions, "level-triggered")
	eventually(t, ctx, text("#q-level-triggered .explanation"), "")
	eventually(t, ctx, `String(document.querySelectorAll("[data-correct], .is-correct").length)`, "0")

	// A right answer: feedback and score appear at once.
	do(t, ctx, chromedp.Click(chromedp.CSS(`label[for="q-level-triggered-1"]`)))
	eventually(t, ctx, isHidden("#q-level-triggered .feedback"), "false")
	eventually(t, ctx, text("#q-level-triggered .verdict"), "Right.")
	eventually(t, ctx, text("#q-level-triggered .explanation"), lt.Explanation)
	eventually(t, ctx, text(`[data-live="score"]`)+"+'/'+"+text(`[data-live="answered"]`), "1/1")

	// A wrong one: marked, explained, and offered for retry.
	do(t, ctx, chromedp.Click(chromedp.CSS(`label[for="q-already-exists-0"]`)))
	eventually(t, ctx, text("#q-already-exists .verdict"), "Not quite.")
	eventually(t, ctx, text(`[data-live="score"]`)+"+'/'+"+text(`[data-live="answered"]`), "1/2")
	eventually(t, ctx, `document.querySelector('[data-live="retry"]').getAttribute("href")`, "/quiz?only=already-exists")
	if got := eval[string](t, ctx, text(`#q-already-exists li.is-correct label`)); !strings.HasPrefix(got, "Treat it as success") {
		t.Errorf("correct choice marked is %q", got)
	}

	// A pick-all question is checked with its button, by keyboard.
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`label[for="q-status-subresource-0"]`)),
		chromedp.Click(chromedp.CSS(`label[for="q-status-subresource-2"]`)),
		chromedp.Focus(chromedp.CSS(`#q-status-subresource button.check`)),
		chromedp.KeyEvent(kb.Enter),
	)
	eventually(t, ctx, text("#q-status-subresource .verdict"), "Right.")
	eventually(t, ctx, text(`[data-live="score"]`)+"+'/'+"+text(`[data-live="answered"]`), "2/3")

	// By keyboard, arrows browse a single-answer question without
	// committing; Enter checks the pick. The arrows go in the order shown
	// (the choices are shuffled): from the right one, down to the next
	// (round to the first from the last) and back up.
	next := eval[string](t, ctx, `(() => { const ids = [...document.querySelectorAll("#q-request-contents input")].map((i) => i.id);
		return ids[(ids.indexOf("q-request-contents-0") + 1) % ids.length]; })()`)
	do(t, ctx, chromedp.Focus(chromedp.CSS("#q-request-contents-0")), chromedp.KeyEvent(kb.ArrowDown))
	eventually(t, ctx, fmt.Sprintf(`String(document.getElementById(%q).checked)`, next), "true")
	eventually(t, ctx, isHidden("#q-request-contents .feedback"), "true")
	eventually(t, ctx, isHidden("#q-request-contents button.check"), "false")
	do(t, ctx, chromedp.KeyEvent(kb.ArrowUp), chromedp.KeyEvent(kb.Enter))
	eventually(t, ctx, text("#q-request-contents .verdict"), "Right.")
	eventually(t, ctx, text(`[data-live="score"]`)+"+'/'+"+text(`[data-live="answered"]`), "3/4")
	eventually(t, ctx, `String(JSON.parse(localStorage.getItem("oplab.quiz")).best)`, "3")

	// A reload shows the answers again, graded again by the server.
	score := text(`[data-live="score"]`) + "+'/'+" + text(`[data-live="answered"]`)
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#quiz-live")))
	eventually(t, ctx, score, "3/4")
	eventually(t, ctx, text("#q-already-exists .verdict"), "Not quite.")
	eventually(t, ctx, `String(document.getElementById("q-already-exists-0").checked && document.getElementById("q-already-exists-0").disabled)`, "true")
	eventually(t, ctx, text("#q-status-subresource .verdict"), "Right.")

	// Retry the missed one: only it is shown, unanswered.
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-live="retry"]`)))
	eventually(t, ctx, `String(document.querySelectorAll("fieldset.question").length)`, "1")
	eventually(t, ctx, `document.querySelector("fieldset.question").dataset.question`, "already-exists")
	eventually(t, ctx, `String(document.querySelector(".lead").textContent.trim().startsWith("1 question on"))`, "true")
	eventually(t, ctx, isHidden("#q-already-exists .feedback"), "true")
	eventually(t, ctx, `String(document.querySelectorAll("fieldset.question input:checked").length)`, "0")
	right := eval[string](t, ctx, `(() => { for (const l of document.querySelectorAll("#q-already-exists label")) if (l.textContent.startsWith("Treat it as success")) return l.htmlFor; return ""; })()`)
	if right == "" {
		t.Fatal(`no choice reads "Treat it as success"`)
	}
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#quiz-live")), chromedp.Click(chromedp.CSS(`label[for="`+right+`"]`)))
	eventually(t, ctx, text("#q-already-exists .verdict"), "Right.")

	// Back on the whole quiz (the nav's link keeps the answers), the
	// retried answer is the one shown; "Start again" clears the page but
	// not the best score.
	do(t, ctx, chromedp.Navigate(srv.URL+"/quiz"), chromedp.WaitVisible(chromedp.CSS("#quiz-live")))
	eventually(t, ctx, score, "4/4")
	eventually(t, ctx, text("#q-already-exists .verdict"), "Right.")
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-live="restart"]`)))
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS("#quiz-live")))
	eventually(t, ctx, `String(document.querySelectorAll("fieldset.question input:checked").length)`, "0")
	eventually(t, ctx, isHidden("#q-already-exists .feedback"), "true")
	eventually(t, ctx, isHidden(`[data-live="restart"]`), "true")

	// The home page shows the best score.
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#progress")))
	eventually(t, ctx, text(`[data-stat="quiz"]`), "4")
}

func TestBrowserFlashcardsFlipRateAndRemember(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprint(len(bank.Cards))
	first := bank.Cards[0]
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(srv.URL+"/flashcards"), chromedp.WaitVisible(chromedp.CSS("#card")))
	eventually(t, ctx, text("#due-count"), all)
	eventually(t, ctx, text("#card-front"), first.Front)
	eventually(t, ctx, isHidden("#card .face.back"), "true")

	// Click flips the card and back again.
	do(t, ctx, chromedp.Click(chromedp.CSS("#card")))
	eventually(t, ctx, isHidden("#card .face.back"), "false")
	eventually(t, ctx, isHidden("#ratings"), "false")
	eventually(t, ctx, text("#card-back"), first.Back)
	do(t, ctx, chromedp.Click(chromedp.CSS("#card")))
	eventually(t, ctx, isHidden("#card .face.back"), "true")

	// Space flips it, both with the card focused and with nothing focused.
	do(t, ctx, chromedp.Focus(chromedp.CSS("#card")), chromedp.KeyEvent(" "))
	eventually(t, ctx, isHidden("#card .face.back"), "false")
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent(" "))
	eventually(t, ctx, isHidden("#card .face.back"), "true")
	// A Space that flips the card does not also scroll the page a screen
	// down: a scroll starts within a frame, and three frames later the page
	// is where it was.
	before := eval[float64](t, ctx, `scrollY`)
	do(t, ctx, chromedp.KeyEvent(" "))
	eventually(t, ctx, isHidden("#card .face.back"), "false")
	if y, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`new Promise((done) => { const f = (n) => n ? requestAnimationFrame(() => f(n - 1)) : done(scrollY); f(3); })`, chromedp.EvalAwaitPromise)); err != nil || y != before {
		t.Errorf("after Space flipped the card the page is scrolled to %v (%v), want %v as before", y, err, before)
	}

	// A new card has no predicted recall yet.
	eventually(t, ctx, text("#card-recall"), "New card: not reviewed yet.")

	// Before any click, each rating button says when it brings the card
	// back, as the Go scheduler has it for a new card: Again in a minute,
	// Hard, Good and Easy after round(w1), round(w2), round(w3) days.
	ratingsReady(t, ctx)
	eventually(t, ctx, `[...document.querySelectorAll("#ratings button")].map((b) => b.textContent.trim()).join(" | ")`,
		"1 Again · 1 min | 2 Hard · 1 day | 3 Good · 2 days | 4 Easy · 8 days")

	// Key 3 rates it Good: the Go FSRS scheduler gives a new card round(w2)
	// = 2 days, and it leaves the due pile. The page says when it is due
	// next and what its recall is predicted to be then; the card list shows
	// its recall now.
	do(t, ctx, chromedp.KeyEvent("3"))
	eventually(t, ctx, text("#due-count"), fmt.Sprint(len(bank.Cards)-1))
	eventually(t, ctx, fmt.Sprintf(`String(JSON.parse(localStorage.getItem("oplab.cards"))[%q].interval)`, first.ID), "2")
	eventually(t, ctx, text("#card-front"), bank.Cards[1].Front)
	eventually(t, ctx, isHidden("#card .face.back"), "true")
	eventually(t, ctx, isHidden("#last-review"), "false")
	eventually(t, ctx, `String(/^“.+”: Good\. Next review in 2 days \(.+\), when its predicted recall will have fallen to 91%, about the 90% the scheduler aims at \(intervals are whole days\)\.$/.test(`+text("#last-review")+`))`, "true")
	eventually(t, ctx, text(fmt.Sprintf(`[data-recall-for=%q]`, first.ID)), "Recall now 100% · due in 2 days")
	eventually(t, ctx, isHidden(fmt.Sprintf(`[data-recall-for=%q]`, bank.Cards[1].ID)), "true")
	eventually(t, ctx, text("#card-recall"), "New card: not reviewed yet.")

	// The next card rated Again comes back within the sitting; the page
	// says so, and predicts no recall for it.
	do(t, ctx, chromedp.Click(chromedp.CSS("#card")))
	ratingsReady(t, ctx)
	do(t, ctx, chromedp.KeyEvent("1"))
	eventually(t, ctx, text("#last-review"), fmt.Sprintf("“%s”: Again. It comes back in 1 minute, in this sitting, to be relearned.", bank.Cards[1].Front))
	eventually(t, ctx, fmt.Sprintf(`String(JSON.parse(localStorage.getItem("oplab.cards"))[%q].interval)`, bank.Cards[1].ID), "0")
	eventually(t, ctx, text("#due-count"), fmt.Sprint(len(bank.Cards)-2))
	eventually(t, ctx, text(fmt.Sprintf(`[data-recall-for=%q]`, bank.Cards[1].ID)), "Being relearned · due in 1 minute")

	// A reviewed card's buttons come from its own state: the card rated
	// Good two days ago, seen again now, is offered longer intervals, and
	// Good gives exactly the interval its button showed.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const cards = JSON.parse(localStorage.getItem("oplab.cards"));
		const s = cards[%q], day = 86400000;
		s.last = new Date(Date.parse(s.last) - 2 * day).toISOString();
		s.due = new Date(Date.now() - 1000).toISOString();
		localStorage.setItem("oplab.cards", JSON.stringify(cards));
	})()`, first.ID)), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#card")))
	eventually(t, ctx, text("#card-front"), first.Front)
	do(t, ctx, chromedp.Click(chromedp.CSS("#card")))
	ratingsReady(t, ctx)
	good := eval[string](t, ctx, text(`#ratings button[data-rating="3"] .interval`))
	days := strings.TrimSuffix(strings.TrimPrefix(good, "· "), " days")
	if days == good || days == "2" {
		t.Fatalf("Good on a card due after 2 days shows %q, want a longer interval in days", good)
	}
	do(t, ctx, chromedp.KeyEvent("3"))
	eventually(t, ctx, fmt.Sprintf(`String(JSON.parse(localStorage.getItem("oplab.cards"))[%q].interval)`, first.ID), days)
	eventually(t, ctx, text("#due-count"), fmt.Sprint(len(bank.Cards)-2))

	// The reviews are in the log kept in this browser.
	eventually(t, ctx, `(() => { const l = JSON.parse(localStorage.getItem("oplab.reviews")); return l.length + " " + l[0].card + " " + l[0].rating + " " + l[0].interval; })()`,
		"3 "+first.ID+" 3 2")
	eventually(t, ctx, isHidden("#review-log"), "false")
	eventually(t, ctx, text("#review-count"), "3")

	// Progress survives a reload, on this page and on the home page.
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#card")))
	eventually(t, ctx, text("#due-count"), fmt.Sprint(len(bank.Cards)-2))
	eventually(t, ctx, text("#card-front"), bank.Cards[2].Front)
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#progress")))
	eventually(t, ctx, text(`[data-stat="due"]`), fmt.Sprint(len(bank.Cards)-2))
	// Of the cards due, those never reviewed are named as new.
	eventually(t, ctx, text(`[data-stat="new"]`), fmt.Sprintf("(%d new)", len(bank.Cards)-2))
}

// A browser's stored progress is read back: the due count, the overdue
// card first with its recall predicted now from its stored state, and a
// review going on from that state.
func TestBrowserStoredProgressIsReadBack(t *testing.T) {
	srv := newTestServer(t)
	bank, err := quiz.Load()
	if err != nil {
		t.Fatal(err)
	}
	known, due := bank.Cards[0], bank.Cards[1]
	ctx := newTab(t)
	do(t, ctx, chromedp.Navigate(srv.URL+"/flashcards"), chromedp.WaitVisible(chromedp.CSS("#card")))
	// The first card was last reviewed 3 days ago with a stability of 6
	// days; the second, S 1 day, 2 days ago, was due yesterday.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const day = 86400000, now = Date.now(), at = (d) => new Date(now + d * day).toISOString();
		localStorage.setItem("oplab.cards", JSON.stringify({
			%q: {stability: 6, difficulty: 5, reps: 2, lapses: 0, interval: 6, last: at(-3), due: at(3)},
			%q: {stability: 1, difficulty: 6, reps: 1, lapses: 1, interval: 1, last: at(-2), due: at(-1)},
		}));
	})()`, known.ID, due.ID)), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#card")))

	eventually(t, ctx, `String(!document.getElementById("deck").hidden)`, "true")
	eventually(t, ctx, text("#due-count"), fmt.Sprint(len(bank.Cards)-1))
	// The overdue card comes first: S = 1 day, last review 2 days ago.
	eventually(t, ctx, text("#card-front"), due.Front)
	eventually(t, ctx, text("#card-recall"), "Predicted recall now: 85% (due now).")
	// S = 6 days, last review 3 days ago: R(3, 6) ≈ 94%.
	eventually(t, ctx, text(fmt.Sprintf(`[data-recall-for=%q]`, known.ID)), "Recall now 94% · due in 3 days")
	eventually(t, ctx, text(fmt.Sprintf(`[data-recall-for=%q]`, due.ID)), "Recall now 85% · due now")

	// Reviewing the overdue card goes on from its stored state.
	do(t, ctx, chromedp.Click(chromedp.CSS("#card")), chromedp.KeyEvent("3"))
	eventually(t, ctx, fmt.Sprintf(`String(JSON.parse(localStorage.getItem("oplab.cards"))[%q].reps)`, due.ID), "2")
	eventually(t, ctx, text("#due-count"), fmt.Sprint(len(bank.Cards)-2))
}

func TestBrowserLessonCountsAsReadAtItsEnd(t *testing.T) {
	srv := newTestServer(t)
	ctx := newTab(t)
	do(t, ctx, chromedp.EmulateViewport(1280, 700))
	do(t, ctx, chromedp.Navigate(srv.URL+"/lessons/reconciliation-loop"), chromedp.WaitVisible(chromedp.CSS("article.prose")))
	eventually(t, ctx, `localStorage.getItem("oplab.read") || "none"`, "none")
	do(t, ctx, chromedp.ScrollIntoView(chromedp.CSS("#lesson-end")))
	eventually(t, ctx, `localStorage.getItem("oplab.read") || "none"`, `["reconciliation-loop"]`)
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#progress")))
	eventually(t, ctx, text(`[data-stat="read"]`), "1")
	eventually(t, ctx, isHidden(`li[data-slug="reconciliation-loop"] .read-mark`), "false")
	eventually(t, ctx, isHidden(`li[data-slug="status-owners-finalizers"] .read-mark`), "true")
}

// Issue 22 saw "Pages read 2 of 6" after all six pages had been opened: at
// 1280×800 only the two shortest pages (revision notes, interview tips)
// show their end without scrolling, so only they counted. Opening is not
// reading; the footer now says when a page has counted, and a learner who
// reads every page to its end gets 6 of 6.
func TestBrowserEveryPageCountsOnceReadToTheEnd(t *testing.T) {
	srv := newTestServer(t)
	course, err := lessons.Load(lessons.Content, controller.Source)
	if err != nil {
		t.Fatal(err)
	}
	pages := append(course.Kind(lessons.KindLesson), course.Kind(lessons.KindReference)...)
	ctx := newTab(t)
	do(t, ctx, chromedp.EmulateViewport(1280, 800))
	long := 0
	for _, l := range pages {
		do(t, ctx, chromedp.Navigate(srv.URL+l.URL()), chromedp.WaitVisible(chromedp.CSS("article.prose")))
		// A page whose end is below the fold has not counted on opening,
		// and its footer does not claim it has.
		if eval[bool](t, ctx, `document.getElementById("lesson-end").getBoundingClientRect().top > window.innerHeight`) {
			long++
			eventually(t, ctx, fmt.Sprintf(`String((JSON.parse(localStorage.getItem("oplab.read")) || []).includes(%q))`, l.Slug), "false")
			eventually(t, ctx, isHidden("#lesson-end .read-note"), "true")
		}
		do(t, ctx, chromedp.KeyEvent(kb.End))
		eventually(t, ctx, isHidden("#lesson-end .read-note"), "false")
	}
	if long == 0 {
		t.Errorf("no page is longer than the window: the test no longer shows that opening a page does not count")
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#progress")))
	eventually(t, ctx, text(`[data-stat="read"]`), fmt.Sprint(len(pages)))
	eventually(t, ctx, `document.querySelector('[data-stat="read"]').parentElement.textContent.trim()`, fmt.Sprintf("%d of %d", len(pages), len(pages)))
	// A page read before shows that it counted at once.
	do(t, ctx, chromedp.Navigate(srv.URL+pages[0].URL()), chromedp.WaitVisible(chromedp.CSS("article.prose")))
	eventually(t, ctx, isHidden("#lesson-end .read-note"), "false")
}

// Without JavaScript the quiz still grades (on the server) and the cards
// still read as a list.
func TestBrowserWorksWithoutJavaScript(t *testing.T) {
	srv := newTestServer(t)
	ctx := newTab(t)
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	do(t, ctx,
		chromedp.Navigate(srv.URL+"/quiz"),
		chromedp.WaitVisible(chromedp.CSS("#quiz-form")),
		chromedp.Click(chromedp.CSS(`label[for="q-level-triggered-1"]`)),
		chromedp.Click(chromedp.CSS(`#quiz-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#quiz-result")),
	)
	bank, _ := quiz.Load()
	got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#quiz-result h2")))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("You scored 1 of %d", len(bank.Questions)); got != want {
		t.Errorf("result heading %q, want %q", got, want)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/flashcards"), chromedp.WaitVisible(chromedp.CSS(".card-list details")))
	deck, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("deck")).display === "none"`))
	if err != nil {
		t.Fatal(err)
	}
	if !deck {
		t.Error("the script-only deck shows without JavaScript")
	}
}

// The screenshots are for a person to look at (light, dark, phone); the
// test checks what it can: dark mode follows the OS setting, and nothing
// overflows sideways on a phone.
func TestBrowserScreenshots(t *testing.T) {
	srv := newTestServer(t)
	dir := browsertest.ArtifactsDir(t, "learn")
	// Each page is prepared by a script, then waited on until it shows what
	// the script did (answers and reviews come back from the server).
	// focus names the part of a page also shot as the window shows it.
	pages := []struct{ name, path, prepare, ready, focus string }{
		{"home", "/", "", "", ""},
		{"lesson", "/lessons/status-owners-finalizers", "", "", ""},
		// Two questions answered, one of them a YAML to read; the
		// following question, a trace, is left open.
		{"quiz", "/quiz",
			`document.querySelector('label[for="q-level-triggered-1"]').click(); document.querySelector('label[for="q-read-yaml-deleting-0"]').click();`,
			`String(document.querySelectorAll(".question .feedback:not([hidden]) .explanation:not(:empty)").length)`,
			"#q-read-yaml-deleting"},
		// Rate the first card Good, then flip the next one.
		{"flashcards", "/flashcards",
			`(async () => {
				while (document.getElementById("deck").hidden) await new Promise((r) => setTimeout(r, 20));
				const count = () => document.getElementById("review-count").textContent;
				const before = count();
				document.getElementById("card").click();
				document.querySelector('#ratings button[data-rating="3"]').click();
				while (count() === before) await new Promise((r) => setTimeout(r, 20));
				document.getElementById("card").click();
				document.getElementById("review-log").open = true;
			})()`,
			`String(!document.getElementById("last-review").hidden && document.getElementById("card").classList.contains("flipped") && [...document.querySelectorAll("#ratings .interval")].every((i) => i.textContent !== "") ? 2 : 0)`,
			"#deck"},
	}
	modes := []struct {
		name          string
		width, height int64
		mobile, dark  bool
	}{
		{"light", 1280, 800, false, false},
		{"dark", 1280, 800, false, true},
		{"phone", 390, 844, true, false},
		{"phone-dark", 390, 844, true, true},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ctx := newTab(t)
			opts := []chromedp.EmulateViewportOption{}
			if m.mobile {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
			}
			scheme := "light"
			if m.dark {
				scheme = "dark"
			}
			do(t, ctx, chromedp.EmulateViewport(m.width, m.height, opts...), emulateScheme(scheme))
			for _, p := range pages {
				do(t, ctx, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS("main")))
				if p.prepare != "" {
					do(t, ctx, chromedp.Evaluate[chromedp.Void](p.prepare))
					eventually(t, ctx, p.ready, "2")
				}
				wantBG := "rgb(253, 253, 252)"
				if m.dark {
					wantBG = "rgb(20, 23, 27)"
				}
				eventually(t, ctx, `getComputedStyle(document.body).backgroundColor`, wantBG)
				if m.mobile {
					eventually(t, ctx, `String(document.documentElement.scrollWidth <= window.innerWidth)`, "true")
				}
				// Nothing is wider than the page's column (what a pre scrolls
				// inside it aside): a phone's browser would zoom out to show
				// it, and the text would shrink.
				eventually(t, ctx, `(() => { const r = document.querySelector("main").getBoundingClientRect().right;
					return [...document.querySelectorAll("main *")].filter((e) => (e.tagName === "PRE" || !e.closest("pre")) && e.getBoundingClientRect().right > r + 1)
						.map((e) => e.tagName + "." + e.className).slice(0, 3).join(" ") || "none"; })()`, "none")
				browsertest.Screenshot(t, ctx, filepath.Join(dir, p.name+"-"+m.name+".png"))
				if p.focus == "" {
					continue
				}
				// The whole quiz is too tall to judge one question by: the
				// window's view of the one in focus, as a learner sees it.
				do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).scrollIntoView()`, p.focus)))
				browsertest.Capture(t, ctx, filepath.Join(dir, p.name+"-focus-"+m.name+".png"), chromedp.CaptureScreenshot())
			}
		})
	}
	t.Logf("Screenshots in %s", dir)
}

func emulateScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}
