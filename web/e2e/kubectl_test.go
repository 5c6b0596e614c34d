package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oplab-dev/oplab/internal/polltest"
	"github.com/oplab-dev/oplab/web/kubectl"
)

// kubectlIn runs one command line in the lab's terminal as the learner of
// c, with stdin as the editor's text, and returns the answer's status,
// kubectl's output and how it ended.
// A command past the session's bucket (429) is sent again after the wait
// its Retry-After names, as a learner would press Run again.
func kubectlIn(t testing.TB, e *testEnv, c *http.Client, line, stdin string) (int, string, kubectl.Result) {
	t.Helper()
	var resp *http.Response
	var body string
	for range 20 {
		resp, body = postAccept(t, c, e.http.URL+kubectl.Path, url.Values{"command": {line}, "stdin": {stdin}}, "")
		if resp.StatusCode != http.StatusTooManyRequests {
			break
		}
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		time.Sleep(time.Duration(max(secs, 1)) * time.Second)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, body, kubectl.Result{}
	}
	i := strings.LastIndex(body, kubectl.ResultMark)
	if i < 0 {
		t.Fatalf("%s: the answer has no end line:\n%s", line, body)
	}
	var res kubectl.Result
	if err := json.Unmarshal([]byte(body[i+1:]), &res); err != nil {
		t.Fatalf("%s: the end line: %v", line, err)
	}
	return resp.StatusCode, body[:i], res
}

const terminalDB = `apiVersion: db.oplab.dev/v1alpha1
kind: Database
metadata:
  name: term
spec:
  engine: postgres
  replicas: %d
`

// TestKubectlInThePageActsAsTheLearner runs, on the real cluster, the
// course's kubectl commands from the lab's terminal and checks kubectl's own
// answers: the learner's ServiceAccount, their Role, their namespace.
func TestKubectlInThePageActsAsTheLearner(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, ns := e.learner(t)
	run := func(line, stdin string, wantExit int, want ...string) string {
		t.Helper()
		code, out, res := kubectlIn(t, e, c, line, stdin)
		if code != http.StatusOK || res.Exit != wantExit {
			t.Errorf("%s: %d, exit %d (%s), want 200 and exit %d:\n%s", line, code, res.Exit, res.Note, wantExit, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s printed:\n%s\nwant it to say %q", line, out, w)
			}
		}
		return out
	}
	run("kubectl get databases", "", 0, "No resources found in "+ns+" namespace.")
	run("kubectl apply -f -", fmt.Sprintf(terminalDB, 1), 0, "database.db.oplab.dev/term created")
	run("kubectl wait --for=condition=Ready database/term --timeout=60s", "", 0, "database.db.oplab.dev/term condition met")
	run(`kubectl get database term -n $NS -o jsonpath={.spec.replicas}`, "", 0, "1")
	run(`kubectl patch database term --type=merge -p '{"spec":{"replicas":2}}'`, "", 0, "database.db.oplab.dev/term patched")
	// kubectl diff runs its diff: the same binary, fenced, in Go.
	run("kubectl diff -f -", fmt.Sprintf(terminalDB, 3), 1, "diff -u -N ", "-  replicas: 2", "+  replicas: 3")
	run("kubectl auth whoami", "", 0, "system:serviceaccount:"+ns+":learner")
	run("kubectl auth can-i patch databases", "", 0, "yes")
	run("kubectl auth can-i create pods", "", 1, "no")
	run("kubectl describe database term", "", 0, "Name:", "term", ns, "Conditions:")
	run("kubectl get events --field-selector involvedObject.name=term", "", 0, "Created")
	run("kubectl explain database.spec.replicas", "", 0, "Replicas is the number of database Pods.")
	// What the learner's Role does not allow is the API server's refusal,
	// in kubectl's words.
	run("kubectl get secrets -n kube-system", "", 1, `User "system:serviceaccount:`+ns+`:learner" cannot list resource "secrets"`)
	run("kubectl get --raw /api/v1/namespaces/kube-system/secrets", "", 1, "forbidden")
	_, other := e.learner(t)
	run("kubectl get databases -n "+other, "", 1, `cannot list resource "databases" in API group "db.oplab.dev" in the namespace "`+other+`"`)
	run("kubectl delete database term --wait=false", "", 0, `database.db.oplab.dev "term" deleted`)
}

// TestKubectlInThePageRefusesTheWaysOut tries, over HTTP as an attacker
// would, each boundary of the lab's terminal: another identity, a file or
// URL of the server's, a listener, a shell, two commands at once, another
// site's page, no session, too many commands. Each is refused, saying why.
func TestKubectlInThePageRefusesTheWaysOut(t *testing.T) {
	t.Parallel()
	e := needEnv(t)
	c, _ := e.learner(t)
	for line, why := range map[string]string{
		"kubectl --kubeconfig /root/.kube/config get secrets -A": "your lab's ServiceAccount",
		"kubectl get pods --token=eyJhbGciOi":                    "--token is not offered",
		"kubectl get pods --as=system:admin":                     "--as is not offered",
		"kubectl apply -f /etc/passwd":                           "reads no file of the server's",
		"kubectl apply -f https://example.com/evil.yaml":         "fetches no URL",
		"kubectl get pods -o jsonpath-file=/etc/shadow":          "reads a file of the server's",
		"kubectl proxy --port=8001":                              "opens no listener",
		"kubectl port-forward svc/term 5432":                     "opens no listener",
		"kubectl exec -it term-0 -- sh":                          "starts none",
		"kubectl cp term-0:/etc/passwd .":                        "reads and writes no file",
		"kubectl get pods | sh":                                  "no shell here",
		"kubectl foo":                                            "kubectl-foo",
	} {
		code, body, _ := kubectlIn(t, e, c, line, "")
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, why) {
			t.Errorf("%s: %d %q, want 422 saying %q", line, code, body, why)
		}
	}
	if code, body, _ := kubectlIn(t, e, c, "kubectl apply -f -", ""); code != http.StatusUnprocessableEntity || !strings.Contains(body, "which is empty") {
		t.Errorf("apply -f - with an empty editor: %d %q", code, body)
	}

	// One at a time: a watch holds the learner's slot until it ends.
	ctx, cancel := context.WithCancel(context.Background())
	var resp *http.Response
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.http.URL+kubectl.Path, strings.NewReader(url.Values{"command": {"kubectl get databases -w"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		var err error
		if resp, err = c.Do(req); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			break
		}
		resp.Body.Close()
		time.Sleep(2 * time.Second)
	}
	// The answer begins as the watch starts, before it prints anything.
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the watch: %d", resp.StatusCode)
	}
	if code, body, _ := kubectlIn(t, e, c, "kubectl get databases", ""); code != http.StatusConflict || !strings.Contains(body, "one command at a time") {
		t.Errorf("a second command while a watch runs: %d %q, want 409 saying one at a time", code, body)
	}
	cancel() // Stop, as the page's button does
	resp.Body.Close()
	polltest.Until(t, deadline, "the slot free again after Stop", func() (bool, error) {
		code, _, _ := kubectlIn(t, e, c, "kubectl get databases", "")
		return code == http.StatusOK, nil
	})

	// Not from another site's page, not without a session.
	cross, _ := http.NewRequest(http.MethodPost, e.http.URL+kubectl.Path, strings.NewReader("command=kubectl+get+pods"))
	cross.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	cross.Header.Set("Origin", "https://evil.example")
	cross.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := c.Do(cross); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST: %v %v, want 403", resp.StatusCode, err)
	}
	if resp, err := http.Post(e.http.URL+kubectl.Path, "application/x-www-form-urlencoded", strings.NewReader("command=kubectl+get+pods")); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("no session: %v %v, want 403", resp.StatusCode, err)
	}

	// Each command is a process: the session's bucket of them runs out.
	limited := false
	for range 30 {
		resp, body := postAccept(t, c, e.http.URL+kubectl.Path, url.Values{"command": {"kubectl version"}}, "")
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = strings.Contains(body, "kubectl commands") && resp.Header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Error("30 commands at once were never limited (429 naming kubectl commands)")
	}
}

// BenchmarkKubectlInThePage prints what one command of the lab's terminal
// costs, end to end over loopback on the real cluster: `kubectl get
// databases` (a child started, its fence raised, discovery, one list) and
// `kubectl apply -f -` of a Database, p50 and p99 of 20 each, and the CPU
// of the children (this process's children's rusage).
func BenchmarkKubectlInThePage(b *testing.B) {
	e := needEnv(b)
	for b.Loop() {
		c, _ := e.learner(b)
		for _, line := range []string{"kubectl get databases", "kubectl apply -f -"} {
			var took []time.Duration
			cpu0 := childrenCPU()
			for i := range 20 {
				stdin := ""
				if strings.Contains(line, "apply") {
					stdin = fmt.Sprintf(strings.Replace(terminalDB, "name: term", fmt.Sprintf("name: bench%d", i%3), 1), 1)
				}
				// The session's bucket holds 10, then one every 2 s: the
				// command is timed once it is let through.
				for {
					began := time.Now()
					resp, body := postAccept(b, c, e.http.URL+kubectl.Path, url.Values{"command": {line}, "stdin": {stdin}}, "")
					if resp.StatusCode == http.StatusTooManyRequests {
						time.Sleep(2 * time.Second)
						continue
					}
					if resp.StatusCode != http.StatusOK || !strings.HasSuffix(body, `{"exit":0}`) {
						b.Fatalf("%s: %d %s", line, resp.StatusCode, body)
					}
					took = append(took, time.Since(began))
					break
				}
			}
			slices.Sort(took)
			cpu := (childrenCPU() - cpu0) / 20
			b.Logf("%s: p50 %s, p99 %s, %s of CPU a command in its child, the largest child %d MiB", line, took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), cpu.Round(time.Millisecond), childrenMaxRSS()>>10)
		}
	}
}

// childrenMaxRSS is the largest resident set of this process's children,
// in KiB.
func childrenMaxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return ru.Maxrss
}

// childrenCPU is the CPU time of this process's waited-for children.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
