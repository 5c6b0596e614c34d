package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/oplab-dev/oplab/web/httpx"
	"github.com/oplab-dev/oplab/web/session"
)

// Costly requests are those whose answer costs oplab far more than the
// request costs its sender: an object history rebuilt (twice for a diff)
// and encoded, a whole timeline encoded, a kubeconfig minted through four
// API calls, a challenge's checks run against the API server, an uploaded
// timeline checked and drawn, a kubectl command run in a process of its
// own. Each session (a visitor without one: its
// client address) has a token bucket of each kind, so no learner, however
// fast their script, takes the cores or the API server from the class
// (400 history diffs at once kept oplab at 1.13 cores). A request past its
// bucket is answered 429 with Retry-After, naming what was limited.
type costly struct {
	// what is the kind of request, as the refusal names it.
	what string
	// patterns are the routes of the kind, as their handlers register
	// them.
	patterns []string
	// burst requests at once, then one every every.
	burst int
	every time.Duration
}

// costlyRequests are the kinds, each sized to what a learner's pages ask
// at their fastest, with room: a time-travel panel clicked through row by
// row, a challenge's page polling its status (every 1.5 s, and 300 ms
// after a step) in a tab or two.
var costlyRequests = []costly{
	{what: "time-travel requests (objects at a step, diffs)", burst: 20, every: 500 * time.Millisecond,
		patterns: []string{"GET /lab/history", "GET /lab/history/diff", "GET /lab/replay/history", "GET /lab/replay/history/diff"}},
	{what: "timeline exports", burst: 5, every: 30 * time.Second, patterns: []string{"GET /lab/export"}},
	{what: "kubeconfig downloads (each mints a token)", burst: 5, every: 30 * time.Second, patterns: []string{"GET /lab/kubeconfig"}},
	{what: "replays of a timeline", burst: 5, every: 30 * time.Second, patterns: []string{"POST /lab/replay", "POST /lab/replay/test/{schedule}"}},
	// Each Run, and each Test's first step, compiles the code in a child
	// process of its own.
	{what: "runs of your code (each compiles it in a new process)", burst: 10, every: 3 * time.Second, patterns: []string{"POST /code/run"}},
	{what: "tests of your code", burst: 3, every: 30 * time.Second, patterns: []string{"POST /code/test"}},
	{what: "challenge checks", burst: 30, every: 200 * time.Millisecond, patterns: []string{"GET /challenges/{id}/status"}},
	// Each starts a process running kubectl's code (web/kubectl), one at a
	// time per learner.
	{what: "kubectl commands (each a process)", burst: 10, every: 2 * time.Second, patterns: []string{"POST /lab/kubectl"}},
}

// limitCostly returns a handler that serves every request with next, the
// costly ones once their sender's bucket of that kind allows.
func (s *Server) limitCostly(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	for _, c := range costlyRequests {
		h := s.limit(c, session.NewThrottle(c.burst, c.every, s.opts.Now), next)
		for _, p := range c.patterns {
			mux.Handle(p, h)
		}
	}
	return mux
}

// limit serves next to a request whose sender (streamOwner: the session,
// else the address) has a try of c left in buckets.
func (s *Server) limit(c costly, buckets *session.Throttle, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := s.streamOwner(r)
		wait := buckets.Take(who)
		if wait == 0 {
			next.ServeHTTP(w, r)
			return
		}
		secs := httpx.RetryAfter(w, wait)
		from := "your lab session"
		if !strings.HasPrefix(who, "ns:") {
			from = "your address"
		}
		msg := fmt.Sprintf("too many %s from %s: %d at once, then one every %s; try again in %s s", c.what, from, c.burst, c.every, secs)
		s.opts.Logger.Info("Limited costly requests", "what", c.what, "who", who, "retryAfter", wait.Round(time.Millisecond))
		if httpx.WantsJSON(r) {
			httpx.JSON(w, http.StatusTooManyRequests, map[string]string{"error": msg})
			return
		}
		http.Error(w, msg, http.StatusTooManyRequests)
	})
}
