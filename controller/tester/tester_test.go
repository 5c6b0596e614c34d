package tester

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr/testr"

	"github.com/oplab-dev/oplab/cluster/clustertest"
	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/sandbox"
	"github.com/oplab-dev/oplab/controller/sandbox/starters"
)

var shared = clustertest.Full(controller.CRDs, controller.InstallLearnerPolicies)

// slots caps the schedules this package's tests run at once, all tests
// together, as the server's cap does on /code: the tests run side by side.
var slots = make(chan struct{}, 6)

// TestMain runs the sandbox child when this binary is started as one, and
// stops the shared cluster at the end.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == sandbox.ChildArg {
		os.Exit(sandbox.RunChild(os.Stdin, os.Stdout))
	}
	code := m.Run()
	if err := shared.Stop(); err != nil {
		code = 1
	}
	os.Exit(code)
}

// scratch makes lab-labelled namespaces on the test cluster with their
// learner-code identity, as web/code's does on oplab's.
type scratch struct {
	t      testing.TB
	cfg    *rest.Config
	c      client.Client
	runner *controller.Runner
}

func (s scratch) Make(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tst-", Labels: map[string]string{"oplab.dev/lab": "true"}}}
	if err := s.c.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, s.runner.GrantCode(ctx, ns.Name)
}

func (s scratch) Remove(ns string) {
	_ = s.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

func testOptions(t testing.TB, src string) Options {
	t.Helper()
	cl := shared.Get(t)
	cfg := rest.CopyConfig(cl.Config())
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Config:  cfg,
		Slots:   slots,
		Scratch: scratch{t: t, cfg: cfg, c: c, runner: controller.NewRunner(cfg, controller.DefaultOptions())},
		Compile: func(ctx context.Context) (Code, error) {
			s := &sandbox.Sandbox{Command: func() *exec.Cmd { return exec.Command(os.Args[0], sandbox.ChildArg) }, Background: true}
			if serr := s.Compile(ctx, src); serr != nil {
				return nil, serr
			}
			return s, nil
		},
	}
}

// The starter that is oplab's own reconciler passes every schedule:
// learners copy it.
func TestOplabsStarterPassesEverySchedule(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	opts := testOptions(t, starters.Source("oplab"))
	opts.Logger = testr.NewWithOptions(t, testr.Options{Verbosity: 1})
	res, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d schedules in %s", res.Schedules, res.Took.Round(time.Millisecond))
	for _, f := range res.Findings {
		t.Errorf("%s (schedule %d, %s; step %d): %s", f.Pattern, f.Schedule, f.Perturbation, f.Step, f.Message)
		logTrace(t, res.Traces[f.Schedule], f.Step)
	}
	if !res.Passed || res.Schedules < 20 {
		t.Errorf("passed %v after %d schedules; want every schedule of a full battery passed", res.Passed, res.Schedules)
	}
}

// logTrace logs a trace's steps up to step, the last 40 of them.
func logTrace(t *testing.T, tr *Trace, step int) {
	if tr == nil {
		return
	}
	from := max(0, step-40)
	for _, s := range tr.Steps[from:min(step, len(tr.Steps))] {
		var b strings.Builder
		b.WriteString(string(s.Type))
		if s.Action != "" {
			b.WriteString(" " + s.Action)
		}
		if s.Target != nil {
			b.WriteString(" " + s.Target.Kind + " " + s.Target.Name)
		}
		if s.Outcome != "" {
			b.WriteString(" → " + string(s.Outcome))
		}
		if s.Phase != "" {
			b.WriteString(" [" + s.Phase + "]")
		}
		if len(s.Differences) > 0 {
			b.WriteString(" " + strings.Join(s.Differences, "; "))
		}
		if s.Message != "" {
			b.WriteString(": " + s.Message)
		}
		if s.Error != "" {
			b.WriteString(" ERROR " + s.Error)
		}
		t.Logf("  %3d %s", s.Seq, b.String())
	}
}

// Each pitfall starter is oplab's reconciler with one pitfall in it, and
// fails with the finding its lesson names.
func TestEachPitfallStarterFailsWithItsLesson(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		starter, pattern, lesson, words string
	}{
		{"pitfall-create", PatternBudget, lessonNonIdempot, "already exists"},
		{"pitfall-status", PatternBudget, lessonThrash, "three times in a row"},
		{"pitfall-finalizer", PatternConvergence, lessonFinalizers, "final snapshot db-final-snapshot was never written"},
	} {
		t.Run(c.starter, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), testOptions(t, starters.Source(c.starter)))
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed || len(res.Findings) == 0 {
				t.Fatalf("the %s starter passed %d schedules", c.starter, res.Schedules)
			}
			f := res.Findings[0]
			if f.Pattern != c.pattern || f.Lesson != c.lesson || !strings.Contains(f.Message, c.words) {
				t.Errorf("the %s starter's first finding is %s (%s): %q; want %s (%s) saying %q", c.starter, f.Pattern, f.Lesson, f.Message, c.pattern, c.lesson, c.words)
				logTrace(t, res.Traces[f.Schedule], f.Step)
			}
		})
	}
}

// The snapshot code oplab's starter had until the tester found it: an
// AlreadyExists on the snapshot taken for success. Every check on the
// page passed; a Database deleted, made again and deleted again loses its
// final snapshot, the first one's left in its place. The same code gets
// the same finding on a second run.
func TestALostSnapshotIsFoundTheSameWayTwice(t *testing.T) {
	t.Parallel()
	old := strings.Replace(starters.Source("oplab"), "\tif err := r.writeSnapshot(ctx, db, &snap); err != nil {\n",
		"\tif err := r.Create(ctx, &snap); err != nil && !apierrors.IsAlreadyExists(err) {\n", 1)
	if old == starters.Source("oplab") {
		t.Fatal("the starter's snapshot write is not where the test looks for it")
	}
	run := func() Finding {
		opts := testOptions(t, old)
		opts.Only = func(name string) bool {
			return strings.HasPrefix(name, "deleted, made again") || strings.HasPrefix(name, "crash after write 1 of the delete")
		}
		res, err := Run(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Findings) != 1 {
			t.Fatalf("%d findings in %d schedules; want the lost snapshot alone: %+v", len(res.Findings), res.Schedules, res.Findings)
		}
		f := res.Findings[0]
		if f.Pattern != PatternMisoperation || f.Lesson != lessonFinalizers || !strings.Contains(f.Message, "this one's is lost") {
			t.Errorf("finding %s (%s): %q; want a misoperation losing the snapshot", f.Pattern, f.Lesson, f.Message)
		}
		return f
	}
	first, second := run(), run()
	// Step is where each run's own trace shows it: a reconcile more or
	// less, woken by the garbage collector's deletes as they happen to
	// fall, moves it; what was found, and how, may not move.
	if first.Pattern != second.Pattern || first.Perturbation != second.Perturbation || first.Schedule != second.Schedule ||
		stripUIDs(first.Message) != stripUIDs(second.Message) {
		t.Errorf("two runs of the same code found differently:\n %+v\n %+v", first, second)
	}
}

// stripUIDs drops the uids a message quotes, which differ run to run.
func stripUIDs(s string) string {
	return uidRe.ReplaceAllString(s, "UID")
}

var uidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// Code that never converges (the skeleton: it writes no status) ends with
// a finding, never a hang: the ordinary life's create gives up at its
// reconciles' bound.
func TestCodeThatNeverConvergesEndsWithAFinding(t *testing.T) {
	t.Parallel()
	opts := testOptions(t, starters.Source("skeleton"))
	opts.MaxReconciles = 6
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || len(res.Findings) != 1 || res.Schedules != 1 {
		t.Fatalf("the skeleton: passed %v, %d findings in %d schedules; want one finding, the ordinary life's", res.Passed, len(res.Findings), res.Schedules)
	}
	f := res.Findings[0]
	if f.Pattern != PatternConvergence || !strings.Contains(f.Message, "did not converge within 6 reconciles") || !strings.Contains(f.Message, "no Ready condition") {
		t.Errorf("the skeleton's finding: %s: %q; want convergence, saying why", f.Pattern, f.Message)
	}
}
