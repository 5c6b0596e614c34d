package controller

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	"github.com/oplab-dev/oplab/internal/polltest"
)

// kubectlGet runs the control plane's own kubectl as the admin and returns the
// table it prints for the namespace's Databases, one map per row keyed by the
// column headers.
func kubectlGet(t *testing.T, e *env) []map[string]string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := sharedCluster(t).WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sharedCluster(t).KubectlPath(), "--kubeconfig", kubeconfig, "-n", e.ns, "get", "databases").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get databases: %v\n%s", err, out)
	}
	// An empty cell prints as blanks, so the row is cut where each header
	// starts rather than split on spaces.
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	header := lines[0]
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	names := make([]string, len(starts))
	for k, at := range starts {
		end := len(header)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		names[k] = strings.TrimSpace(header[at:end])
	}
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for k, at := range starts {
			end := len(l)
			if k+1 < len(starts) && starts[k+1] < end {
				end = starts[k+1]
			}
			cell := ""
			if at < len(l) {
				cell = strings.TrimSpace(l[at:end])
			}
			row[names[k]] = cell
		}
		rows = append(rows, row)
	}
	return rows
}

// TestKubectlColumnsTellStaleFromReady plays the lesson's point with the
// real kubectl: a Database deleted while its controller is away keeps its old
// status, so READY alone would say True; the GENERATION, OBSERVED and
// DELETING columns show that status is stale and the object is going.
func TestKubectlColumnsTellStaleFromReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.startController(e.testOptions())
	e.mustCreate(newDB("columns", 1, ""))
	e.expectReady("columns")

	rows := kubectlGet(t, e)
	if len(rows) != 1 {
		t.Fatalf("kubectl listed %d Databases, want 1: %v", len(rows), rows)
	}
	want := map[string]string{"NAME": "columns", "READY": "True", "GENERATION": "1", "OBSERVED": "1", "DELETING": ""}
	for col, v := range want {
		if got := rows[0][col]; got != v {
			t.Errorf("converged: column %s = %q, want %q (row %v)", col, got, v, rows[0])
		}
	}

	// The controller goes away, then the Database is deleted: its finalizer
	// holds it, and nobody updates its status.
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "columns"}}); err != nil {
		t.Fatal(err)
	}
	polltest.Until(e.t, deadline, "the deletionTimestamp", func() (bool, error) {
		return e.getDB("columns").DeletionTimestamp != nil, nil
	})
	row := kubectlGet(t, e)[0]
	if row["READY"] != "True" {
		t.Fatalf("the stale status should still say Ready True (nothing rewrote it), got row %v", row)
	}
	if row["DELETING"] == "" {
		t.Errorf("a Terminating Database's DELETING column is %q, want its age: %v", row["DELETING"], row)
	}
	// A custom resource with finalizers gets a new generation when its
	// deletionTimestamp is set, so OBSERVED trails GENERATION: the status is
	// visibly stale.
	if row["GENERATION"] == row["OBSERVED"] {
		t.Errorf("GENERATION %s = OBSERVED %s on a Database deleted while the controller was away", row["GENERATION"], row["OBSERVED"])
	}

	// Back, the controller finishes the deletion through its finalizer.
	e.startController(e.testOptions())
	e.expectGone(&dbv1.Database{}, "columns")
}
