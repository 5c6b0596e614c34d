package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// The test binary is its own sandbox child: `pkg.test sandbox` runs
// RunChild, as `oplab sandbox` does.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == ChildArg {
		os.Exit(RunChild(os.Stdin, os.Stdout))
	}
	if len(os.Args) == 2 && os.Args[1] == landlockOnlyArg {
		fenceSeccomp = false
		os.Exit(RunChild(os.Stdin, os.Stdout))
	}
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	_ = sharedCluster.Stop()
	os.Exit(code)
}

func testSandbox(t *testing.T) *Sandbox {
	t.Helper()
	s := &Sandbox{Command: testSandboxCommand}
	t.Cleanup(s.Close)
	return s
}

func testSandboxCommand() *exec.Cmd { return exec.Command(os.Args[0], ChildArg) }

// fakeClient stands in for the traced client where no API server
// behaviour is under test: what the parent refuses never reaches one.
func fakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(objs...).
		WithStatusSubresource(&dbv1.Database{}).Build()
}

const header = `package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
%s)

type DatabaseReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
%s
}
`

func learner(imports, body string) string {
	return strings.Replace(strings.Replace(header, "%s", imports, 1), "%s", body, 1)
}

var req = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "learner", Name: "shop"}}

func compileOK(t *testing.T, s *Sandbox, src string) {
	t.Helper()
	if serr := s.Compile(context.Background(), src); serr != nil {
		t.Fatalf("compile: %v", serr)
	}
}

func TestCompileRefusesForbiddenImports(t *testing.T) {
	s := testSandbox(t)
	for _, pkg := range []string{"os", "net", "unsafe", "reflect", "syscall", "os/exec", "io/ioutil", "net/http", "runtime", "github.com/oplab-dev/oplab/cluster"} {
		src := learner("\t_ \""+pkg+"\"\n", "\treturn ctrl.Result{}, nil")
		serr := s.Compile(context.Background(), src)
		if serr == nil {
			t.Errorf("import %q compiled", pkg)
			continue
		}
		if serr.Line != 9 || !strings.Contains(serr.Message, "not available") {
			t.Errorf("import %q: got %+v, want line 9, not available", pkg, serr)
		}
	}
	if s.Compiled() {
		t.Error("the Sandbox kept code after refusals only")
	}
}

func TestCompileRefusesGoStatements(t *testing.T) {
	s := testSandbox(t)
	serr := s.Compile(context.Background(), learner("", "\tgo func() {}()\n\treturn ctrl.Result{}, nil"))
	if serr == nil || serr.Line != 17 || !strings.Contains(serr.Message, "go statements") {
		t.Fatalf("got %+v, want a refusal at line 17", serr)
	}
}

func TestCompileErrorHasItsLine(t *testing.T) {
	s := testSandbox(t)
	serr := s.Compile(context.Background(), learner("", "\tx := undefinedThing\n\treturn ctrl.Result{}, x"))
	if serr == nil || serr.Line != 17 {
		t.Fatalf("got %+v, want an error at line 17", serr)
	}
	t.Logf("compile error: %v", serr)
	serr = s.Compile(context.Background(), "package controller\n\nfunc (\n")
	if serr == nil || serr.Line == 0 {
		t.Fatalf("syntax error: got %+v, want a line", serr)
	}
	// Two syntax errors: the first, and where the others are.
	serr = s.Compile(context.Background(), learner("", "\tx := 1 +\n\t_ = x\n\ty := )\n\treturn ctrl.Result{}, nil"))
	if serr == nil || serr.Line != 18 || !strings.Contains(serr.Message, "more syntax error") || !strings.Contains(serr.Message, "19") {
		t.Fatalf("two syntax errors: got %+v, want the first at line 18 and the next one's line named", serr)
	}
	t.Logf("two syntax errors: %v", serr)
}

func TestCompileNeedsTheKubebuilderShape(t *testing.T) {
	s := testSandbox(t)
	serr := s.Compile(context.Background(), "package controller\n\ntype Other struct{}\n")
	if serr == nil || !strings.Contains(serr.Message, "DatabaseReconciler") {
		t.Fatalf("got %+v, want an error naming DatabaseReconciler", serr)
	}
}

func TestReconcileGetsThroughTheFacade(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("\t\"fmt\"\n\tdbv1 \"github.com/oplab-dev/oplab/controller/api/v1alpha1\"\n", `	var db dbv1.Database
	if err := r.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, err
	}
	if db.Spec.Replicas != 3 {
		return ctrl.Result{}, fmt.Errorf("replicas %d", db.Spec.Replicas)
	}
	return ctrl.Result{RequeueAfter: 7}, nil`))
	c := fakeClient(&dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "learner", Name: "shop"}, Spec: dbv1.DatabaseSpec{Replicas: 3}})
	res, err := s.Reconcile(context.Background(), c, req)
	if err != nil || res.RequeueAfter != 7 {
		t.Fatalf("got %v, %v; want RequeueAfter 7, no error", res, err)
	}
}

func TestNotFoundCrossesThePipe(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("\t\"errors\"\n\tapierrors \"k8s.io/apimachinery/pkg/api/errors\"\n\tdbv1 \"github.com/oplab-dev/oplab/controller/api/v1alpha1\"\n", `	var db dbv1.Database
	err := r.Get(ctx, req.NamespacedName, &db)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, errors.New("expected NotFound")`))
	if _, err := s.Reconcile(context.Background(), fakeClient(), req); err != nil {
		t.Fatal(err)
	}
}

func TestOtherNamespaceIsRefused(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("\t\"k8s.io/apimachinery/pkg/types\"\n\tcorev1 \"k8s.io/api/core/v1\"\n", `	var sec corev1.Secret
	err := r.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "admin"}, &sec)
	return ctrl.Result{}, err`))
	c := fakeClient(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "admin"}})
	_, err := s.Reconcile(context.Background(), c, req)
	if err == nil || !strings.Contains(err.Error(), `may touch only namespace "learner"`) {
		t.Fatalf("got %v, want the Get refused", err)
	}
}

func TestCreateInOtherNamespaceIsRefused(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\tcorev1 \"k8s.io/api/core/v1\"\n", `	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}
	return ctrl.Result{}, r.Create(ctx, &cm)`))
	c := fakeClient()
	_, err := s.Reconcile(context.Background(), c, req)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("got %v, want the Create refused", err)
	}
	var list corev1.ConfigMapList
	if err := c.List(context.Background(), &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("ConfigMaps after a refused create: %v, %v", list.Items, err)
	}
}

func TestKindOutsideTheWhitelistIsRefused(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("\tcorev1 \"k8s.io/api/core/v1\"\n", `	var ns corev1.Namespace
	return ctrl.Result{}, r.Get(ctx, client.ObjectKey{Name: "kube-system"}, &ns)`))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	if err == nil || !strings.Contains(err.Error(), "works only on") {
		t.Fatalf("got %v, want the kind refused", err)
	}
}

// A loop that never ends is stopped by its CPU budget, long before the
// wall-clock deadline, so it holds a core for a fraction of a second.
func TestEndlessLoopIsKilledAtItsCPUBudget(t *testing.T) {
	s := testSandbox(t)
	s.Deadline = time.Minute
	s.CPUBudget = 100 * time.Millisecond
	compileOK(t, s, learner("", "\tfor {\n\t}"))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	se, ok := AsSourceError(err)
	if !ok || se.Kind != "deadline" || !strings.Contains(se.Message, "used more than 100ms of CPU in one reconcile") {
		t.Fatalf("got %v, want the CPU budget named", err)
	}
	// The next reconcile runs in a fresh child, and overruns again.
	_, err = s.Reconcile(context.Background(), fakeClient(), req)
	if se, ok := AsSourceError(err); !ok || se.Kind != "deadline" {
		t.Fatalf("second reconcile: got %v, want a deadline error", err)
	}
}

// TestEndlessInitIsStoppedAtItsCPUBudget: an initialiser that never
// returns is stopped by the compile's CPU budget, named as such, not by
// the wall clock (which, on a loaded machine, stopped sound code too).
func TestEndlessInitIsStoppedAtItsCPUBudget(t *testing.T) {
	s := testSandbox(t)
	// A budget well under the default, so that a child at its low priority
	// on a loaded machine still spends it before the 30 s backstop.
	s.CompileCPUBudget = time.Second
	src := learner("", "\treturn ctrl.Result{}, nil") + "\nfunc init() {\n\tfor {\n\t}\n}\n"
	serr := s.Compile(context.Background(), src)
	if serr == nil || serr.Kind != "deadline" || !strings.Contains(serr.Message, "package initialisation used more than 1s of CPU") {
		t.Fatalf("got %+v, want the initialisation's CPU budget named", serr)
	}
	if s.Compiled() {
		t.Error("the Sandbox kept code whose initialisation never ended")
	}
}

// After a reconcile was killed, the learner's next child runs at the lowest
// priority (retried by the controller, code that keeps overrunning must
// cost the other learners little); new code starts at the usual one.
func TestAChildAfterAnOverrunRunsAtTheLowestPriority(t *testing.T) {
	s := testSandbox(t)
	s.CPUBudget = 50 * time.Millisecond
	src := learner("", "\tif req.Name == \"spin\" {\n\t\tfor {\n\t\t}\n\t}\n\treturn ctrl.Result{}, nil")
	compileOK(t, s, src)
	usual := niceOfChild(t, s)
	if usual >= overranNice {
		t.Skipf("the tests run at nice %d already", usual)
	}
	// Every thread of a fresh child below oplab: at childNice, or at the
	// tests' own nice when that is lower still.
	own, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := max(childNice, 20-own); usual != want {
		t.Errorf("a fresh child has a thread at nice %d, want every thread at %d", usual, want)
	}
	spin := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "learner", Name: "spin"}}
	if _, err := s.Reconcile(context.Background(), fakeClient(), spin); err == nil {
		t.Fatal("the spinning reconcile returned")
	}
	if _, err := s.Reconcile(context.Background(), fakeClient(), req); err != nil {
		t.Fatal(err)
	}
	if got := niceOfChild(t, s); got != overranNice {
		t.Errorf("the child after an overrun runs at nice %d, want %d", got, overranNice)
	}
	if n, idle := idleThreadsOfChild(t, s); idle != n {
		t.Errorf("after an overrun %d of the child's %d threads run under SCHED_IDLE, want all", idle, n)
	}
	compileOK(t, s, src)
	if got := niceOfChild(t, s); got != usual {
		t.Errorf("after new code the child runs at nice %d, want %d", got, usual)
	}
	if n, idle := idleThreadsOfChild(t, s); idle != 0 {
		t.Errorf("after new code %d of the child's %d threads run under SCHED_IDLE, want none", idle, n)
	}
}

// idleThreadsOfChild counts the threads of s's running child, and those
// of them under SCHED_IDLE.
func idleThreadsOfChild(t *testing.T, s *Sandbox) (n, idle int) {
	t.Helper()
	s.mu.Lock()
	pid := s.p.cmd.Process.Pid
	s.mu.Unlock()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // the thread ended
		}
		n++
		if attr.Policy == unix.SCHED_IDLE {
			idle++
		}
	}
	if n == 0 {
		t.Fatal("the child has no threads to read")
	}
	return n, idle
}

// niceOfChild is the nice value of s's running child, from /proc: the
// lowest of its threads', since on Linux each thread has its own, and the
// one at the lowest nice is the one that takes CPU from its neighbours.
func niceOfChild(t *testing.T, s *Sandbox) int {
	t.Helper()
	s.mu.Lock()
	pid := s.p.cmd.Process.Pid
	s.mu.Unlock()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	lowest, seen := 0, false
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		// Field 19, the 17th after the command name.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		n, err := strconv.Atoi(f[16])
		if err != nil {
			t.Fatal(err)
		}
		if !seen || n < lowest {
			lowest, seen = n, true
		}
	}
	if !seen {
		t.Fatal("the child has no threads to read")
	}
	return lowest
}

// Code that waits for ever uses no CPU: the wall-clock deadline stops it.
func TestBlockedCodeIsKilledAtTheDeadline(t *testing.T) {
	s := testSandbox(t)
	s.Deadline = 500 * time.Millisecond
	compileOK(t, s, learner("", "\tvar never chan int\n\t<-never\n\treturn ctrl.Result{}, nil"))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	se, ok := AsSourceError(err)
	if !ok || se.Kind != "deadline" || !strings.Contains(se.Message, "ran past 500ms") {
		t.Fatalf("got %v, want the deadline named", err)
	}
}

func TestCPUTimeCountsThisProcess(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU time %v after a busy 100 ms, %v before", after, before)
	}
	if _, err := cpuTime(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

func TestUnboundedAllocationKillsOnlyTheChild(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("", `	var keep [][]byte
	for {
		keep = append(keep, make([]byte, 1<<20))
	}`))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	se, ok := AsSourceError(err)
	if !ok || (se.Kind != "crash" && se.Kind != "deadline") {
		t.Fatalf("got %v, want the child dead", err)
	}
	t.Logf("allocation: %v", err)
}

func TestPanicHasItsLine(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("", "\tvar m map[string]int\n\tm[\"x\"] = 1\n\treturn ctrl.Result{}, nil"))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	se, ok := AsSourceError(err)
	// The interpreter alone reports a panic at its function's first
	// statement (line 17 here); the statement that ran is line 18.
	if !ok || se.Kind != "panic" || se.Line != 18 || se.Col != 2 {
		t.Fatalf("got %+v, want a panic at line 18:2", se)
	}
	// The child survives a panic: the next reconcile runs the code again.
	_, err = s.Reconcile(context.Background(), fakeClient(), req)
	if se, ok := AsSourceError(err); !ok || se.Kind != "panic" {
		t.Fatalf("second reconcile: got %v", err)
	}
}

// A panic in a function the Reconcile calls is at that function's
// statement, in Go's words, not the interpreter's reflect ones; and a
// compile error's column is the learner's, not the instrumented copy's.
func TestPanicIsWhereItHappensInGosWords(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("", "\tvar xs []int\n\tn := len(req.Name)\n\tn++\n\treturn ctrl.Result{}, pick(xs, n)\n}\n\nfunc pick(xs []int, n int) error {\n\tn--\n\tif xs[n] > 0 {\n\t\treturn nil\n\t}\n\treturn nil"))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	se, ok := AsSourceError(err)
	if !ok || se.Kind != "panic" || se.Line != 25 || se.Col != 5 || se.Message != "panic: runtime error: index out of range" {
		t.Fatalf("got %+v, want the index out of range in Go's words at line 25:5, the if's condition in pick", se)
	}
	// In an else-if's condition, which is no statement of a block.
	compileOK(t, s, learner("", "\tvar xs []int\n\tif len(req.Name) > 100 {\n\t\treturn ctrl.Result{}, nil\n\t} else if xs[len(req.Name)] > 0 {\n\t\treturn ctrl.Result{}, nil\n\t}\n\treturn ctrl.Result{}, nil"))
	_, err = s.Reconcile(context.Background(), fakeClient(), req)
	if se, ok := AsSourceError(err); !ok || se.Kind != "panic" || se.Line != 20 || se.Col != 12 {
		t.Fatalf("got %+v, want the panic in the else-if's condition, at line 20:12", se)
	}
	serr := s.Compile(context.Background(), learner("", "\tx := 1; y := undefinedThing\n\t_, _ = x, y\n\treturn ctrl.Result{}, nil"))
	if serr == nil || serr.Line != 17 || serr.Col != 15 || !strings.Contains(serr.Message, "undefinedThing") {
		t.Fatalf("compile error %+v, want undefinedThing at line 17:15", serr)
	}
}

// The statement recorder leaves a switch's clauses alone (a call before a
// case is a syntax error) and records the statements in them; a name of
// the recorder's in the learner's code is refused, with its line.
func TestSwitchesRunAndTheRecordersNamesAreRefused(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("", "\tvar m map[string]int\n\tvar x any = req.Name\n\tswitch v := x.(type) {\n\tcase int:\n\t\t_ = v\n\tcase string:\n\t\tswitch {\n\t\tcase v == \"\":\n\t\tdefault:\n\t\t\tm[v] = 1\n\t\t}\n\t}\n\treturn ctrl.Result{}, nil"))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	if se, ok := AsSourceError(err); !ok || se.Kind != "panic" || se.Line != 26 {
		t.Fatalf("got %v, want the nil map write in the inner switch's default, line 26", err)
	}
	for name, body := range map[string]string{
		"a local oplabAt": "\toplabAt := 5\n\t_ = oplabAt\n\treturn ctrl.Result{}, nil",
		"a forged line":   "\toplabAt(3, 1)\n\treturn ctrl.Result{}, nil",
		"OplabWhere":      "\treturn ctrl.Result{}, nil\n}\n\nvar OplabWhere = 7\n\nfunc unused() {",
	} {
		serr := s.Compile(context.Background(), learner("", body))
		if serr == nil || serr.Line < 17 || !strings.Contains(serr.Message, "names starting with oplab are the sandbox's own") {
			t.Errorf("%s: got %+v, want it refused at its line", name, serr)
		}
	}
}

// A condition of a named boolean type still runs once the recorder stands
// beside it (recorder && (cond)), in an if and in a for: Go itself would
// refuse bool && done, the interpreter takes it, and this says so if it
// ever stops.
func TestNamedBoolConditionsRun(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("", "\ttype done bool\n\tvar d done\n\tn := 0\n\tfor !d {\n\t\tn++\n\t\td = n == 3\n\t}\n\tif d && n == 3 {\n\t\treturn ctrl.Result{RequeueAfter: 5}, nil\n\t}\n\treturn ctrl.Result{}, nil"))
	res, err := s.Reconcile(context.Background(), fakeClient(), req)
	if err != nil || res.RequeueAfter != 5 {
		t.Fatalf("got %v, %v; want RequeueAfter 5 after three turns", res, err)
	}
}

func TestStackOverflowKillsOnlyTheChild(t *testing.T) {
	s := testSandbox(t)
	compileOK(t, s, learner("", "\treturn ctrl.Result{}, recurse(0)\n}\n\nfunc recurse(n int) error {\n\treturn recurse(n + 1)"))
	_, err := s.Reconcile(context.Background(), fakeClient(), req)
	if se, ok := AsSourceError(err); !ok || (se.Kind != "crash" && se.Kind != "deadline") {
		t.Fatalf("got %v, want the child dead", err)
	}
}

func TestChildHasNoEnvironment(t *testing.T) {
	t.Setenv("OPLAB_SECRET_FOR_TEST", "leak")
	s := testSandbox(t)
	// The child itself (not learner code, which cannot read it) reports
	// its environment through a compile of code that cannot see it: the
	// check is on the process, read from /proc.
	compileOK(t, s, learner("", "\treturn ctrl.Result{}, nil"))
	env, err := os.ReadFile("/proc/" + strconv.Itoa(s.p.cmd.Process.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 0 {
		t.Fatalf("the child's environment is %q, want empty", env)
	}
	lim, err := os.ReadFile("/proc/" + strconv.Itoa(s.p.cmd.Process.Pid) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(s.p.cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Field 19 of stat is the nice value; the command name (field 2) has no spaces here.
	if f := strings.Fields(string(stat)); len(f) < 19 || f[18] != "10" {
		t.Errorf("the child's nice value is %v, want 10", f[18:19])
	}
	files := fmt.Sprintf("Max open files            %-20d %d", childMaxFDs, childMaxFDs)
	for _, want := range []string{"Max cpu time              30                   30", "Max file size             0                    0", files} {
		if !strings.Contains(string(lim), want) {
			t.Errorf("the child's limits lack %q:\n%s", want, lim)
		}
	}
	// When the Pod's memory runs out, the kernel takes a child first.
	adj, err := os.ReadFile("/proc/" + strconv.Itoa(s.p.cmd.Process.Pid) + "/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(adj)); got != "1000" {
		t.Errorf("the child's oom_score_adj is %s, want 1000 (oplab's is 0: the child is always the one killed)", got)
	}
}

// An idle child is stopped; the next reconcile starts a fresh one and the
// code still runs.
func TestIdleChildIsStoppedAndRestarted(t *testing.T) {
	s := testSandbox(t)
	s.IdleTimeout = 50 * time.Millisecond
	compileOK(t, s, learner("", "\treturn ctrl.Result{RequeueAfter: 5}, nil"))
	deadline := time.Now().Add(time.Minute)
	for s.Alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.Alive() {
		t.Fatal("the idle child still runs")
	}
	res, err := s.Reconcile(context.Background(), fakeClient(), req)
	if err != nil || res.RequeueAfter != 5 {
		t.Fatalf("after the idle stop: %v, %v", res, err)
	}
}

// An object too large for the pipe ends the child, not the parent.
func TestHugeObjectIsRefused(t *testing.T) {
	s := testSandbox(t)
	// Building and encoding 9 MiB in the interpreter is slow on a busy
	// machine: the test is about the size, not the deadline or the CPU.
	s.Deadline, s.CPUBudget = time.Minute, time.Minute
	compileOK(t, s, learner("\t\"strings\"\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\tcorev1 \"k8s.io/api/core/v1\"\n", `	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: "big"},
		Data: map[string]string{"x": strings.Repeat("x", 9<<20)}}
	return ctrl.Result{}, r.Create(ctx, &cm)`))
	c := fakeClient()
	_, err := s.Reconcile(context.Background(), c, req)
	if se, ok := AsSourceError(err); !ok || !strings.Contains(se.Message, "larger than 8 MiB") {
		t.Fatalf("got %v, want the object refused", err)
	}
	var list corev1.ConfigMapList
	if err := c.List(context.Background(), &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("ConfigMaps after the refusal: %d, %v", len(list.Items), err)
	}
}
