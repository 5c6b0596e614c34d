package main

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImageRunsOplab builds the image exactly as `make image` does, reads
// the tarball back with go-containerregistry, and runs the binary found in
// its layer.
func TestImageRunsOplab(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oplab statically")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "dist", "oplab-image.tar")
	var log strings.Builder
	o := options{out: out, tag: "oplab:dev", pkg: "../oplab", arch: "amd64"}
	if err := run(context.Background(), o, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), out) {
		t.Errorf("run printed %q, want the tarball's path", log.String())
	}

	// The tarball is docker-save format: a manifest.json naming the tag.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil {
		t.Fatalf("reading manifest.json: %v", err)
	}
	if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{"oplab:dev"}) {
		t.Errorf("manifest.json = %+v, want one image tagged oplab:dev", m)
	}
	tag, _ := name.NewTag("oplab:dev")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("reading the image back: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/oplab", "--addr=0.0.0.0:8080"}) {
		t.Errorf("entrypoint = %q", c.Entrypoint)
	}
	if c.User != "65532:65532" {
		t.Errorf("user = %q, want 65532:65532 (non-root)", c.User)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports = %v, want only 8080/tcp", c.ExposedPorts)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform = %s/%s", cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want exactly one (no base image)", len(layers), err)
	}

	// Extract the filesystem and run the binary from it.
	files := extract(t, img, dir)
	bin, ok := files["oplab"]
	if !ok {
		t.Fatalf("the image has no /oplab; files: %v", keys(files))
	}
	if bin.Mode&0o111 == 0 {
		t.Errorf("/oplab has mode %o, not executable", bin.Mode)
	}
	if err := checkStatic(bin.path); err != nil {
		t.Error(err)
	}
	help, err := exec.Command(bin.path, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("/oplab --help from the image: %v\n%s", err, help)
	}
	for _, want := range []string{"operator lab", "-addr", "-kubeconfig", "-install-crds"} {
		if !strings.Contains(string(help), want) {
			t.Errorf("/oplab --help lacks %q:\n%s", want, help)
		}
	}
	if tmp, ok := files["tmp"]; !ok || tmp.Typeflag != tar.TypeDir || tmp.Mode&0o1777 != 0o1777 {
		t.Errorf("/tmp = %+v, want a world-writable sticky directory", tmp.Header)
	}
	passwd, err := os.ReadFile(files["etc/passwd"].path)
	if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q, %v; want the nonroot user 65532", passwd, err)
	}

	// The same binary gives the same image: nothing in it depends on when
	// it was built.
	img2, err := newImage(bin.path, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.tar")
	if err := writeTarball(img2, "oplab:dev", again); err != nil {
		t.Fatal(err)
	}
	img3, err := tarball.ImageFromPath(again, &tag)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d3, _ := img3.Digest()
	if d1 != d3 {
		t.Errorf("rebuilding from the same binary changed the digest: %s then %s", d1, d3)
	}
}

// extracted is one file of an image's filesystem, written under a temp dir.
type extracted struct {
	tar.Header
	path string
}

func extract(t *testing.T, img v1.Image, dir string) map[string]extracted {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	root := filepath.Join(dir, "rootfs")
	files := map[string]extracted{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the image's filesystem: %v", err)
		}
		p := filepath.Join(root, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeReg {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, os.FileMode(hdr.Mode).Perm())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
		files[strings.Trim(hdr.Name, "/")] = extracted{Header: *hdr, path: p}
	}
	return files
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestRunRefusesADynamicBinary(t *testing.T) {
	// /bin/sh is dynamically linked on every Debian; a static one would
	// make this test meaningless, so say so rather than pass.
	if err := checkStatic("/bin/sh"); err == nil {
		t.Skip("/bin/sh is static on this machine")
	}
	out := filepath.Join(t.TempDir(), "img.tar")
	err := run(context.Background(), options{out: out, tag: "oplab:dev", binary: "/bin/sh", arch: "amd64"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("run with a dynamic binary = %v, want an error saying to build with CGO_ENABLED=0", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused build left %s behind", out)
	}
}

func TestParseFlagsRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{{"extra"}, {"-out", ""}, {"-tag", ""}} {
		var errOut strings.Builder
		if _, err := parseFlags(args, &errOut); err == nil {
			t.Errorf("parseFlags(%q) succeeded", args)
		} else if errOut.Len() == 0 {
			t.Errorf("parseFlags(%q) printed nothing", args)
		}
	}
	if err := writeTarball(empty.Image, "not a tag!", filepath.Join(t.TempDir(), "x.tar")); err == nil || !strings.Contains(err.Error(), "-tag") {
		t.Errorf("an invalid tag gave %v, want an error naming -tag", err)
	}
}
