package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"marketd/cmd/internal/cmdline"
	"marketd/store"
)

// kekFileName is the key-encryption key's file in the embedded store's folder, when marketd
// makes one there.
const kekFileName = "marketd.kek"

// errNoKEK is a production start on PostgreSQL without MARKETD_KEK_FILE.
var errNoKEK = errors.New("MARKETD_KEK_FILE is not set: on PostgreSQL the service's secrets (its token signing keys, " +
	"the transparency log's key, the operator party's ledger key) are sealed under a key-encryption key kept outside the database. " +
	"Make one with `(umask 077; head -c 32 /dev/urandom | base64 > marketd.kek)`, keep it apart from the database and its backups, " +
	"and set MARKETD_KEK_FILE to its path (cmd/marketd/README.md, \"Keys sealed at rest\")")

// kekFolder is where marketd keeps a key-encryption key it makes itself when MARKETD_KEK_FILE
// is not set: the embedded store's folder, or ./data for a PostgreSQL store in dev mode; ""
// for sqlite://:memory: (a random key for the process alone), and errNoKEK for a production
// PostgreSQL store.
func kekFolder(c *config) (string, error) {
	db := c.store.DB
	if path, ok := strings.CutPrefix(db, "sqlite://"); ok {
		if path == "" || path == ":memory:" {
			return "", nil
		}
		return filepath.Dir(path), nil
	}
	if c.dev {
		return filepath.Dir(strings.TrimPrefix(store.DefaultConfig().DB, "sqlite://")), nil
	}
	msg := errNoKEK
	if _, err := os.Stat(filepath.Join("data", kekFileName)); err == nil {
		msg = fmt.Errorf("%w; there is a key file at %s, the one serve makes there in dev mode", errNoKEK, filepath.Join("data", kekFileName))
	}
	return "", msg
}

// loadKEK sets the store's key-encryption key: read from MARKETD_KEK_FILE when it is set;
// otherwise read from (or, on the first start, made in) kekFolder, said so in the log. It
// returns where the key came from, for errors.
func loadKEK(c *config, log *slog.Logger) (string, error) {
	if c.kekFile != "" {
		key, err := store.ReadKEKFile(c.kekFile)
		if err != nil {
			return "", fmt.Errorf("MARKETD_KEK_FILE: %w", err)
		}
		warnLoose(log, c.kekFile)
		c.store.KEK = key
		log.Debug("key-encryption key read", "file", c.kekFile, "kek", store.KEKID(key))
		return "MARKETD_KEK_FILE " + c.kekFile, nil
	}
	dir, err := kekFolder(c)
	if err != nil || dir == "" {
		return "", err
	}
	path := filepath.Join(dir, kekFileName)
	key, err := store.ReadKEKFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = store.NewKEKFile(path)
		if errors.Is(err, fs.ErrExist) { // another process on the same folder made it first
			time.Sleep(200 * time.Millisecond)
			key, err = store.ReadKEKFile(path)
		} else if err == nil {
			log.Warn("made a key-encryption key for the store's secrets, mode 0600: back it up apart from the database, "+
				"or keep it elsewhere and set MARKETD_KEK_FILE", "file", path, "kek", store.KEKID(key))
		}
	}
	if err != nil {
		return "", err
	}
	warnLoose(log, path)
	c.store.KEK = key
	return path + ", as MARKETD_KEK_FILE is unset", nil
}

// warnLoose says so in the log when others than its owner may read the key file. Its group
// may, when that is this process's own group: a Kubernetes Secret's file belongs to root,
// and marketd reads it through the pod's fsGroup.
func warnLoose(log *slog.Logger, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	ownGroup := ok && int(st.Gid) == os.Getgid()
	if perm&0o007 != 0 || perm&0o070 != 0 && !ownGroup {
		log.Warn("the key-encryption key's file is readable by others than its owner; chmod 600 it", "file", path, "mode", perm.String())
	}
}

// keysRotateKEK is "marketd keys rotate-kek": every secret of the store sealed again, in one
// transaction, under the key of --new-kek-file.
func keysRotateKEK(args []string) error {
	var newFile string
	c, extra, err := parseConfig("keys rotate-kek", args, func(fs *flag.FlagSet) {
		fs.StringVar(&newFile, "new-kek-file", "", "the file of the new key-encryption key: 32 random bytes as base64 on one line (required)")
	})
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("keys rotate-kek takes no arguments, got %q", extra)
	}
	if newFile == "" {
		return errors.New("--new-kek-file is required: make the new key with `(umask 077; head -c 32 /dev/urandom | base64 > new.kek)`")
	}
	key, err := store.ReadKEKFile(newFile)
	if err != nil {
		return fmt.Errorf("--new-kek-file: %w", err)
	}
	ctx := context.Background()
	log := newLogger(c.logLevel)
	s, err := migratedStore(ctx, c, log)
	if err != nil {
		return err
	}
	defer s.Close()
	previous := s.KEKID()
	if store.KEKID(key) == previous {
		return fmt.Errorf("--new-kek-file holds the key the store is sealed under already (%s)", previous)
	}
	n, err := s.RotateKEK(ctx, key)
	if err != nil {
		return err
	}
	log.Warn("the store's secrets are sealed under the new key-encryption key only: restart every instance with MARKETD_KEK_FILE naming it",
		"file", newFile, "kek", s.KEKID())
	return printResult(map[string]any{"resealed": n, "kek": s.KEKID(), "previousKek": previous})
}

// migratedStore opens the store for a keys command, which changes keys only on a store whose
// migrations are all applied (its secrets sealed).
func migratedStore(ctx context.Context, c *config, log *slog.Logger) (*store.Store, error) {
	s, err := openStore(ctx, c, log)
	if err != nil {
		return nil, err
	}
	pending, err := s.PendingMigrations(ctx)
	if err == nil && len(pending) > 0 {
		err = fmt.Errorf("the store has migrations to apply (%s): run marketd migrate up first", strings.Join(pending, ", "))
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// keysRotateJWT is "marketd keys rotate jwt": a new token signing key, which every instance
// signs with within a minute, while the key it replaces stays in the JWKS until the last token
// it signed has expired.
func keysRotateJWT(args []string) error {
	c, extra, err := parseConfig("keys rotate", args)
	if err != nil {
		return err
	}
	if len(extra) != 1 || extra[0] != "jwt" {
		return &cmdline.UsageError{Cmd: "marketd keys rotate", Err: fmt.Errorf("wants what to rotate, jwt (the token signing key), got %q", extra)}
	}
	ctx := context.Background()
	s, err := migratedStore(ctx, c, newLogger(c.logLevel))
	if err != nil {
		return err
	}
	defer s.Close()
	rot, err := s.RotateJWT(ctx)
	if err != nil {
		return err
	}
	return printResult(rot)
}
