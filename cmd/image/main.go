// Command image builds oplab's container image without a Docker daemon: a
// static oplab binary in one layer on no base image at all, written as a
// docker-save tarball that `docker load`, `crane push` and
// `kind load image-archive` accept. `make image` runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	os.Exit(runMain())
}

func runMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if err := run(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		return 1
	}
	return 0
}

// options is everything the flags decide.
type options struct {
	out    string // the tarball to write
	tag    string // the image's name in the tarball
	pkg    string // the Go package to build
	binary string // a binary built already, instead of building pkg
	arch   string // GOARCH of the binary and the image
}

func parseFlags(args []string, errOut io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&o.out, "out", filepath.Join("dist", "oplab-image.tar"), "the image tarball to write (docker-save format)")
	fs.StringVar(&o.tag, "tag", "oplab:dev", "the image reference recorded in the tarball")
	fs.StringVar(&o.pkg, "pkg", "./cmd/oplab", "the Go package of the binary")
	fs.StringVar(&o.binary, "binary", "", "use this binary instead of building -pkg (it must be static)")
	fs.StringVar(&o.arch, "arch", "amd64", "GOARCH of the binary and the image")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q (image takes flags only; see --help)", fs.Arg(0))
		fmt.Fprintln(errOut, err)
		return o, err
	}
	if o.out == "" || o.tag == "" {
		err := errors.New("-out and -tag must not be empty")
		fmt.Fprintln(errOut, err)
		return o, err
	}
	return o, nil
}

func run(ctx context.Context, o options, out io.Writer) error {
	bin := o.binary
	if bin == "" {
		dir, err := os.MkdirTemp("", "oplab-image-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "oplab")
		if err := buildBinary(ctx, o.pkg, o.arch, bin); err != nil {
			return err
		}
	}
	if err := checkStatic(bin); err != nil {
		return err
	}
	img, err := newImage(bin, o.arch)
	if err != nil {
		return err
	}
	if err := writeTarball(img, o.tag, o.out); err != nil {
		return err
	}
	fmt.Fprintf(out, "Wrote image %s to %s\n", o.tag, o.out)
	return nil
}
