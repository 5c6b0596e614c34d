package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oplab-dev/oplab/controller/labns"
	"github.com/oplab-dev/oplab/web/progress"
	"github.com/oplab-dev/oplab/web/session"
)

// classManager is a Manager of an instance of its own (prefix), which
// keeps ended sessions in its class namespace, with export as every
// namespace's export.
func classManager(t *testing.T, ctx context.Context, c client.Client, prefix string, now func() time.Time, export []byte) *session.Manager {
	t.Helper()
	kube := labns.KubeNamespaces{Client: c, MaxDatabases: 5, Prefix: prefix}
	m, err := session.New(ctx, session.Options{
		Namespaces: kube, Keep: kube, NamespacePrefix: prefix, IdleTimeout: time.Hour, Now: now,
		ExportOf: func(string) []byte { return export },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteLater(t, c, kube.ClassNamespace()) })
	return m
}

func report(t *testing.T, m *session.Manager, cookie *http.Cookie, p progress.Progress, name string) {
	t.Helper()
	if _, err := m.Report(withCookie(cookie), p, &name); err != nil {
		t.Fatal(err)
	}
}

// A restart on the same cluster shows the same class: every learner's
// name, role, what their browser reported, what the server saw of their
// work, when they were last seen and their raised hand come back from
// their namespace, and the instructor's own lab is still theirs.
func TestTheClassSurvivesARestart(t *testing.T) {
	c := kubeClient(t)
	firstCtx, stopFirst := context.WithCancel(t.Context())
	first := classManager(t, firstCtx, c, "rst-", nil, nil)
	ana, anaCookie := begin(t, first)
	deleteLater(t, c, ana.Namespace)
	report(t, first, anaCookie, progress.Progress{QuizBest: 9, Scenarios: []string{"finalizer"}}, "Ana")
	first.Record(t.Context(), ana.Namespace, func(r *progress.Record) bool {
		r.ChallengeStarted("drift-repair", 1000)
		r.TasksDone("drift-repair", 1000, []string{"create", "repair"})
		r.Answered("7", "q1", true)
		r.Reviewed("card-1")
		return true
	})
	if _, err := first.RaiseHand(withCookie(anaCookie), "my Database never turns Ready"); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	teacher, err := first.BeginInstructor(w, httptest.NewRequest("GET", "/instructor/lab", nil))
	if err != nil {
		t.Fatal(err)
	}
	deleteLater(t, c, teacher.Namespace)
	before, err := first.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	first.Save(t.Context())
	var ns corev1.Namespace
	if err := c.Get(t.Context(), types.NamespacedName{Name: ana.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	if ns.Annotations[labns.LearnerAnnotation] == "" {
		t.Fatalf("namespace %s has no %s after Save: %v", ana.Namespace, labns.LearnerAnnotation, ns.Annotations)
	}
	stopFirst()

	later := time.Now().Add(10 * time.Minute)
	second := classManager(t, t.Context(), c, "rst-", func() time.Time { return later }, nil)
	if _, err := second.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	after, err := second.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	byNS := func(list []session.SessionInfo, ns string) session.SessionInfo {
		for _, s := range list {
			if s.Namespace == ns {
				return s
			}
		}
		t.Fatalf("no session of %s in %+v", ns, list)
		return session.SessionInfo{}
	}
	b, a := byNS(before, ana.Namespace), byNS(after, ana.Namespace)
	bj, _ := json.Marshal(b.Record)
	aj, _ := json.Marshal(a.Record)
	if a.Name != "Ana" || a.Progress.QuizBest != 9 || !bytes.Equal(aj, bj) || a.Help == nil || a.Help.Note != "my Database never turns Ready" {
		t.Errorf("after a restart Ana reads %+v\nrecord %s\nwant as before: %+v\nrecord %s", a, aj, b, bj)
	}
	if !a.LastSeen.Equal(b.LastSeen) {
		t.Errorf("after a restart Ana was last seen %v, want %v (the restart is not a visit)", a.LastSeen, b.LastSeen)
	}
	if got := byNS(after, teacher.Namespace); !got.Instructor {
		t.Errorf("after a restart the instructor's lab %s is a learner's: %+v", teacher.Namespace, got)
	}
}

// When a session ends, what its learner did is kept in the class
// namespace: their next page is refused a new session with the ended one
// (its export offered), the export reads back as it was taken, and a
// restarted oplab still has it. Starting again takes the learner's name
// and record over to a new namespace.
func TestAnEndedSessionIsKeptWithItsExport(t *testing.T) {
	c := kubeClient(t)
	export := []byte(`{"namespace":"x","steps":[` + strings.Repeat(`{"seq":1},`, 500) + `{"seq":2}]}`)
	clk := time.Now()
	now := func() time.Time { return clk }
	firstCtx, stopFirst := context.WithCancel(t.Context())
	m := classManager(t, firstCtx, c, "end-", now, export)
	s, cookie := begin(t, m)
	deleteLater(t, c, s.Namespace)
	if _, err := m.Lookup(withCookie(cookie)); err != nil {
		t.Fatal(err)
	}
	report(t, m, cookie, progress.Progress{}, "Bo")
	m.Record(t.Context(), s.Namespace, func(r *progress.Record) bool { r.Answered("", "q1", true); return true })
	clk = clk.Add(2 * time.Hour)
	if n, err := m.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want the one idle session ended", n, err)
	}
	check := func(m *session.Manager) {
		t.Helper()
		_, err := m.Begin(httptest.NewRecorder(), withCookie(cookie))
		var ee *session.EndedError
		if !asEnded(err, &ee) || ee.Ended.Name != "Bo" || ee.Ended.Reason != session.ReasonExpired || !ee.Ended.Export {
			t.Fatalf("Begin with the ended cookie = %v; want an EndedError naming Bo, expired, with an export", err)
		}
		got, data, err := m.EndedExport(withCookie(cookie))
		if err != nil || !bytes.Equal(data, export) || got.Record.Quiz.Best != 1 {
			t.Fatalf("EndedExport = %+v, %d bytes, %v; want the export taken at the end (%d bytes) and the record", got, len(data), err, len(export))
		}
		if _, _, err := m.EndedExport(httptest.NewRequest("GET", "/", nil)); err == nil {
			t.Error("EndedExport without the ended session's cookie answered")
		}
	}
	check(m)
	stopFirst()
	second := classManager(t, t.Context(), c, "end-", now, nil)
	if _, err := second.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	check(second)
	ended, _ := second.ListEnded(t.Context())
	if len(ended) != 1 || ended[0].Namespace != s.Namespace {
		t.Fatalf("ListEnded after a restart = %+v; want %s", ended, s.Namespace)
	}
	w := httptest.NewRecorder()
	again, err := second.BeginAgain(w, withCookie(cookie), "")
	if err != nil {
		t.Fatal(err)
	}
	deleteLater(t, c, again.Namespace)
	list, _ := second.List(t.Context())
	var found bool
	for _, x := range list {
		if x.Namespace == again.Namespace {
			found = x.Name == "Bo" && x.Record.Quiz.Best == 1
		}
	}
	if !found {
		t.Errorf("the new session %s does not carry Bo's name and record: %+v", again.Namespace, list)
	}
	if ended, _ := second.ListEnded(t.Context()); len(ended) != 0 {
		t.Errorf("after starting again the ended session is still listed apart: %+v", ended)
	}
}

func asEnded(err error, target **session.EndedError) bool {
	e, ok := err.(*session.EndedError)
	if ok {
		*target = e
	}
	return ok
}
