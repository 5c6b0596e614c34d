package instructor

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// stuckStates is a namespace whose Databases never go: what a reset sees
// when a finalizer holds one. (That the real finalizer lets go is tested on
// the real cluster in web/e2e/roster_test.go; this is about the words.)
type stuckStates struct{ dbs []dbview.Database }

func (s stuckStates) Databases(context.Context, string) ([]dbview.Database, error) { return s.dbs, nil }

type failingDeleter struct{ err error }

func (d failingDeleter) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return d.err
}

// blockingDeleter's deletes wait until gate is closed, whatever the reset's
// deadline: until then the reset is running, however slow the machine.
type blockingDeleter struct{ gate chan struct{} }

func (d blockingDeleter) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	<-d.gate
	return nil
}

// resetMux is a roster with one learner whose Databases are states and
// whose deletes answer del.
func resetMux(t *testing.T, states LabStates, del Deleter) (*http.ServeMux, string) {
	t.Helper()
	m, err := session.New(t.Context(), session.Options{Namespaces: inMemory{}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	progress.Handler{Sessions: m, Known: progress.Known{Scenario: func(string) bool { return true }}}.Register(mux)
	New(t.Context(), Options{Token: token, Controller: &fakeSwitch{running: true}, Roster: Roster{
		Learners: m, States: states, Deleter: del, ResetWait: 300 * time.Millisecond,
	}}).Register(mux)
	s, err := m.Begin(httptest.NewRecorder(), httptest.NewRequest("GET", "/lab", nil))
	if err != nil {
		t.Fatal(err)
	}
	return mux, s.Namespace
}

// outcome waits until the row of ns shows a reset that is not running.
func outcome(t *testing.T, mux http.Handler, c *http.Cookie, ns string) (string, string) {
	t.Helper()
	re := regexp.MustCompile(`id="reset-status-` + regexp.QuoteMeta(ns) + `" data-reset-state="(\w+)" data-reset-seq="\d+">([^<]*)</p>`)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		m := re.FindStringSubmatch(do(mux, "GET", "/instructor/roster", nil, c).Body.String())
		if m != nil && m[1] != string(ResetRunning) {
			return m[1], html.UnescapeString(m[2])
		}
	}
	t.Fatalf("the reset of %s never ended", ns)
	return "", ""
}

func postResetJSON(mux http.Handler, c *http.Cookie, ns string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/instructor/learners/"+ns+"/reset", nil)
	r.Header.Set("Accept", "application/json")
	r.AddCookie(c)
	return serve(mux, r)
}

// A reset that cannot finish says, in words, which Database is held by
// which finalizer; a delete the API server refuses is named too.
func TestRosterResetFailureSaysWhatFailed(t *testing.T) {
	c := instructorCookie()
	held := stuckStates{dbs: []dbview.Database{{Name: "stuck", UID: "u1", Terminating: true, HeldBy: []string{"db.oplab.dev/final-snapshot"}}}}
	mux, ns := resetMux(t, held, failingDeleter{})
	if w := postResetJSON(mux, c, ns); w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), `"message":"Resetting…`) {
		t.Fatalf("reset = %d %s, want 202 saying it runs", w.Code, w.Body)
	}
	st, text := outcome(t, mux, c, ns)
	if st != string(ResetFailed) || !strings.Contains(text, "after 300ms, Database stuck is still held by its finalizer db.oplab.dev/final-snapshot") || strings.Contains(text, "deadline") {
		t.Errorf("outcome = %s %q, want failed naming the Database and its finalizer (in words, no Go error)", st, text)
	}

	// A failed reset can be tried again.
	if w := postResetJSON(mux, c, ns); w.Code != http.StatusAccepted {
		t.Errorf("a reset after a failed one = %d %s, want 202", w.Code, w.Body)
	}
	outcome(t, mux, c, ns)

	// One that runs refuses a second: its delete is held until the test
	// lets it go, so "running" does not depend on how fast the machine is.
	gate := make(chan struct{})
	mux, ns = resetMux(t, held, blockingDeleter{gate})
	if w := postResetJSON(mux, c, ns); w.Code != http.StatusAccepted {
		t.Fatalf("reset = %d %s", w.Code, w.Body)
	}
	if w := postResetJSON(mux, c, ns); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "already running") {
		t.Errorf("a reset while one runs = %d %s, want 409 saying one is already running", w.Code, w.Body)
	}
	close(gate)
	if st, _ := outcome(t, mux, c, ns); st != string(ResetFailed) {
		t.Errorf("the held reset ended %s, want failed (its Database never goes)", st)
	}
	mux, ns = resetMux(t, held, failingDeleter{err: errors.New("databases.db.oplab.dev \"stuck\" is forbidden")})
	if w := postResetJSON(mux, c, ns); w.Code != http.StatusAccepted {
		t.Fatalf("reset = %d %s", w.Code, w.Body)
	}
	if st, text := outcome(t, mux, c, ns); st != string(ResetFailed) || !strings.Contains(text, `could not delete Database stuck: databases.db.oplab.dev "stuck" is forbidden`) {
		t.Errorf("outcome = %s %q, want failed naming the refused delete", st, text)
	}
}

// patchingDeleter records the patches of a removal of finalizers.
type patchingDeleter struct {
	failingDeleter
	patches chan string
}

func (d patchingDeleter) Patch(_ context.Context, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
	data, err := p.Data(obj)
	d.patches <- obj.GetName() + " " + string(data)
	return err
}

// The way out is offered only once a reset failed; it patches the
// finalizers away on the Databases left (UID-checked) and reports in the
// same row.
func TestRosterOffersToRemoveFinalizersAfterAFailedReset(t *testing.T) {
	c := instructorCookie()
	held := stuckStates{dbs: []dbview.Database{{Name: "stuck", UID: "u1", Terminating: true, HeldBy: []string{"evil.example/never"}}}}
	del := patchingDeleter{patches: make(chan string, 4)}
	mux, ns := resetMux(t, held, del)
	if body := do(mux, "GET", "/instructor/roster", nil, c).Body.String(); strings.Contains(body, `id="unblock-`) {
		t.Fatalf("the roster offers to remove finalizers before any reset failed")
	}
	postResetJSON(mux, c, ns)
	if st, _ := outcome(t, mux, c, ns); st != string(ResetFailed) {
		t.Fatalf("reset = %s, want failed", st)
	}
	body := do(mux, "GET", "/instructor/roster", nil, c).Body.String()
	if !strings.Contains(body, `action="/instructor/learners/`+ns+`/finalizers/remove"`) || !strings.Contains(body, "Remove the remaining finalizers (skips snapshots not yet taken)</button>") {
		t.Fatalf("after a failed reset the roster offers no way out:\n%s", body)
	}
	r := httptest.NewRequest("POST", "/instructor/learners/"+ns+"/finalizers/remove", nil)
	r.Header.Set("Accept", "application/json")
	r.AddCookie(c)
	if w := serve(mux, r); w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), "Removing the remaining finalizers") {
		t.Fatalf("remove finalizers = %d %s, want 202 saying it runs", w.Code, w.Body)
	}
	if got, want := <-del.patches, `stuck {"metadata":{"uid":"u1","finalizers":null}}`; got != want {
		t.Errorf("patch = %s, want %s", got, want)
	}
	// These fake Databases never go, so it ends failed, saying so.
	if st, text := outcome(t, mux, c, ns); st != string(ResetFailed) || !strings.HasPrefix(text, "Removing the finalizers failed at") {
		t.Errorf("outcome = %s %q, want failed, as a removal of finalizers", st, text)
	}
}

// slowStates answers the reset's first reads at once, then only when the
// reset gives up: a lab state busy at the moment the reset's wait ends.
type slowStates struct {
	dbs  []dbview.Database
	fast int
	n    *int
}

func (s slowStates) Databases(ctx context.Context, _ string) ([]dbview.Database, error) {
	if _, waiting := ctx.Deadline(); !waiting {
		return s.dbs, nil // the roster page's own reads
	}
	*s.n++
	if *s.n <= s.fast {
		return s.dbs, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A read cut off by the end of the wait does not hide what the reads
// before it said: the Database held by its finalizer is still named.
func TestRosterResetFailureSurvivesALastReadCutOff(t *testing.T) {
	c := instructorCookie()
	n := 0
	held := slowStates{dbs: []dbview.Database{{Name: "stuck", UID: "u1", Terminating: true, HeldBy: []string{"evil.example/never"}}}, fast: 2, n: &n}
	mux, ns := resetMux(t, held, failingDeleter{})
	if w := postResetJSON(mux, c, ns); w.Code != http.StatusAccepted {
		t.Fatalf("reset = %d %s", w.Code, w.Body)
	}
	if st, text := outcome(t, mux, c, ns); st != string(ResetFailed) || !strings.Contains(text, "Database stuck is still held by its finalizer evil.example/never") {
		t.Errorf("outcome = %s %q, want failed naming the finalizer the last answered read showed", st, text)
	}
}

// goneStates lists its Databases until their finalizers are patched away
// (goneDeleter), and none after: they went.
type goneStates struct {
	dbs  []dbview.Database
	gone *atomic.Bool
}

func (g goneStates) Databases(context.Context, string) ([]dbview.Database, error) {
	if g.gone.Load() {
		return nil, nil
	}
	return g.dbs, nil
}

func (g goneStates) gonePatch() *atomic.Bool { return g.gone }

type goneDeleter struct {
	failingDeleter
	gone *atomic.Bool
}

func (d goneDeleter) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	d.gone.Store(true)
	return nil
}

type goneWithSnapshots struct {
	goneStates
	snaps []dbview.Snapshot
}

func (g goneWithSnapshots) Snapshots(context.Context, string) ([]dbview.Snapshot, error) {
	return g.snaps, nil
}

// A removal of finalizers says which Databases went without a final
// snapshot, as the lab lists them: one whose snapshot oplab's finalizer
// took before is not among them. Without a lab that lists snapshots, none
// is promised.
func TestForcedRemovalSaysWhichWentWithoutASnapshot(t *testing.T) {
	dbs := []dbview.Database{{Name: "kept", UID: "u1"}, {Name: "lost", UID: "u2"}, {Name: "renamed", UID: "u3"}}
	for _, tc := range []struct {
		name   string
		states interface {
			LabStates
			gonePatch() *atomic.Bool
		}
		want string
	}{
		{"the lab lists them", goneWithSnapshots{goneStates{dbs, new(atomic.Bool)}, []dbview.Snapshot{
			{Database: "kept", DatabaseUID: "u1", Name: "kept-final-snapshot"},
			{Database: "lost", DatabaseUID: "u2", Name: "lost-final-snapshot", Lost: true},
			// Another object of the same name: not renamed's snapshot.
			{Database: "renamed", DatabaseUID: "older", Name: "renamed-final-snapshot"},
			{Database: "renamed", DatabaseUID: "u3", Name: "renamed-final-snapshot", Lost: true},
		}}, "3 Databases deleted, 2 without a final snapshot (lost, renamed); the others' had been taken before."},
		{"every one kept", goneWithSnapshots{goneStates{dbs[:1], new(atomic.Bool)}, []dbview.Snapshot{
			{Database: "kept", DatabaseUID: "u1", Name: "kept-final-snapshot"},
		}}, "1 Database deleted; its final snapshot had been taken before."},
		{"no snapshots listed", goneStates{dbs[:2], new(atomic.Bool)}, "2 Databases deleted without a final snapshot."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := instructorCookie()
			mux, ns := resetMux(t, tc.states, goneDeleter{gone: tc.states.gonePatch()})
			r := httptest.NewRequest("POST", "/instructor/learners/"+ns+"/finalizers/remove", nil)
			r.Header.Set("Accept", "application/json")
			r.AddCookie(c)
			if w := serve(mux, r); w.Code != http.StatusAccepted {
				t.Fatalf("remove finalizers = %d %s, want 202", w.Code, w.Body)
			}
			if st, text := outcome(t, mux, c, ns); st != string(ResetDone) || !strings.HasSuffix(text, tc.want) {
				t.Errorf("outcome = %s %q, want done ending %q", st, text, tc.want)
			}
		})
	}
}
