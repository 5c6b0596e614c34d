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
	"github.com/oplab-dev/oplab/web/session"
)

// Result is one learner session's results, as the class export gives them.
type Result struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Acted is false for a session whose browser never came back.
	Acted    bool      `json:"acted"`
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"lastSeen"`
	// Reported is false while the learner's browser has sent no progress:
	// then the zeros below mean "not known", not "none".
	Reported       bool        `json:"reported"`
	Scenarios      []string    `json:"scenarios"`
	Challenges     []Challenge `json:"challenges"`
	ChallengesDone int         `json:"challengesComplete"`
	ChallengeCount int         `json:"challengesInCourse"`
	QuizBest       int         `json:"quizBest"`
	QuizQuestions  int         `json:"quizQuestions"`
	CardsReviewed  int         `json:"cardsReviewed"`
}

// results lists every learner session's results, sorted by namespace so
// that two exports of one class line up. The sessions the roster lists
// apart (the instructor's own lab, the presenter's) are not learners'.
func (h *Handler) results(r *http.Request) ([]Result, error) {
	ro := h.opts.Roster
	list, err := ro.Learners.List(r.Context())
	if err != nil {
		return nil, fmt.Errorf("could not read the sessions: %w", err)
	}
	apart := ro.apart(r)
	out := make([]Result, 0, len(list))
	for _, s := range list {
		if apart[s.Namespace] != "" {
			continue
		}
		out = append(out, resultOf(s, ro))
	}
	slices.SortFunc(out, func(a, b Result) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out, nil
}

func resultOf(s session.SessionInfo, ro Roster) Result {
	res := Result{
		Name: s.Name, Namespace: s.Namespace, Acted: s.Acted, Started: s.Started.UTC(), LastSeen: s.LastSeen.UTC(),
		Reported: !s.Progress.Reported.IsZero(), Scenarios: slices.Sorted(slices.Values(s.Progress.Scenarios)),
		ChallengeCount: ro.ChallengeCount,
		QuizBest:       s.Progress.QuizBest, QuizQuestions: ro.QuizQuestions, CardsReviewed: s.Progress.CardsReviewed,
	}
	if res.Scenarios == nil {
		res.Scenarios = []string{}
	}
	res.Challenges, res.ChallengesDone = challengesOf(s.Progress)
	return res
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
		Learners []Result  `json:"learners"`
	}{time.Now().UTC(), res})
}

// resultsCSV is the class's results as CSV, one row per learner session,
// for a spreadsheet.
func (h *Handler) resultsCSV(w http.ResponseWriter, r *http.Request) {
	res, err := h.results(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"name", "namespace", "reported", "scenarios done", "challenges complete", "challenges in course",
		"challenge tasks", "quiz best", "quiz questions", "cards reviewed", "started", "last seen"})
	for _, x := range res {
		tasks := make([]string, len(x.Challenges))
		for i, c := range x.Challenges {
			tasks[i] = fmt.Sprintf("%s %d/%d", c.ID, c.Done, c.Of)
		}
		_ = cw.Write([]string{
			cell(x.Name), x.Namespace, strconv.FormatBool(x.Reported), cell(strings.Join(x.Scenarios, " ")),
			strconv.Itoa(x.ChallengesDone), strconv.Itoa(x.ChallengeCount), cell(strings.Join(tasks, "; ")),
			strconv.Itoa(x.QuizBest), strconv.Itoa(x.QuizQuestions), strconv.Itoa(x.CardsReviewed),
			x.Started.Format(time.RFC3339), x.LastSeen.Format(time.RFC3339),
		})
	}
	cw.Flush()
	httpx.Attachment(w, resultsFile("csv"), "text/csv; charset=utf-8", b.Bytes())
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
