package instructor

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/lessons"
	"github.com/oplab-dev/oplab/web/lab"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// Learners lists the learner sessions with what their browsers reported
// (session.Manager).
type Learners interface {
	List(ctx context.Context) ([]session.SessionInfo, error)
}

// LabStates reads a namespace's Databases as the lab shows them (the lab's
// state watcher, which follows the cluster).
type LabStates interface {
	Databases(ctx context.Context, namespace string) ([]dbview.Database, error)
}

// Pauses is the controller's pause of one namespace.
type Pauses interface {
	NamespacePaused(ns string) bool
	ResumeNamespace(ns string)
}

// Deleter deletes an object in the cluster (a controller-runtime client).
type Deleter interface {
	Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error
}

// Broadcaster sends every learner's page to href (web/classroom).
type Broadcaster interface {
	SendEveryone(href string) error
}

// Roster configures the learner roster of the instructor page. With no
// Learners the page shows no roster.
type Roster struct {
	Learners Learners
	States   LabStates
	Pauses   Pauses
	Deleter  Deleter
	// canLook is whether the rows link to the learner's lab (Options.Look
	// is set); made when the routes are mounted.
	canLook bool
	// Broadcaster, when set, lets the instructor send everyone to a
	// scenario or lesson; nil hides that control.
	Broadcaster Broadcaster
	// Destinations are what "send everyone" offers; nil means every lab
	// scenario and every page of the course.
	Destinations []Destination
	// JoinCode is shown to the instructor, to hand out; empty: none.
	JoinCode string
	// Content is the course (learn.LoadContent): what "send everyone"
	// offers and the counts below; nil: the scenarios only, counts unset.
	Content *learn.Content
	// QuizQuestions and ChallengeCount are the denominators of a
	// learner's quiz best and challenges complete; 0 means Content's.
	QuizQuestions, ChallengeCount int
	// ChallengeTasks is a challenge's number of tasks, the "of" of its
	// verified tasks; nil means Content's.
	ChallengeTasks func(id string) (int, bool)
	// Code gives each learner's latest reconciler test verdict (the code
	// tester); nil: none, and the roster and export say so.
	Code CodeVerdicts
	// Hands answers and clears a learner's raised hand (session.Manager);
	// nil: no help queue.
	Hands Hands
	// Ended lists the sessions that ended and are kept (session.Manager);
	// nil: none is listed.
	Ended EndedSessions
	// ResetWait bounds how long a reset waits for the Databases to go;
	// default 60s.
	ResetWait time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Presence tells how many live pages each learner has open and how
	// many follow the presenter (classroom.Presence); nil: nobody is
	// counted as following, and away goes by the last request alone.
	Presence Presence
	// Self is the namespace of the caller's own lab session, if any (the
	// instructor's, who presents from it): it is listed apart from the
	// learners. Nil: none is.
	Self func(*http.Request) (string, error)
	// Presenting is the presenter's namespace, also listed apart.
	Presenting func() (namespace string, ok bool)

	// resets is every namespace's latest reset, made when the routes are
	// mounted.
	resets *resets
}

// Hands is the help queue's side of the session table.
type Hands interface {
	AnswerHand(ctx context.Context, ns string) error
	ClearHand(ctx context.Context, ns string) error
}

// EndedSessions lists the ended sessions kept, and ends the class.
type EndedSessions interface {
	ListEnded(ctx context.Context) ([]session.Ended, error)
	EndClass(ctx context.Context) (int, error)
}

// totals are the course's totals the roster counts against.
func (ro *Roster) totals() Totals {
	return Totals{Scenarios: len(lab.Scenarios), Challenges: ro.ChallengeCount, QuizQuestions: ro.QuizQuestions, ChallengeTasks: ro.ChallengeTasks}
}

// verdict is ns's latest reconciler test, or nil.
func (ro *Roster) verdict(ns string) *Verdict {
	if ro.Code == nil {
		return nil
	}
	v, ok := ro.Code.VerdictOf(ns)
	if !ok {
		return nil
	}
	return &v
}

// Presence counts a learner's open pages (classroom.Presence).
type Presence interface {
	Of(namespace string) (open, following int)
}

// Destination is a page the instructor can send everyone to.
type Destination struct {
	Href, Title string
}

// rosterRefresh is how often the page's script redraws the roster.
const rosterRefresh = 2 * time.Second

// registerRoster mounts the roster's routes; every one refuses without
// the instructor cookie.
func (h *Handler) registerRoster(mux *http.ServeMux) {
	if h.opts.Roster.Learners == nil {
		return
	}
	r := &h.opts.Roster
	if r.ResetWait <= 0 {
		r.ResetWait = 60 * time.Second
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Destinations == nil && r.Broadcaster != nil {
		r.Destinations = defaultDestinations(r.Content)
	}
	if r.Content != nil {
		r.QuizQuestions = cmp.Or(r.QuizQuestions, len(r.Content.Quiz.Questions))
		r.ChallengeCount = cmp.Or(r.ChallengeCount, len(r.Content.Challenges.Challenges))
		if r.ChallengeTasks == nil {
			set := r.Content.Challenges
			r.ChallengeTasks = func(id string) (int, bool) {
				if c, ok := set.Get(id); ok {
					return len(c.Tasks), true
				}
				return 0, false
			}
		}
	}
	r.canLook = h.opts.Look.Page != nil && h.opts.Look.Stream != nil
	r.resets = newResets()
	go r.resets.run(h.base)
	mux.HandleFunc("GET /instructor/roster", h.guard(h.rosterFragment))
	mux.HandleFunc("POST /instructor/learners/{namespace}/reset", h.guard(h.reset))
	mux.HandleFunc("POST /instructor/learners/{namespace}/finalizers/remove", h.guard(h.unblock))
	mux.HandleFunc("POST /instructor/send", h.guard(h.send))
	mux.HandleFunc("GET /instructor/results.csv", h.guard(h.resultsCSV))
	mux.HandleFunc("GET /instructor/results.json", h.guard(h.resultsJSON))
}

// defaultDestinations is every scenario of the lab, every page of the
// course, every challenge, the quiz, the flashcards and the code page: a
// class moves through all of them in a day. Without the course: the
// scenarios.
func defaultDestinations(content *learn.Content) []Destination {
	var d []Destination
	for _, s := range lab.Scenarios {
		d = append(d, Destination{Href: lessons.ScenarioURL(s.Name), Title: "Lab: " + s.Title})
	}
	if content == nil {
		return d
	}
	course, set := content.Course, content.Challenges
	for _, l := range course.Lessons {
		d = append(d, Destination{Href: l.URL(), Title: "Lesson: " + l.Title})
		// A section of it: the class goes to the part being taught, not
		// to the top of a long page.
		for _, sec := range l.Sections {
			d = append(d, Destination{Href: l.URL() + "#" + sec.ID, Title: "  § " + l.Title + ": " + sec.Title})
		}
	}
	d = append(d, Destination{Href: "/challenges", Title: "Challenges: the list"})
	for _, c := range set.Challenges {
		d = append(d, Destination{Href: "/challenges/" + c.ID, Title: "Challenge: " + c.Title})
	}
	return append(d,
		Destination{Href: "/quiz", Title: "Quiz"},
		Destination{Href: "/flashcards", Title: "Flashcards"},
		Destination{Href: "/code", Title: "Write your own reconciler"},
	)
}

// rosterView builds the roster's view model; nil when there is no roster.
func (h *Handler) rosterView(r *http.Request) *RosterView {
	ctx := r.Context()
	ro := h.opts.Roster
	if ro.Learners == nil {
		return nil
	}
	v := &RosterView{JoinCode: ro.JoinCode, Destinations: ro.Destinations, CanSend: ro.Broadcaster != nil, RefreshMs: rosterRefresh.Milliseconds(),
		CanLook: ro.canLook, QuizQuestions: ro.QuizQuestions, ChallengeCount: ro.ChallengeCount, AwayAfter: AwayAfter, ScenarioCount: len(lab.Scenarios)}
	list, err := ro.Learners.List(ctx)
	if err != nil {
		v.Error = "could not read the sessions: " + err.Error()
		return v
	}
	now := time.Now()
	if ro.Now != nil {
		now = ro.Now()
	}
	var resets map[string]ResetStatus
	if ro.resets != nil {
		resets = ro.resets.snapshot(now)
	}
	apart := ro.apart(r)
	t := ro.totals()
	for _, s := range list {
		row := Learner{
			Name: s.Name, Namespace: s.Namespace, Acted: s.Acted,
			Verified: verifiedOf(s.Record, t), Self: selfReportedOf(s.Progress), TimeOnTask: s.Record.ActiveMinutes, Help: s.Help,
			LastActive: ago(now.Sub(s.LastSeen)), Idle: max(now.Sub(s.LastSeen), 0), Joined: s.Started, Seen: s.LastSeen,
		}
		row.Verified.Code = ro.verdict(s.Namespace)
		if ro.Presence != nil {
			row.Pages, row.Following = ro.Presence.Of(s.Namespace)
		}
		if st, ok := resets[s.Namespace]; ok {
			row.Reset = &st
		}
		if ro.Pauses != nil {
			row.Paused = ro.Pauses.NamespacePaused(s.Namespace)
		}
		if ro.States != nil {
			dbs, err := ro.States.Databases(ctx, s.Namespace)
			if err != nil {
				row.DatabasesError = err.Error()
			}
			for _, d := range dbs {
				row.Databases = append(row.Databases, DatabaseRow{Name: d.Name, Ready: d.Ready(), Terminating: d.Terminating,
					Degraded: degraded(d), Held: heldFor(d, now) > HeldAfter})
			}
		}
		row.classify(t)
		if s.Instructor && apart[s.Namespace] == "" {
			apart[s.Namespace] = "the instructor's lab"
		}
		if apart[s.Namespace] != "" {
			row.Apart = apart[s.Namespace]
			v.Self = append(v.Self, row)
			continue
		}
		v.Learners = append(v.Learners, row)
	}
	v.count()
	v.Hands = handsOf(v.Learners, now)
	v.CanHelp = ro.Hands != nil
	if ro.Ended != nil {
		ended, err := ro.Ended.ListEnded(ctx)
		if err != nil {
			v.Error = "could not read the ended sessions: " + err.Error()
		}
		for _, e := range ended {
			v.Ended = append(v.Ended, endedRow(e, t))
		}
	}
	return v
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ago says how long ago, to the minute: a row whose text changed every
// second would be redrawn at every poll for every active learner, and the
// instructor needs no finer grain to see who is there.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "< 1 min"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	}
	return fmt.Sprintf("%d h %d min ago", int(d.Hours()), int(d.Minutes())%60)
}

// rosterFragment is the roster table alone, which the page's script swaps
// in every rosterRefresh. When the script lists the digests of the rows it
// has (HaveHeader), a row whose digest is among them is sent as a stub:
// parsing 300 full rows at every poll, when a fifth of them changed, was
// most of a redraw's cost in the browser.
func (h *Handler) rosterFragment(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", HaveHeader)
	have, err := parseHave(r.Header.Values(HaveHeader))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v := h.rosterView(r)
	if v != nil {
		v.Have = have
	}
	h.render(w, r, http.StatusOK, rosterTable(v))
}

// HaveHeader is the request header in which the roster's script lists the
// digests (data-sig) of the rows it has, separated by spaces. A header,
// not the query: 300 digests are about 4 KB, more than some proxies take
// in a URL, and a GET keeps the fetch a read.
const HaveHeader = "Oplab-Roster-Have"

// maxHave bounds how many digests a request may list: far more rows than
// a class has, and a bound on the set the server builds from them.
const maxHave = 20000

// parseHave reads the digests listed in the HaveHeader values; none is a
// nil set (every row is sent whole). A digest is what rowSig makes: 1 to
// 13 characters of base 36.
func parseHave(values []string) (map[string]bool, error) {
	var have map[string]bool
	for _, v := range values {
		for _, d := range strings.Fields(v) {
			if len(d) > 13 || strings.Trim(d, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
				return nil, fmt.Errorf("%s: %.20q is not a row digest (the data-sig of a roster row: up to 13 characters of 0-9 and a-z)", HaveHeader, d)
			}
			if have == nil {
				have = map[string]bool{}
			}
			have[d] = true
			if len(have) > maxHave {
				return nil, fmt.Errorf("%s: more than %d row digests", HaveHeader, maxHave)
			}
		}
	}
	return have, nil
}

// send sends every learner's page to one of the destinations.
func (h *Handler) send(w http.ResponseWriter, r *http.Request) {
	ro := h.opts.Roster
	if ro.Broadcaster == nil {
		http.Error(w, "send everyone is not available in this oplab", http.StatusNotImplemented)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	href := r.PostFormValue("href")
	if !slices.ContainsFunc(ro.Destinations, func(d Destination) bool { return d.Href == href }) {
		http.Error(w, fmt.Sprintf("href: %q is not one of the pages this page offers (a scenario, lesson, challenge, the quiz, flashcards or code page)", href), http.StatusBadRequest)
		return
	}
	if err := ro.Broadcaster.SendEveryone(href); err != nil {
		http.Error(w, fmt.Sprintf("send everyone to %s: %v", href, err), http.StatusUnprocessableEntity)
		return
	}
	h.opts.Logger.Info("Sent every learner to a page", "href", href)
	http.Redirect(w, r, "/instructor?done=sent", http.StatusSeeOther)
}

func init() {
	messages["finalizers-removed"] = "Removing the remaining finalizers: the learner's Databases go without final snapshots; their row says when it is done (reload the page to see it)."
	messages["reset-started"] = "Reset started: the learner's row says how many Databases are left and, once it ends, what happened (reload the page to see it)."
	messages["sent"] = "Sent every learner's page there."
}

// RosterView is the view model of the roster.
type RosterView struct {
	Learners []Learner
	// Error says why the sessions could not be listed.
	Error string
	// Refusal says why the Reset just pressed did not start (shown to a
	// browser without script; the script announces it instead).
	Refusal  string
	JoinCode string
	CanSend  bool
	// CanLook shows each row's Look link.
	CanLook      bool
	Destinations []Destination
	RefreshMs    int64
	// QuizQuestions and ChallengeCount are the course's totals (0:
	// unknown), the "of" of each learner's quiz best and challenges.
	QuizQuestions, ChallengeCount int
	// ScenarioCount is how many scenarios the lab has.
	ScenarioCount int
	// Self is the instructor's own lab session and the presenter's, listed
	// apart and counted in none of the denominators.
	Self []Learner
	// AwayAfter is how long without a request or an open page makes a
	// learner away, as the page says it.
	AwayAfter time.Duration
	// Stuck, Away and Following count the learners (Self aside) who are.
	Stuck, Away, Following int
	// Have is the digests of the rows the page's script already shows: a
	// row whose digest is among them is rendered as a stub that only
	// names it (id, data-sig, data-kept). Nil: every row is whole.
	Have map[string]bool
	// Hands is the help queue: the raised hands, longest waiting first.
	Hands []Hand
	// CanHelp shows the help queue's controls.
	CanHelp bool
	// Ended are the ended sessions kept, with their results.
	Ended []EndedRow
}

// Learner is one row of the roster.
type Learner struct {
	Name, Namespace string
	// Acted is false for a session whose browser never came back.
	Acted          bool
	Databases      []DatabaseRow
	DatabasesError string
	// Verified is what the server saw of the learner's work; Self what
	// their browser reported, shown apart and never counted.
	Verified Verified
	Self     SelfReported
	// TimeOnTask is the minutes the learner had a page open or made a
	// request.
	TimeOnTask int
	// Help is the learner's raised hand; nil when it is down.
	Help *session.Help
	// Joined and Seen are when the session began and its last request
	// (left out of the row's digest: the export reads them).
	Joined     time.Time `json:"-"`
	Seen       time.Time `json:"-"`
	Paused     bool
	LastActive string
	// Reset is the learner's latest reset; nil when none ran lately.
	Reset *ResetStatus
	// Idle is how long since the learner's browser last made a request
	// (left out of the row's digest: the row shows it to the minute).
	Idle time.Duration `json:"-"`
	// Pages is how many live pages (streams) the learner has open;
	// Following how many of them follow the presenter.
	Pages, Following int
	// Away is true when the learner has no page open and made no request
	// for AwayAfter.
	Away bool
	// Blocked says why the learner is stuck (a Database whose errors loop,
	// one held from going away, a reset that failed); empty: not stuck.
	Blocked []string
	// Progress is the learner's share of the course done, in percent.
	Progress int
	// Apart says why the row is listed apart from the learners ("you",
	// "presenting"); empty for a learner.
	Apart string
}

// Stuck reports whether the learner's latest reset failed, so the roster
// offers to remove the finalizers left.
func (l Learner) Stuck() bool { return l.Reset != nil && l.Reset.State == ResetFailed }

// Resetting reports whether a reset of the learner runs now.
func (l Learner) Resetting() bool { return l.Reset != nil && l.Reset.State == ResetRunning }

// DatabaseRow is one of a learner's Databases.
type DatabaseRow struct {
	Name string
	// Ready is the Ready condition's status ("True", "False", "Unknown"),
	// or "" before the controller wrote one.
	Ready       string
	Terminating bool
	// Degraded is true while the Database's Degraded condition is True:
	// its reconciles fail over and over.
	Degraded bool
	// Held is true when it has been terminating for longer than
	// HeldAfter: a finalizer keeps it.
	Held bool
}

// Challenge is how far a learner is in one challenge.
type Challenge struct {
	ID   string `json:"id"`
	Done int    `json:"done"`
	Of   int    `json:"of"`
}

// challengesOf is a learner's challenges by ID, and how many are complete:
// the roster's row and the class export say the same.
func challengesOf(p progress.Progress) ([]Challenge, int) {
	out := []Challenge{}
	done := 0
	for id, c := range p.Challenges {
		out = append(out, Challenge{ID: id, Done: c.Done, Of: c.Of})
		if c.Complete() {
			done++
		}
	}
	slices.SortFunc(out, func(a, b Challenge) int { return cmpString(a.ID, b.ID) })
	return out, done
}
