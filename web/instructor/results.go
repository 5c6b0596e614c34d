package instructor

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/web/httpx"
)

// Result is one learner's results, as the class export gives them: one
// per learner, whether their session is live or ended and kept.
type Result struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// State is "live", or why the session ended: "expired", "ended" (the
	// instructor ended the class), "evicted".
	State string `json:"state"`
	// EndedAt is when an ended session ended.
	EndedAt time.Time `json:"endedAt,omitzero"`
	// Attendance: when they joined, were last seen, whether a page of
	// theirs is open now, and the minutes they had a page open or made a
	// request (time on task).
	Joined     time.Time `json:"joined"`
	LastSeen   time.Time `json:"lastSeen"`
	PresentNow bool      `json:"presentNow"`
	TimeOnTask int       `json:"timeOnTaskMinutes"`
	// Percent is the share of the course the server saw done.
	Percent int `json:"percentComplete"`
	// Stuck lists why the learner is stuck now; empty: not stuck.
	Stuck []string `json:"stuck"`
	// Help is "raised" or "answered" while the learner's hand is up.
	Help     string       `json:"help,omitempty"`
	Verified Verified     `json:"verified"`
	Self     SelfReported `json:"selfReported"`
	// The course's totals, the "of" of each count.
	ScenarioCount  int `json:"scenariosInCourse"`
	ChallengeCount int `json:"challengesInCourse"`
	QuizQuestions  int `json:"quizQuestions"`
}

// Columns are the CSV's columns, in order. They are a contract with the
// instructors' spreadsheets (docs/CLASSROOM.md lists them): add at the end,
// never rename or reorder.
var Columns = []string{
	"name", "namespace", "state", "ended at", "joined", "last seen", "present now", "time on task (min)",
	"percent complete (verified)", "scenarios done (verified)", "scenarios in course",
	"challenges complete (verified)", "challenges in course", "challenge tasks (verified)",
	"quiz first try (verified)", "quiz best attempt (verified)", "quiz questions",
	"cards reviewed (server-counted)", "code test", "code test patterns", "code test schedules", "code test at",
	"stuck", "help",
	"self-reported", "scenarios done (self-reported)", "challenges complete (self-reported)", "challenge tasks (self-reported)",
	"quiz best (self-reported)", "cards reviewed (self-reported)",
}

// results lists every learner's results, live and ended, sorted by
// namespace so that two exports of one class line up. The sessions the
// roster lists apart (the instructor's own lab, the presenter's) are not
// learners'. It is built from the roster's own rows, so the two agree.
func (h *Handler) results(r *http.Request) ([]Result, error) {
	ro := h.opts.Roster
	v := h.rosterView(r)
	if v == nil || v.Error != "" {
		msg := "no roster"
		if v != nil {
			msg = v.Error
		}
		return nil, fmt.Errorf("could not read the sessions: %s", msg)
	}
	t := ro.totals()
	out := make([]Result, 0, len(v.Learners)+len(v.Ended))
	for _, l := range v.Learners {
		res := Result{Name: l.Name, Namespace: l.Namespace, State: "live", Joined: l.Joined.UTC(), LastSeen: l.Seen.UTC(),
			PresentNow: l.Pages > 0 || !l.Away, TimeOnTask: l.TimeOnTask, Percent: l.Progress, Stuck: l.Blocked,
			Verified: l.Verified, Self: l.Self}
		if l.Help != nil {
			res.Help = "raised"
			if !l.Help.Answered.IsZero() {
				res.Help = "answered"
			}
		}
		out = append(out, res)
	}
	if ro.Ended != nil {
		ended, err := ro.Ended.ListEnded(r.Context())
		if err != nil {
			return nil, fmt.Errorf("could not read the ended sessions: %w", err)
		}
		for _, e := range ended {
			vf := verifiedOf(e.Record, t)
			self := selfReportedOf(e.Progress)
			if !e.Reported.IsZero() {
				self.Reported, self.At = true, e.Reported.UTC()
			}
			out = append(out, Result{Name: e.Name, Namespace: e.Namespace, State: e.Reason, EndedAt: e.At.UTC(), Joined: e.Started.UTC(),
				LastSeen: e.LastSeen.UTC(), TimeOnTask: e.Record.ActiveMinutes, Percent: percent(vf, t), Verified: vf, Self: self})
		}
	}
	for i := range out {
		out[i].ScenarioCount, out[i].ChallengeCount, out[i].QuizQuestions = t.Scenarios, t.Challenges, t.QuizQuestions
		if out[i].Stuck == nil {
			out[i].Stuck = []string{}
		}
	}
	slices.SortFunc(out, func(a, b Result) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out, nil
}

// resultsJSON is the class's results as JSON, for a script or a grade book.
func (h *Handler) resultsJSON(w http.ResponseWriter, r *http.Request) {
	res, err := h.results(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	httpx.Download(w, resultsFile("json"), struct {
		Exported time.Time `json:"exported"`
		Columns  []string  `json:"csvColumns"`
		Learners []Result  `json:"learners"`
	}{time.Now().UTC(), Columns, res})
}

// bom is the UTF-8 byte order mark: Excel reads a CSV as UTF-8 only when
// the file starts with it (without, "Zoë" arrives as "ZoÃ«"); other
// spreadsheets and scripts would take it for part of the first header.
const bom = "\ufeff"

// resultsCSV is the class's results as CSV, one row per learner, for a
// spreadsheet; ?bom=1 starts it with a byte order mark for Excel.
func (h *Handler) resultsCSV(w http.ResponseWriter, r *http.Request) {
	withBOM := false
	switch v := r.URL.Query().Get("bom"); v {
	case "", "0":
	case "1":
		withBOM = true
	default:
		http.Error(w, fmt.Sprintf("bom: %q is not 1 (start the file with a byte order mark, for Excel) or 0", httpx.Excerpt(v, 20)), http.StatusBadRequest)
		return
	}
	res, err := h.results(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var b bytes.Buffer
	if withBOM {
		b.WriteString(bom)
	}
	cw := csv.NewWriter(&b)
	_ = cw.Write(Columns)
	for _, x := range res {
		_ = cw.Write(x.row())
	}
	cw.Flush()
	httpx.Attachment(w, resultsFile("csv"), "text/csv; charset=utf-8", b.Bytes())
}

// row is x's CSV row, in Columns' order.
func (x Result) row() []string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(time.RFC3339)
	}
	tasks := func(cs []Challenge) string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = fmt.Sprintf("%s %d/%d", c.ID, c.Done, c.Of)
		}
		return strings.Join(out, "; ")
	}
	code, patterns, schedules, codeAt := "none", "", "", ""
	if c := x.Verified.Code; c != nil {
		code = "failed"
		if c.Passed {
			code = "passed"
		}
		patterns, schedules, codeAt = strings.Join(c.Patterns, " "), strconv.Itoa(c.Schedules), at(c.At.UTC())
	}
	v, s := x.Verified, x.Self
	return []string{
		cell(x.Name), x.Namespace, x.State, at(x.EndedAt), at(x.Joined), at(x.LastSeen), yes(x.PresentNow), strconv.Itoa(x.TimeOnTask),
		strconv.Itoa(x.Percent), strconv.Itoa(len(v.Scenarios)), strconv.Itoa(x.ScenarioCount),
		strconv.Itoa(v.ChallengesComplete), strconv.Itoa(x.ChallengeCount), tasks(v.Challenges),
		strconv.Itoa(v.QuizFirstTry), strconv.Itoa(v.QuizBest), strconv.Itoa(x.QuizQuestions),
		strconv.Itoa(v.CardsReviewed), code, patterns, schedules, codeAt,
		cell(strings.Join(x.Stuck, "; ")), x.Help,
		yes(s.Reported), cell(strings.Join(s.Scenarios, " ")), strconv.Itoa(s.ChallengesComplete), tasks(s.Challenges),
		strconv.Itoa(s.QuizBest), strconv.Itoa(s.CardsReviewed),
	}
}

// cell keeps a learner's own words from being read as a formula by the
// spreadsheet the instructor opens the file in: a name such as
// =HYPERLINK(…) would otherwise run there. A leading quote makes it text.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func resultsFile(ext string) string {
	return "oplab-class-results-" + time.Now().UTC().Format("2006-01-02T1504Z") + "." + ext
}
