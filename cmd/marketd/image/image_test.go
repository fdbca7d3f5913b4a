package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestImage_TwoBuildsOneDigest builds the image of the checked-out commit twice, each time
// building marketd anew, into two folders: the index and manifest digests must be equal. Then it
// reads the image back: its config (user, entrypoint, volume, environment, labels, times) and
// its one layer (sorted entries at the fixed time, the static binary, the CA bundle, the user,
// /data owned by it, 0700).
func TestImage_TwoBuildsOneDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds marketd twice")
	}
	const certs = "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(certs); err != nil {
		t.Skipf("no CA bundle here: %v", err)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	const epoch = 1764000000
	var digests [2]v1.Hash
	var dirs [2]string
	for i := range dirs {
		dirs[i] = filepath.Join(t.TempDir(), "oci")
		if err := run([]string{"--out", dirs[i], "--epoch", strconv.Itoa(epoch), "--version", "test"}); err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
		idx, err := layout.ImageIndexFromPath(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 {
			t.Fatalf("build %d: %d manifests in index.json, want 1", i+1, len(m.Manifests))
		}
		digests[i] = m.Manifests[0].Digest
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds of one commit: digests %s and %s", digests[0], digests[1])
	}
	a, _ := os.ReadFile(filepath.Join(dirs[0], "index.json"))
	b, _ := os.ReadFile(filepath.Join(dirs[1], "index.json"))
	if !bytes.Equal(a, b) {
		t.Fatalf("index.json differs:\n%s\n%s", a, b)
	}
	t.Logf("both builds: %s", digests[0])

	p, err := layout.FromPath(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	img, err := p.Image(digests[0])
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/marketd", "serve"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/usr/local/bin/marketd serve] and no cmd", c.Entrypoint, c.Cmd)
	}
	if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("volumes %v, want /data", c.Volumes)
	}
	for _, want := range []string{"MARKETD_DB=sqlite:///data/marketd.db", "MARKETD_ADDR=0.0.0.0:8080", "SSL_CERT_FILE=" + certs} {
		if !slices.Contains(c.Env, want) {
			t.Errorf("env %q lacks %s", c.Env, want)
		}
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.revision": head,
		"org.opencontainers.image.version":  "test",
		"org.opencontainers.image.created":  time.Unix(epoch, 0).UTC().Format(time.RFC3339),
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if c.Labels["org.opencontainers.image.source"] == "" {
		t.Errorf("no org.opencontainers.image.source label: %v", c.Labels)
	}
	if !cf.Created.Time.Equal(time.Unix(epoch, 0)) || cf.OS != "linux" {
		t.Errorf("created %v os %q, want the epoch and linux", cf.Created.Time, cf.OS)
	}
	for _, h := range cf.History {
		if !h.Created.Time.Equal(time.Unix(epoch, 0)) {
			t.Errorf("history entry %q created %v, want the epoch", h.CreatedBy, h.Created.Time)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 (an empty base and ours)", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	bodies := map[string][]byte{}
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		files[h.Name], bodies[h.Name] = h, body
		if !h.ModTime.Equal(time.Unix(epoch, 0)) || h.Uname != "" || h.Gname != "" || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			t.Errorf("%s: mtime %v uname %q gname %q atime %v ctime %v; want the epoch only", h.Name, h.ModTime, h.Uname, h.Gname, h.AccessTime, h.ChangeTime)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("layer entries not sorted: %q", names)
	}
	bin := files["usr/local/bin/marketd"]
	if bin == nil || bin.Mode != 0o755 || bin.Uid != 0 {
		t.Fatalf("usr/local/bin/marketd: %+v, want root's, 0755", bin)
	}
	f, err := elf.NewFile(bytes.NewReader(bodies["usr/local/bin/marketd"]))
	if err != nil {
		t.Fatalf("usr/local/bin/marketd is not an ELF binary: %v", err)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("usr/local/bin/marketd is dynamically linked (%v)", prog.Type)
		}
	}
	want, _ := os.ReadFile(certs)
	if h := files[strings.TrimPrefix(certs, "/")]; h == nil || h.Mode != 0o644 || !bytes.Equal(bodies[h.Name], want) {
		t.Errorf("%s: missing, not 0644 or not the build machine's bundle", certs)
	}
	if d := files["data/"]; d == nil || d.Typeflag != tar.TypeDir || d.Uid != 65532 || d.Gid != 65532 || d.Mode != 0o700 {
		t.Errorf("data/: %+v, want a folder of 65532:65532, 0700", d)
	}
	if !strings.Contains(string(bodies["etc/passwd"]), "nonroot:x:65532:65532:") || !strings.Contains(string(bodies["etc/group"]), "nonroot:x:65532:") {
		t.Errorf("etc/passwd %q, etc/group %q: want the nonroot user and group, 65532", bodies["etc/passwd"], bodies["etc/group"])
	}
}
