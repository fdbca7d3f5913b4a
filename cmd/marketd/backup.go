package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"marketd/store"
)

// backupCmd is marketd backup FILE: a consistent copy of the embedded store, taken while a
// server may be serving it (store.Store.Backup). It does not migrate: the copy is the store as
// the running server keeps it.
func backupCmd(args []string) error {
	c, extra, err := parseConfig("backup", args)
	if err != nil {
		return err
	}
	if len(extra) != 1 || extra[0] == "" {
		return errors.New("usage: marketd backup FILE")
	}
	if err := embeddedFile(c.store.DB); err != nil {
		return err
	}
	ctx := context.Background()
	s, err := openStore(ctx, c, newLogger("warn"))
	if err != nil {
		return err
	}
	defer s.Close()
	info, err := s.Backup(ctx, extra[0])
	if err != nil {
		return err
	}
	return printResult(info)
}

// restoreCmd is marketd restore [--force] FILE: the backup FILE becomes the embedded store,
// once it has passed SQLite's integrity_check (store.Restore). No server may be serving the
// store meanwhile.
func restoreCmd(args []string) error {
	var force bool
	c, extra, err := parseConfig("restore", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&force, "force", false, "replace a store that is not empty (stop every marketd serving it first)")
	})
	if err != nil {
		return err
	}
	if len(extra) != 1 || extra[0] == "" {
		return errors.New("usage: marketd restore [--force] FILE")
	}
	if strings.HasPrefix(c.store.DB, "postgres") {
		return errors.New(store.ErrBackupPostgres.Error() + " (cmd/marketd/README.md, Backups)")
	}
	info, err := store.Restore(context.Background(), c.store.DB, extra[0], force)
	if err != nil {
		return err
	}
	return printResult(info)
}

// embeddedFile refuses a store backup cannot copy before anything connects to it: PostgreSQL,
// an in-memory store, and a file that is not there (opening it would make an empty store).
func embeddedFile(dsn string) error {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return errors.New(store.ErrBackupPostgres.Error() + " (cmd/marketd/README.md, Backups)")
	case !strings.HasPrefix(dsn, "sqlite://"):
		return fmt.Errorf("store %q: want sqlite://PATH", dsn)
	}
	path := strings.TrimPrefix(dsn, "sqlite://")
	if path == "" || path == ":memory:" {
		return errors.New("the store is in memory: nothing outlives the process to back up")
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no store to back up at %s: %w", path, err)
	}
	return nil
}
