package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrBackupPostgres is Backup's and Restore's answer on PostgreSQL: its own tools (pg_dump, or
// a base backup with WAL archiving) copy it, with a consistency marketd cannot add to.
var ErrBackupPostgres = errors.New("the store is PostgreSQL: back it up with pg_dump (or a base backup with WAL archiving) and restore it with its own tools; marketd backup and restore copy the embedded SQLite store")

// BackupInfo is what Backup wrote, or what Restore brought back.
type BackupInfo struct {
	File    string `json:"file"`
	Store   string `json:"store,omitempty"` // Restore: the store's file it replaced or made
	Bytes   int64  `json:"bytes"`
	TookMs  int64  `json:"tookMs"`
	Updates int64  `json:"updates"` // the ledger's committed updates in the copy
	LogSize int64  `json:"logSize"` // the transparency log's entries in the copy: its checkpoints from this size on extend it
}

// Backup writes a consistent copy of the embedded SQLite store to file while the store serves
// (this process or another on the same file): SQLite's VACUUM INTO reads one snapshot, a read
// transaction that writers in WAL mode never wait for, so the copy holds every write committed
// before it began and none half. It refuses a file that exists, creates a missing folder 0700,
// and writes the copy 0600 (the store's own modes: it holds the service's keys), synced to disk.
// A failed copy leaves no file behind.
func (s *Store) Backup(ctx context.Context, file string) (BackupInfo, error) {
	start := time.Now()
	if s.dialect == Postgres {
		return BackupInfo{}, ErrBackupPostgres
	}
	if p := strings.TrimPrefix(s.cfg.DB, "sqlite://"); p == "" || p == ":memory:" {
		return BackupInfo{}, errors.New("the store is in memory: nothing outlives the process to back up")
	}
	if err := createPrivate(file); err != nil {
		return BackupInfo{}, err
	}
	info, err := func() (BackupInfo, error) {
		// A connection of its own: the reader pool's are query_only, which refuses VACUUM INTO.
		db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(s.cfg.DB, "sqlite://")+"?_pragma=busy_timeout(10000)")
		if err != nil {
			return BackupInfo{}, err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "VACUUM INTO ?", file); err != nil {
			return BackupInfo{}, fmt.Errorf("copying the store: %w", err)
		}
		if err := syncFile(file); err != nil {
			return BackupInfo{}, err
		}
		return inspectCopy(ctx, file, false)
	}()
	if err != nil {
		os.Remove(file)
		return BackupInfo{}, err
	}
	info.TookMs = time.Since(start).Milliseconds()
	return info, nil
}

// Restore makes the backup file the embedded store named by dsn (sqlite://PATH). It first checks
// that file opens as a marketd store and passes SQLite's integrity_check; it refuses a store
// another process has open (a server serving it), even with force, and one that holds anything
// (any table) unless force.
// The copy is written beside PATH (0600, the folder made 0700 if missing), synced, and renamed
// over it, the old store's -wal and -shm files removed first: a crash leaves the old store or
// the restored one, never a mix.
func Restore(ctx context.Context, dsn, file string, force bool) (BackupInfo, error) {
	start := time.Now()
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return BackupInfo{}, ErrBackupPostgres
	case !strings.HasPrefix(dsn, "sqlite://"):
		return BackupInfo{}, fmt.Errorf("store %q: want sqlite://PATH", dsn)
	}
	path := strings.TrimPrefix(dsn, "sqlite://")
	if path == "" || path == ":memory:" {
		return BackupInfo{}, errors.New("the store is in memory: there is no file to restore into")
	}
	if _, err := inspectCopy(ctx, file, true); err != nil {
		return BackupInfo{}, fmt.Errorf("%s is not a sound marketd backup: %w", file, err)
	}
	tables, err := storeTables(ctx, path)
	switch {
	case errors.Is(err, errStoreInUse):
		return BackupInfo{}, fmt.Errorf("the store %s is in use (a marketd serving it?): stop every process using it, then restore", path)
	case err != nil && !force:
		return BackupInfo{}, fmt.Errorf("the store %s: %w (restore --force replaces it)", path, err)
	case tables > 0 && !force:
		return BackupInfo{}, fmt.Errorf("the store %s is not empty (%d tables): stop every marketd serving it and restore with --force to replace it", path, tables)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return BackupInfo{}, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".restore-*") // 0600
	if err != nil {
		return BackupInfo{}, err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName) // gone once renamed
	src, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		return BackupInfo{}, err
	}
	_, err = src.ExecContext(ctx, "VACUUM INTO ?", tmpName)
	src.Close()
	if err != nil {
		return BackupInfo{}, fmt.Errorf("copying %s: %w", file, err)
	}
	if err := syncFile(tmpName); err != nil {
		return BackupInfo{}, err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return BackupInfo{}, err
		}
	}
	if err := os.Rename(tmpName, path); err != nil {
		return BackupInfo{}, err
	}
	if err := syncFile(dir); err != nil {
		return BackupInfo{}, err
	}
	info, err := inspectCopy(ctx, path, false)
	if err != nil {
		return BackupInfo{}, err
	}
	info.File, info.Store = file, path
	info.TookMs = time.Since(start).Milliseconds()
	return info, nil
}

// createPrivate creates file empty, mode 0600, refusing one that exists (VACUUM INTO writes
// into an empty file, keeping its mode); a missing folder is made 0700.
func createPrivate(file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists: a backup never overwrites a file; name a new one", file)
	}
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		f.Close()
		return err
	}
	return f.Close()
}

// syncFile flushes a file, or a folder's entries, to disk.
func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// inspectCopy opens a copy of the store read-only and tells its size, its updates and its log's
// size; full also runs SQLite's integrity_check, which must answer ok.
func inspectCopy(ctx context.Context, file string, full bool) (BackupInfo, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return BackupInfo{}, err
	}
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		return BackupInfo{}, err
	}
	defer db.Close()
	if full {
		rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
		if err != nil {
			return BackupInfo{}, err
		}
		var problems []string
		for rows.Next() {
			var p string
			if err := rows.Scan(&p); err != nil {
				rows.Close()
				return BackupInfo{}, err
			}
			problems = append(problems, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return BackupInfo{}, err
		}
		if len(problems) != 1 || problems[0] != "ok" {
			return BackupInfo{}, fmt.Errorf("integrity_check: %s", strings.Join(problems, "; "))
		}
	}
	info := BackupInfo{File: file, Bytes: fi.Size()}
	err = db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM updates), (SELECT COALESCE(MAX(log_index) + 1, 0) FROM log_entries)").
		Scan(&info.Updates, &info.LogSize)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("not a marketd store: %w", err)
	}
	return info, nil
}

// errStoreInUse is storeTables' answer for a store another connection has open.
var errStoreInUse = errors.New("the store is in use")

// storeTables counts the tables of the SQLite database at path (none when it has no file), and
// answers errStoreInUse while any other connection has it open, a server's among them: it reads
// in SQLite's exclusive locking mode, which a WAL database grants only to its one connection.
func storeTables(ctx context.Context, path string) (int, error) {
	if fi, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_pragma=locking_mode(EXCLUSIVE)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var n int
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table'").Scan(&n)
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY {
		return 0, errStoreInUse
	}
	return n, err
}
