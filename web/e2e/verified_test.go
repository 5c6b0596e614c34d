package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/challenges"
	"github.com/oplab-dev/oplab/web/instructor"
)

// send makes a request of the class's server as c, and returns its status
// and body.
func send(t *testing.T, c *http.Client, method, target, contentType, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A learner who tries to forge their grade, as an attacker would, gets
// only what the server itself saw: a progress report claiming everything,
// a challenge status asked with a made-up Start and a done list naming
// every task, a quiz answer taken back within an attempt, a review of a
// card that does not exist. The class export shows the claims as
// self-reported and counts none; the honest work (a task the server's
// check found after the Start it recorded, a quiz answer right in a new
// attempt) is verified. The learner's cookie reaches no instructor route.
func TestALearnerCannotForgeVerifiedProgress(t *testing.T) {
	t.Parallel()
	e := needClass(t)
	c, ns := e.learner(t)
	base := e.http.URL
	course := mustCourse(t)
	ch, ok := course.Challenges.Get("observed-generation")
	if !ok {
		t.Fatal("no challenge observed-generation")
	}
	var taskIDs []string
	for _, task := range ch.Tasks {
		taskIDs = append(taskIDs, task.ID)
	}
	all := strings.Join(taskIDs, ",")

	// 1. The browser claims the whole course.
	claim := fmt.Sprintf(`{"name":"Mallory","scenarios":["first-reconcile"],"challenges":{"observed-generation":{"done":%d,"of":%d}},"quizBest":%d,"cardsReviewed":300}`,
		len(taskIDs), len(taskIDs), len(course.Quiz.Questions))
	if code, body := send(t, c, "POST", base+"/lab/progress", "application/json", claim); code != http.StatusOK {
		t.Fatalf("progress = %d %s", code, body)
	}
	status := func(since int64, done string) challenges.Status {
		t.Helper()
		code, body := send(t, c, "GET", fmt.Sprintf("%s/challenges/observed-generation/status?since=%d&done=%s", base, since, url.QueryEscape(done)), "", "")
		var st challenges.Status
		if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("status = %d %s", code, body)
		}
		return st
	}
	// 2. A status with a Start never pressed and every task claimed.
	if st := status(1700000000000, all); len(st.Verified) != 0 {
		t.Errorf("a made-up Start verified %v", st.Verified)
	}
	// 3. The real Start, then a status with another since, and with the
	// right since but every task claimed and none done.
	code, body := send(t, c, "POST", base+"/challenges/observed-generation/start", "application/x-www-form-urlencoded", "confirm=wipe")
	var started struct{ Started int64 }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &started) != nil || started.Started == 0 {
		t.Fatalf("Start = %d %s", code, body)
	}
	if st := status(started.Started+1, all); len(st.Verified) != 0 {
		t.Errorf("a since one ms off the recorded Start verified %v", st.Verified)
	}
	if st := status(started.Started, all); len(st.Verified) != 0 || st.Done != len(taskIDs) {
		t.Errorf("the right Start with every task claimed: verified %v, done %d; want nothing verified (the claim still shows done on the page)", st.Verified, st.Done)
	}
	// 4. The work itself: the server's check finds it, after the Start it
	// recorded.
	kubectlScale(t, ns, "orders", 2)
	polltest.Until(t, deadline, "the first task verified", func() (bool, error) {
		return slices.Contains(status(started.Started, "").Verified, taskIDs[0]), nil
	})

	// 5. The quiz: a wrong answer, then the right one in the same
	// attempt, then the right one in a new attempt.
	q := course.Quiz.Questions[0]
	right := q.Correct()
	wrong := -1
	for i := range q.Choices {
		if !slices.Contains(right, i) {
			wrong = i
			break
		}
	}
	answer := func(choices []int, attempt string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"question": q.ID, "choices": choices, "attempt": attempt})
		if code, body := send(t, c, "POST", base+"/quiz/answer", "application/json", string(b)); code != http.StatusOK {
			t.Fatalf("quiz answer = %d %s", code, body)
		}
	}
	answer([]int{wrong}, "11")
	answer(right, "11")
	answer(right, "12")
	if code, body := send(t, c, "POST", base+"/quiz/answer", "application/json", `{"question":"`+q.ID+`","choices":[0],"attempt":"not a number"}`); code != http.StatusBadRequest || !strings.Contains(body, "attempt") {
		t.Errorf("an attempt that is no quiz visit = %d %s; want 400 naming attempt", code, body)
	}
	// 6. A review of a card that does not exist.
	if code, body := send(t, c, "POST", base+"/flashcards/review", "application/json", `{"state":{},"rating":3,"card":"made-up"}`); code != http.StatusBadRequest || !strings.Contains(body, "card") {
		t.Errorf("a review of a made-up card = %d %s; want 400 naming card", code, body)
	}

	// 7. The learner's cookie on the instructor's routes.
	for _, r := range []struct{ method, path string }{{"GET", "/instructor/results.csv"}, {"GET", "/instructor/results.json"},
		{"GET", "/instructor/roster"}, {"POST", "/instructor/help/" + ns + "/clear"}, {"POST", "/instructor/message"}, {"POST", "/instructor/class/end"}} {
		if code, _ := send(t, c, r.method, base+r.path, "application/x-www-form-urlencoded", "text=x&confirm=end"); code != http.StatusUnauthorized {
			t.Errorf("a learner's %s %s = %d, want 401", r.method, r.path, code)
		}
	}

	// What the instructor's export says.
	ic, _ := e.instructorLab(t)
	code, body = send(t, ic, "GET", base+"/instructor/results.json", "", "")
	var res struct{ Learners []instructor.Result }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
		t.Fatalf("results.json = %d %.300s", code, body)
	}
	i := slices.IndexFunc(res.Learners, func(r instructor.Result) bool { return r.Namespace == ns })
	if i < 0 {
		t.Fatalf("results.json has no row for %s", ns)
	}
	m := res.Learners[i]
	v := m.Verified
	og := slices.IndexFunc(v.Challenges, func(c instructor.Challenge) bool { return c.ID == "observed-generation" })
	if og < 0 || v.Challenges[og].Done != 1 || v.ChallengesComplete != 0 {
		t.Errorf("verified challenges %+v, complete %d; want observed-generation 1 task (the one done), none complete", v.Challenges, v.ChallengesComplete)
	}
	if v.QuizFirstTry != 0 || v.QuizBest != 1 || v.CardsReviewed != 0 || len(v.Scenarios) != 0 {
		t.Errorf("verified quiz first try %d, best %d, cards %d, scenarios %v; want 0, 1, 0, none", v.QuizFirstTry, v.QuizBest, v.CardsReviewed, v.Scenarios)
	}
	if !m.Self.Reported || m.Self.QuizBest != len(course.Quiz.Questions) || m.Self.CardsReviewed != 300 || m.Self.ChallengesComplete != 1 {
		t.Errorf("self-reported %+v; want the claims, kept apart", m.Self)
	}
	want := int(float64(100)*(float64(1)/float64(len(course.Quiz.Questions)))/3 + 0.5)
	if m.Percent != want {
		t.Errorf("percent complete %d, want %d (the verified quiz attempt alone)", m.Percent, want)
	}
	t.Logf("Mallory's row: verified %+v, self-reported %+v, percent %s", v, m.Self, strconv.Itoa(m.Percent))
}
