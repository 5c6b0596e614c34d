package main

import (
	"archive/tar"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image's contract, which the manifests in controller/config/manager
// rely on: the binary's path, the user it runs as and the port it serves.
const (
	binaryPath = "/oplab"
	// uid and gid 65532 is the "nonroot" user of distroless images: a
	// number no host account is likely to have.
	uid      = 65532
	user     = "65532:65532"
	port     = "8080/tcp"
	listenOn = "--addr=0.0.0.0:8080"
)

// Entrypoint is what the image runs. --addr is part of it because oplab
// listens on loopback by default, which no Service could reach; Go's flag
// package lets a later --addr in the Pod's args override it.
var entrypoint = []string{binaryPath, listenOn}

// buildBinary builds pkg as a static Linux binary at out. CGO_ENABLED=0 is
// what makes it static: the image has no libc for it to load. -trimpath
// keeps the build machine's paths out of it, and -s -w drop the symbol
// tables nobody debugs a Pod with (a third of the size).
//
// The sandbox's type data, which the binary embeds and no commit holds, is
// written first, for the image's platform (cmd/sandboxtypes).
func buildBinary(ctx context.Context, pkg, arch, out string) error {
	gen := exec.CommandContext(ctx, "go", "run", "github.com/oplab-dev/oplab/cmd/sandboxtypes", "-goos", "linux", "-goarch", arch)
	gen.Stdout, gen.Stderr = os.Stderr, os.Stderr
	if err := gen.Run(); err != nil {
		return fmt.Errorf("writing the sandbox's type data: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	return nil
}

// checkStatic refuses a dynamically linked binary, which would fail in the
// image with a "no such file or directory" that names neither the binary
// nor the missing loader.
func checkStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("reading %s as an ELF binary: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it has an ELF interpreter); build it with CGO_ENABLED=0", bin)
		}
	}
	return nil
}

// newImage builds the image from nothing: one layer with the binary, the
// passwd and group entries that name its user, and a /tmp. The manifests
// mount an emptyDir over /tmp, since the root filesystem is read-only
// there; the directory in the layer serves a plain `docker run`.
func newImage(bin, arch string) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(bin) })
	if err != nil {
		return nil, fmt.Errorf("building the layer: %w", err)
	}
	cfg := &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint:   entrypoint,
			User:         user,
			WorkingDir:   "/",
			ExposedPorts: map[string]struct{}{port: {}},
			// HOME is where Go's os.UserCacheDir looks; /tmp is the one
			// writable folder.
			Env: []string{"HOME=/tmp", "PATH=/"},
		},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting the image config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{CreatedBy: "oplab cmd/image: " + binaryPath + ", /etc/passwd, /etc/group, /tmp"},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	return img, nil
}

// layerFile is one entry of the layer.
type layerFile struct {
	hdr  tar.Header
	body []byte // for small files; the binary is streamed from disk
}

// layerTar streams the layer's tar: go-containerregistry builds layers from
// any tar stream, but its ready-made file maps (crane.Layer) write every
// file with mode 0, and the binary must be executable. Times are the Unix
// epoch so that the same binary always gives the same image digest.
func layerTar(bin string) (io.ReadCloser, error) {
	f, err := os.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("opening the binary: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	epoch := time.Unix(0, 0)
	small := []layerFile{
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644},
			body: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/tmp:/sbin/nologin\n", uid, uid)},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "etc/group", Mode: 0o644},
			body: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", uid)},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}},
	}
	pr, pw := io.Pipe()
	go func() {
		defer f.Close()
		tw := tar.NewWriter(pw)
		for _, lf := range small {
			lf.hdr.ModTime, lf.hdr.Format = epoch, tar.FormatPAX
			lf.hdr.Size = int64(len(lf.body))
			if err := tw.WriteHeader(&lf.hdr); err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := tw.Write(lf.body); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: filepath.Base(binaryPath), Mode: 0o755, Size: st.Size(), ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			pw.CloseWithError(err)
			return
		}
		if _, err := io.Copy(tw, f); err != nil {
			pw.CloseWithError(fmt.Errorf("copying the binary into the layer: %w", err))
			return
		}
		pw.CloseWithError(tw.Close())
	}()
	return pr, nil
}

// writeTarball writes img as a docker-save tarball under tag, through a
// temporary file so that a failed build never leaves a truncated tarball
// where `kind load` would find it.
func writeTarball(img v1.Image, tag, out string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("invalid -tag %q: %w", tag, err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("creating the folder of -out %s: %w", out, err)
	}
	tmp := out + ".partial"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the image tarball: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the image tarball: %w", err)
	}
	return nil
}
