package instructor

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/web/lab/dbview"
)

func TestClassifySaysWhoIsStuckAwayAndHowFar(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	old := now.Add(-HeldAfter - time.Second)
	fresh := now.Add(-time.Second)
	degradedDB := dbview.Database{Name: "a", Conditions: []dbview.Condition{{Type: "Degraded", Status: "True"}}}
	healthy := dbview.Database{Name: "b", Conditions: []dbview.Condition{{Type: "Degraded", Status: "False"}}}
	held := dbview.Database{Name: "c", Terminating: true, DeletionTimestamp: &old}
	going := dbview.Database{Name: "d", Terminating: true, DeletionTimestamp: &fresh}
	row := func(dbs ...dbview.Database) []DatabaseRow {
		var out []DatabaseRow
		for _, d := range dbs {
			out = append(out, DatabaseRow{Name: d.Name, Degraded: degraded(d), Held: heldFor(d, now) > HeldAfter})
		}
		return out
	}
	for _, c := range []struct {
		name     string
		l        Learner
		stuck    int
		away     bool
		progress int
	}{
		{"healthy and here", Learner{Databases: row(healthy, going), Pages: 1, Idle: time.Hour}, 0, false, 0},
		{"a degraded Database", Learner{Databases: row(degradedDB)}, 1, false, 0},
		{"held by a finalizer", Learner{Databases: row(held, degradedDB)}, 2, false, 0},
		{"a failed reset", Learner{Reset: &ResetStatus{State: ResetFailed}}, 1, false, 0},
		{"no page, idle past AwayAfter", Learner{Idle: AwayAfter + time.Second}, 0, true, 0},
		{"no page, idle under AwayAfter", Learner{Idle: AwayAfter - time.Second}, 0, false, 0},
		// Scenarios 2 of 4, challenges 1 of 2, quiz 10 of 10: (50+50+100)/3.
		{"progress", Learner{Verified: Verified{Scenarios: []string{"x", "y"}, ChallengesComplete: 1, QuizBest: 10}}, 0, false, 67},
		// What the browser claims is never counted.
		{"self-reported only", Learner{Self: SelfReported{Reported: true, Scenarios: []string{"x", "y"}, ChallengesComplete: 2, QuizBest: 10}}, 0, false, 0},
	} {
		l := c.l
		l.classify(Totals{QuizQuestions: 10, Challenges: 2, Scenarios: 4})
		if len(l.Blocked) != c.stuck || l.Away != c.away || l.Progress != c.progress {
			t.Errorf("%s: blocked %q, away %v, progress %d; want %d reasons, away %v, progress %d", c.name, l.Blocked, l.Away, l.Progress, c.stuck, c.away, c.progress)
		}
	}
	// Unknown totals are left out of the share, not counted as zero.
	l := Learner{Verified: Verified{QuizBest: 5}}
	l.classify(Totals{QuizQuestions: 10})
	if l.Progress != 50 {
		t.Errorf("quiz 5 of 10 and no other totals: progress %d, want 50", l.Progress)
	}
}

func TestCountsLeaveTheInstructorOutAndUnnamedLearnersAreToldApart(t *testing.T) {
	c := &class{n: 30, start: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	h := New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{
		Learners: c, States: c, Presence: c, QuizQuestions: 41, ChallengeCount: 14, Now: c.now,
		Self:       func(*http.Request) (string, error) { return "lab-instr", nil },
		Presenting: func() (string, bool) { return learnerNS(0), true },
	}})
	v := h.rosterView(httptest.NewRequest("GET", "/instructor/roster", nil))
	if len(v.Self) != 2 || len(v.Learners) != c.n-1 {
		t.Fatalf("%d apart, %d learners; want the instructor and the presenter apart, %d learners", len(v.Self), len(v.Learners), c.n-1)
	}
	var stuck, awayN, following int
	for i := 1; i < c.n; i++ {
		if degradedDB(i) {
			stuck++
		}
		if away(i) {
			awayN++
		}
		if follows(i) && !away(i) {
			following++
		}
	}
	if v.Stuck != stuck || v.Away != awayN || v.Following != following {
		t.Errorf("counts: %d stuck, %d away, %d following; want %d, %d, %d", v.Stuck, v.Away, v.Following, stuck, awayN, following)
	}
	if want := fmt.Sprintf("29 learner sessions, live · %d of 29 stuck · %d of 29 away · %d of 29 following", stuck, awayN, following); countsLine(v) != want {
		t.Errorf("counts line %q, want %q", countsLine(v), want)
	}
	for _, l := range v.Learners {
		if l.Namespace == learnerNS(3) && l.Display() != "Unnamed "+strings.TrimPrefix(learnerNS(3), "lab-") {
			t.Errorf("unnamed learner 3: %q", l.Display())
		}
	}
}

func TestDisplayAndSortName(t *testing.T) {
	for _, c := range []struct {
		l             Learner
		display, sort string
	}{
		{Learner{Name: "Ana Lima", Namespace: "lab-7f3k2"}, "Ana Lima", "ana lima"},
		{Learner{Namespace: "lab-7f3k2"}, "Unnamed 7f3k2", "\uffff" + "lab-7f3k2"},
		{Learner{Namespace: "nodash"}, "Unnamed nodash", "\uffffnodash"},
	} {
		if got := c.l.Display(); got != c.display {
			t.Errorf("Display(%+v) = %q, want %q", c.l, got, c.display)
		}
		if got := c.l.SortName(); got != c.sort {
			t.Errorf("SortName(%+v) = %q, want %q", c.l, got, c.sort)
		}
	}
	if !(Learner{Name: "Zoe"}.SortName() < Learner{Namespace: "lab-a"}.SortName()) {
		t.Error("an unnamed learner sorts before a named one")
	}
}

func TestRowSigChangesWithWhatTheRowShows(t *testing.T) {
	v := &RosterView{QuizQuestions: 41}
	a := Learner{Namespace: "lab-a", Verified: Verified{QuizBest: 3}, Idle: 10 * time.Second}
	b := a
	b.Idle = 40 * time.Second // same minute: the row reads the same
	if rowSig(v, a) != rowSig(v, b) {
		t.Error("the digest changed with the idle seconds, which the row does not show")
	}
	b.Verified.QuizBest = 4
	if rowSig(v, a) == rowSig(v, b) {
		t.Error("the digest did not change with the quiz best")
	}
	b = a
	b.Reset = &ResetStatus{State: ResetRunning}
	if rowSig(v, a) == rowSig(v, b) {
		t.Error("the digest did not change with a reset")
	}
	if rowSig(v, a) == rowSig(&RosterView{QuizQuestions: 40}, a) {
		t.Error("the digest did not change with the quiz's total, which the row shows")
	}
	if strings.ContainsAny(rowSig(v, a), " \"<>") {
		t.Errorf("digest %q is not a plain token", rowSig(v, a))
	}
}
