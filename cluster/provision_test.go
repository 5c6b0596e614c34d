package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// provisionModule is a folder that passes for the control-plane module.
func provisionModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestProvisionReportsEachFileAndMakesOnlyTheMissing: two files already
// there are left alone; each missing one is reported as begun, then done,
// in order, and lands under its own name.
func TestProvisionReportsEachFileAndMakesOnlyTheMissing(t *testing.T) {
	dir := t.TempDir()
	for _, have := range []string{"etcd", "kubectl"} {
		if err := os.WriteFile(filepath.Join(dir, have), []byte("old"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var made []string
	var reports []BuildProgress
	err := Provision(context.Background(), ProvisionOptions{
		Dir: dir, Module: provisionModule(t),
		Make: func(_ context.Context, _, name, dest string) error {
			if !strings.HasPrefix(filepath.Base(dest), ".") {
				t.Errorf("%s made straight into %s; want a temporary name first", name, dest)
			}
			made = append(made, name)
			return os.WriteFile(dest, []byte("new"), 0o755)
		},
		Report: func(p BuildProgress) { reports = append(reports, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := MissingBinaries(t.TempDir())
	want = slices.DeleteFunc(want, func(n string) bool { return n == "etcd" || n == "kubectl" })
	if !slices.Equal(made, want) {
		t.Errorf("made %v, want the missing %v", made, want)
	}
	if m := MissingBinaries(dir); len(m) != 0 {
		t.Errorf("after provisioning, still missing %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "etcd")); string(b) != "old" {
		t.Errorf("etcd was there and was made again")
	}
	// One report as each file begins, and one at the end.
	if len(reports) != len(want)+1 {
		t.Fatalf("%d reports, want %d: %+v", len(reports), len(want)+1, reports)
	}
	for i, p := range reports[:len(want)] {
		if p.Built != i || p.Building() != want[i] || p.Done || len(p.Names) != len(want) {
			t.Errorf("report %d = built %d, building %q, done %v; want built %d, building %q", i, p.Built, p.Building(), p.Done, i, want[i])
		}
	}
	last := reports[len(reports)-1]
	if !last.Done || last.Err != nil || last.Built != len(want) || len(last.Took) != len(want) || last.Building() != "" {
		t.Errorf("last report %+v; want done, all %d built with their times", last, len(want))
	}
}

// TestProvisionFailureNamesTheFileAndLeavesNothingHalfMade: the error
// names the file and its cause; the temporary file is gone, so a later
// run does not take it as provisioned; the last report says so too.
func TestProvisionFailureNamesTheFileAndLeavesNothingHalfMade(t *testing.T) {
	dir := t.TempDir()
	var last BuildProgress
	err := Provision(context.Background(), ProvisionOptions{
		Dir: dir, Module: provisionModule(t),
		Make: func(_ context.Context, _, name, dest string) error {
			if name == "kube-apiserver" {
				_ = os.WriteFile(dest, []byte("half"), 0o755)
				return errors.New("go build: out of memory")
			}
			return os.WriteFile(dest, []byte("x"), 0o755)
		},
		Report: func(p BuildProgress) { last = p },
	})
	if err == nil || !strings.HasPrefix(err.Error(), "kube-apiserver: ") || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("error %v; want it to name kube-apiserver and the cause", err)
	}
	if !last.Done || last.Err == nil || last.Building() != "" || last.Names[last.Built] != "kube-apiserver" {
		t.Errorf("last report %+v; want done with the error, at kube-apiserver", last)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == "kube-apiserver" || strings.HasSuffix(e.Name(), ".partial") {
			t.Errorf("a failed build left %s behind", e.Name())
		}
	}
}

// TestProvisionWithoutTheModuleSaysWhereToRunIt: outside the repository
// there is nothing to build from; the error says so, naming the folder.
func TestProvisionWithoutTheModuleSaysWhereToRunIt(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "cluster", "controlplane")
	err := Provision(context.Background(), ProvisionOptions{Dir: t.TempDir(), Module: missing,
		Make: func(context.Context, string, string, string) error {
			t.Error("made a file without a module")
			return nil
		}})
	if !errors.Is(err, ErrNoControlPlaneModule) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("error %v; want ErrNoControlPlaneModule naming %s and the way out", err, missing)
	}
}
