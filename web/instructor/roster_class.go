package instructor

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/web/lab/dbview"
)

// AwayAfter is how long a learner may go without a request while no page
// of theirs is open before the roster calls them away. Five minutes: long
// enough to read a lesson page that makes no request, short enough that a
// learner who left the room shows before the next exercise.
const AwayAfter = 5 * time.Minute

// HeldAfter is how long a Database may be terminating before the roster
// calls its learner stuck: the controller's own finalizer takes a second
// or two, so half a minute means a finalizer that does not let go.
const HeldAfter = 30 * time.Second

// degraded reports whether d's Degraded condition is True.
func degraded(d dbview.Database) bool {
	c, ok := d.Condition("Degraded")
	return ok && c.Status == "True"
}

// heldFor is how long d has been terminating; 0 when it is not.
func heldFor(d dbview.Database, now time.Time) time.Duration {
	if !d.Terminating || d.DeletionTimestamp == nil {
		return 0
	}
	return now.Sub(*d.DeletionTimestamp)
}

// apart is the namespaces listed apart from the learners, each with why:
// the caller's own lab session (the instructor's) and the presenter's.
func (ro *Roster) apart(r *http.Request) map[string]string {
	out := map[string]string{}
	if ro.Presenting != nil {
		if ns, ok := ro.Presenting(); ok {
			out[ns] = "presenting"
		}
	}
	if ro.Self != nil {
		if ns, err := ro.Self(r); err == nil && ns != "" {
			if out[ns] != "" {
				out[ns] = "your lab, presenting"
			} else {
				out[ns] = "your lab"
			}
		}
	}
	return out
}

// classify fills in what the roster derives from the row: why the
// learner is stuck, whether they are away and their share of the course
// the server saw done, out of the course's totals (0: unknown, left out).
func (l *Learner) classify(t Totals) {
	l.Blocked = nil
	for _, d := range l.Databases {
		switch {
		case d.Held:
			l.Blocked = append(l.Blocked, fmt.Sprintf("Database %s held by a finalizer", d.Name))
		case d.Degraded:
			l.Blocked = append(l.Blocked, fmt.Sprintf("Database %s degraded: its reconciles keep failing", d.Name))
		}
	}
	if l.Stuck() {
		l.Blocked = append(l.Blocked, "reset failed")
	}
	l.Away = l.Pages == 0 && l.Idle > AwayAfter
	l.Progress = percent(l.Verified, t)
}

// count sets the roster's counts, over the learners only.
func (v *RosterView) count() {
	v.Stuck, v.Away, v.Following = 0, 0, 0
	for _, l := range v.Learners {
		if len(l.Blocked) > 0 {
			v.Stuck++
		}
		if l.Away {
			v.Away++
		}
		if l.Following > 0 {
			v.Following++
		}
	}
}

// Display is the learner as the roster names them: their name, or for a
// learner who gave none "Unnamed" and the end of their namespace, so two
// unnamed learners are told apart at a glance.
func (l Learner) Display() string {
	if l.Name != "" {
		return l.Name
	}
	return "Unnamed " + suffix(l.Namespace)
}

// suffix is the part of a namespace after its last dash (lab-7f3k2 →
// 7f3k2): what tells one session's namespace from another's.
func suffix(ns string) string {
	if i := strings.LastIndexByte(ns, '-'); i >= 0 && i < len(ns)-1 {
		return ns[i+1:]
	}
	return ns
}

// SortName is the key the page's script sorts names by: the name folded
// to lower case, unnamed learners after every named one.
func (l Learner) SortName() string {
	if l.Name == "" {
		return "\uffff" + l.Namespace
	}
	return strings.ToLower(l.Name)
}

// rowSig is a digest of everything a learner's row shows: the page's
// script morphs only rows whose digest changed, so a redraw of 300 rows
// where a few changed costs a few rows.
func rowSig(v *RosterView, l Learner) string {
	b, err := json.Marshal(struct {
		L                           Learner
		Quiz, Challenges, Scenarios int
	}{l, v.QuizQuestions, v.ChallengeCount, v.ScenarioCount})
	if err != nil {
		return "" // plain values: cannot fail; "" is morphed every time
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}
