package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/cluster"
)

// captureStdout runs f with os.Stdout sent to a buffer, since run prints
// its progress there.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	ferr := f()
	os.Stdout = old
	w.Close()
	return string(<-done), ferr
}

func TestCompleteAssetsFolderIsUsedAsIs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range append(append([]string{}, cluster.Binaries...), cluster.KwokStagesFile) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // nothing may be built there
	out, err := captureStdout(t, func() error { return run(context.Background(), nil) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "as it is") || !strings.Contains(out, dir) {
		t.Errorf("output %q does not say the folder is used as it is", out)
	}
}

func TestAMissingModuleIsNamed(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	out, err := captureStdout(t, func() error {
		return run(context.Background(), []string{"-module", filepath.Join(t.TempDir(), "no-such-module")})
	})
	if err == nil {
		t.Fatalf("provisioning from a missing module succeeded; output:\n%s", out)
	}
	// The module is not there: the error names it and says what to do.
	if !errors.Is(err, cluster.ErrNoControlPlaneModule) || !strings.Contains(err.Error(), "no-such-module") {
		t.Errorf("error %q does not name the missing module", err)
	}
	// Nothing half-built may be left where a later run would take it as provisioned.
	dir, _ := cluster.DefaultAssetsDir()
	if missing := cluster.MissingBinaries(dir); len(missing) != len(cluster.Binaries)+1 {
		t.Errorf("after a failed build, %s holds %v", dir, missing)
	}
	entries, _ := os.ReadDir(dir)
	var names bytes.Buffer
	for _, e := range entries {
		names.WriteString(e.Name() + " ")
	}
	if names.Len() != 0 {
		t.Errorf("failed build left files behind: %s", names.String())
	}
}
