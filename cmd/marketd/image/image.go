package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed facts: where the binary and the CA bundle go, the user it runs as, the
// store's folder and the port it listens on.
const (
	binaryPath = "/usr/local/bin/marketd"
	certsPath  = "/etc/ssl/certs/ca-certificates.crt"
	dataDir    = "/data"
	uid        = 65532
	port       = "8080"
)

// options is what one image is built from.
type options struct {
	Arch     string    // GOARCH of the binary, the image's architecture
	CACerts  string    // the CA bundle to copy in
	Binary   string    // the linux binary of marketd
	Source   string    // org.opencontainers.image.source
	Revision string    // org.opencontainers.image.revision
	Version  string    // org.opencontainers.image.version
	Tag      string    // the image's name; default localhost/marketd:Version
	Created  time.Time // every timestamp in the image
}

// built is what write made: the image's manifest digest and its name.
type built struct {
	Digest v1.Hash
	Tag    string
}

// entry is one file or folder of the layer.
type entry struct {
	name string // relative, no leading slash; a folder's ends in /
	mode int64
	uid  int
	body []byte
}

// env is the image's environment: the store in /data, listening on every interface of the
// container, and the CA bundle where Go looks first.
var env = []string{
	"PATH=/usr/local/bin",
	"SSL_CERT_FILE=" + certsPath,
	"MARKETD_DB=sqlite://" + dataDir + "/marketd.db",
	"MARKETD_ADDR=0.0.0.0:" + port,
}

// layerEntries lists the layer's files and folders, sorted by name, each folder before what it
// holds.
func layerEntries(binary, certs []byte) []entry {
	u := fmt.Sprint(uid)
	es := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:" + u + ":\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + u + ":" + u + ":nonroot:" + dataDir + ":/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: certsPath[1:], mode: 0o644, body: certs},
		{name: dataDir[1:] + "/", mode: 0o700, uid: uid},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: binaryPath[1:], mode: 0o755, body: binary},
	}
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	return es
}

// layerTar writes the entries as an uncompressed tar whose every header is fixed: the given
// time, numeric owners without names, no access or change times.
func layerTar(es []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.name[len(e.name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// image builds the image from o: an empty base, one layer, the config.
func image(o options) (v1.Image, string, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, "", err
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, "", fmt.Errorf("CA certificates: %w", err)
	}
	tarBytes, err := layerTar(layerEntries(bin, certs), o.Created)
	if err != nil {
		return nil, "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, "", err
	}
	created := v1.Time{Time: o.Created}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "go run ./cmd/marketd/image (marketd " + o.Version + ")",
			Comment:   "the static binary, CA certificates, the nonroot user, " + dataDir,
		},
	})
	if err != nil {
		return nil, "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, "", err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.Arch, "linux"
	cf.Created = created
	labels := map[string]string{
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.created":  o.Created.Format(time.RFC3339),
		"org.opencontainers.image.title":    "marketd",
	}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint:   []string{binaryPath, "serve"},
		Env:          env,
		WorkingDir:   dataDir,
		ExposedPorts: map[string]struct{}{port + "/tcp": {}},
		Volumes:      map[string]struct{}{dataDir: {}},
		Labels:       labels,
		StopSignal:   "SIGTERM",
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, "", err
	}
	tag := o.Tag
	if tag == "" {
		tag = "localhost/marketd:" + o.Version
	}
	return img, tag, nil
}

// write builds the image and writes it as an OCI layout at dir (replacing what is there); when
// archive is not empty, as a docker-archive tarball too; when rootfs is not empty, its flattened
// root filesystem as a tar.
func write(o options, dir, archive, rootfs string) (built, error) {
	img, tag, err := image(o)
	if err != nil {
		return built{}, err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return built{}, fmt.Errorf("tag %q: %w", tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		return built{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return built{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return built{}, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": path.Base(ref.RepositoryStr()) + ":" + ref.TagStr(),
	})); err != nil {
		return built{}, err
	}
	if archive != "" {
		if err := tarball.WriteToFile(archive, ref, img); err != nil {
			return built{}, err
		}
	}
	if rootfs != "" {
		if err := writeRootfs(img, rootfs); err != nil {
			return built{}, err
		}
	}
	return built{Digest: d, Tag: ref.String()}, nil
}

// writeRootfs writes img's flattened root filesystem as a tar to file.
func writeRootfs(img v1.Image, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
