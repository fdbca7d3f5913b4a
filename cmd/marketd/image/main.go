// Command image writes marketd's container image, offline, from the repository it runs in: an
// OCI image layout (and, with --docker-archive, a tarball `podman load` and `docker load` read)
// of an empty base and one layer holding the static binary, CA certificates, a non-root user
// and /data, the embedded store's volume. Two builds of one commit with one Go toolchain and one
// CA bundle give the same digest: every timestamp is the commit's (or SOURCE_DATE_EPOCH), the
// layer's entries are sorted, and their owners and modes are fixed.
//
//	go run ./cmd/marketd/image --out /tmp/marketd-oci --docker-archive /tmp/marketd.tar
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "", "write the OCI image layout to this folder (required; replaced if it exists)")
	archive := fs.String("docker-archive", "", "also write a docker-archive tarball (podman load / docker load) to this file")
	rootfs := fs.String("rootfs-tar", "", "also write the image's root filesystem, flattened, as a tar to this file (to run it without a container runtime)")
	tag := fs.String("tag", "", "the image's name in the layout and the archive (default localhost/marketd:VERSION)")
	arch := fs.String("arch", runtime.GOARCH, "the image's and binary's GOARCH")
	certs := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle copied into the image")
	binary := fs.String("binary", "", "use this linux binary of marketd instead of building one (its reproducibility is then the caller's)")
	source := fs.String("source", "", "the org.opencontainers.image.source label (default: git remote origin's URL, else the module path)")
	revision := fs.String("revision", "", "the org.opencontainers.image.revision label (default: git rev-parse HEAD)")
	version := fs.String("version", "", "the org.opencontainers.image.version label (default: git describe --tags --always --dirty)")
	epoch := fs.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "every timestamp in the image, Unix seconds (default: $SOURCE_DATE_EPOCH, else the commit's time)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("want --out DIR and no arguments")
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	o := options{Arch: *arch, CACerts: *certs, Binary: *binary, Source: *source, Revision: *revision, Version: *version, Tag: *tag}
	if o.Revision == "" {
		if o.Revision, err = git(root, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	if o.Version == "" {
		if o.Version, err = git(root, "describe", "--tags", "--always", "--dirty"); err != nil {
			return err
		}
	}
	if o.Source == "" {
		o.Source, _ = git(root, "config", "--get", "remote.origin.url")
		if o.Source == "" {
			o.Source = "marketd"
		}
	}
	if *epoch == "" {
		if *epoch, err = git(root, "log", "-1", "--format=%ct", o.Revision); err != nil {
			return err
		}
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil || secs < 0 {
		return fmt.Errorf("epoch %q: want Unix seconds", *epoch)
	}
	o.Created = time.Unix(secs, 0).UTC()
	if o.Binary == "" {
		tmp, err := os.MkdirTemp("", "marketd-image-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		o.Binary = filepath.Join(tmp, "marketd")
		if err := buildBinary(root, o.Arch, o.Binary); err != nil {
			return err
		}
	}
	d, err := write(o, *out, *archive, *rootfs)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", d.Digest, d.Tag, *out)
	return nil
}

// repoRoot is the folder of the go.mod of the module image is run in.
func repoRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the marketd module")
	}
	return filepath.Dir(mod), nil
}

// git runs git in dir and returns its trimmed output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}

// buildBinary builds ./cmd/marketd of the module at root into out: static (CGO_ENABLED=0, the
// SQLite driver being modernc.org/sqlite, pure Go), for linux/arch, with no path, build id or
// VCS stamp that differs from one checkout to another.
func buildBinary(root, arch, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out, "./cmd/marketd")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/marketd: %w", err)
	}
	return nil
}
