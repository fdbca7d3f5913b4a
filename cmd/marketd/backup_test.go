package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"marketd/store"
	"marketd/store/translog"
)

// A backup of the embedded store taken by `marketd backup` while a `marketd serve` process
// serves it and traders and minters keep writing through the REST API: the copy is 0600, a
// second backup to the same file is refused, a restore over the store while the server runs is
// refused even with --force, and once the server is killed and `marketd restore --force` has
// brought the copy back over its store (refused without --force) and a server runs on it, every
// write acknowledged before the backup began is there, every instrument is conserved
// (nothing spent twice), each NFT has one live contract, every mint of the drop applied once,
// and its transparency log holds one entry per update, signed by the same key, and extends
// the checkpoint the server signed before the backup (a consistency proof read through the
// restored server's tiles).
func TestBackup_UnderWritesKeepsEveryAcknowledgedWriteAndRestoresASoundLedger(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "data", "m.db")
	in := startInstance(t, "MARKETD_DB="+dsn, "MARKETD_RATE_READ=0")
	c := newClient(t)
	traders, minters := onboardTraders(c, in.url, 4), onboardMinters(c, in.url, 8)
	col := createCrashCollection(t, dsn, traders[0].ID)
	drop := createDrop(t, dsn, traders[0].ID)
	pool := createCrashPool(t, dsn)
	load := startMixedWrites(c, in.url, crashMarket{col, drop, pool}, traders, minters, mrand.Uint64())
	defer load.stop()
	waitFor(t, "50 acknowledged writes", func() bool { return load.count() >= 50 })

	verifier, before := signedCheckpoint(t, in.url, nil)
	acked := load.acknowledged()
	file := filepath.Join(dir, "backups", "b.db")
	out := runMarketd(t, dsn, "backup", file)
	during := load.count() - len(acked)
	var info store.BackupInfo
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("marketd backup printed %q: %v", out, err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.File != file || info.Bytes != fi.Size() || info.LogSize < before.N || info.Updates != info.LogSize {
		t.Errorf("marketd backup printed %s; the file has %d bytes, the checkpoint before it %d entries", out, fi.Size(), before.N)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the backup's mode is %s, want 0600", fi.Mode().Perm())
	}
	time.Sleep(300 * time.Millisecond) // writes go on after the backup too
	all := load.stop()
	t.Logf("%d writes acknowledged before the backup, %d while it ran (%d ms), %d in all; the copy holds %d updates",
		len(acked), during, info.TookMs, len(all), info.Updates)
	if len(all) <= len(acked) {
		t.Errorf("no write was acknowledged after the backup began: the writers stopped")
	}

	// A second backup to the same file is refused and leaves it as it was.
	copied, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"MARKETD_DB=" + dsn}
	if stdout, errOut, code := runBinary(t, env, "backup", file); code != 1 || stdout != "" || !strings.Contains(errOut, "exists") {
		t.Errorf("a backup to an existing file: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	if now, _ := os.ReadFile(file); !bytes.Equal(now, copied) {
		t.Error("a refused backup changed the file it was refused")
	}
	// Restoring over the store a server is serving is refused, even with --force.
	for _, args := range [][]string{{"restore", file}, {"restore", "--force", file}} {
		if stdout, errOut, code := runBinary(t, env, args...); code != 1 || stdout != "" || !strings.Contains(errOut, "in use") {
			t.Errorf("marketd %s over the serving store: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, errOut)
		}
	}
	in.cmd.Process.Kill() // the server dies, its -wal and -shm files left behind
	<-in.done
	if stdout, errOut, code := runBinary(t, env, "restore", file); code != 1 || stdout != "" || !strings.Contains(errOut, "not empty") || !strings.Contains(errOut, "--force") {
		t.Errorf("a restore over a store without --force: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	out = runMarketd(t, dsn, "restore", "--force", file)
	var back store.BackupInfo
	if err := json.Unmarshal(out, &back); err != nil || back.Updates != info.Updates || back.LogSize != info.LogSize {
		t.Fatalf("marketd restore printed %s (%v); the backup %+v", out, err, info)
	}
	restored := filepath.Join(dir, "data", "m.db")
	if fi, err := os.Stat(restored); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the restored store: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}

	again := startInstance(t, "MARKETD_DB="+dsn, "MARKETD_RATE_READ=0")
	db, err := sql.Open("sqlite", "file:"+restored+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkAfterCrash(t, db, acked, len(traders), len(minters))
	checkDrop(t, db, drop)
	checkLogAfterCrash(t, db, true, again.url)
	_, after := signedCheckpoint(t, again.url, verifier) // the copy's log key signs it
	if after.N < info.LogSize {
		t.Fatalf("the restored log has %d entries, the backup %d", after.N, info.LogSize)
	}
	if err := translog.CheckConsistency(before, after, func(tile tlog.Tile) ([]byte, error) {
		return logGet(t, again.url, translog.TilePath(tile)), nil
	}); err != nil {
		t.Fatalf("the restored log does not extend the checkpoint taken before the backup: %v", err)
	}
	// The restored store serves: a write through it is acknowledged.
	if _, ok := c.write(again.url, traders[1], "/api/nft/mint/atomic/prepare", "/api/nft/mint/atomic/execute", map[string]string{"collectionId": col}); !ok {
		t.Error("a mint through the server on the restored store was refused")
	}
}

// A backup that does not open as a sound store is refused before the store is touched: a
// file of random bytes, a copy cut short, and one with a page overwritten.
func TestBackup_RestoreRefusesACorruptFile(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "data", "m.db")
	runMarketd(t, dsn, "oracle", "set", "--base", "CC", "--quote", "USDCx", "--price", "2")
	good := filepath.Join(dir, "good.db")
	runMarketd(t, dsn, "backup", good)
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	noise := func(n int) []byte {
		out := make([]byte, n)
		for i := range out {
			out[i] = byte(rng.Uint32())
		}
		return out
	}
	overwritten := bytes.Clone(b)
	copy(overwritten[len(b)/2:], noise(8192))
	target := filepath.Join(dir, "restored", "m.db")
	for name, content := range map[string][]byte{"random": noise(len(b)), "cut": b[:len(b)/2], "overwritten": overwritten} {
		file := filepath.Join(dir, name+".db")
		if err := os.WriteFile(file, content, 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, errOut, code := runBinary(t, []string{"MARKETD_DB=sqlite://" + target}, "restore", "--force", file)
		if code != 1 || stdout != "" || !strings.Contains(errOut, "is not a sound marketd backup") {
			t.Errorf("restore of a %s file: exit %d, stdout %q, stderr %q", name, code, stdout, errOut)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("restore of a %s file left a store behind: %v", name, err)
		}
	}
	if stdout, errOut, code := runBinary(t, []string{"MARKETD_DB=sqlite://" + target}, "restore", good); code != 0 {
		t.Errorf("restore of the sound backup: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
}

// PostgreSQL is backed up with its own tools: both commands say so and touch nothing.
func TestBackup_PostgresIsRefusedNamingPgDump(t *testing.T) {
	for _, cmd := range []string{"backup", "restore"} {
		stdout, errOut, code := runBinary(t, []string{"MARKETD_DB=postgres://nobody@127.0.0.1:1/none"}, cmd, filepath.Join(t.TempDir(), "b.db"))
		if code != 1 || stdout != "" || !strings.Contains(errOut, "pg_dump") {
			t.Errorf("marketd %s on PostgreSQL: exit %d, stdout %q, stderr %q", cmd, code, stdout, errOut)
		}
	}
}

// acknowledged is a copy of the ids of the writes acknowledged so far.
func (w *mixedWrites) acknowledged() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...)
}

// signedCheckpoint reads the log's checkpoint at base, checked against its key (or against v,
// the key of an earlier read), and returns the verifier and the tree it names.
func signedCheckpoint(t *testing.T, base string, v note.Verifier) (note.Verifier, tlog.Tree) {
	t.Helper()
	if v == nil {
		var err error
		if v, err = note.NewVerifier(strings.TrimSpace(string(logGet(t, base, "key")))); err != nil {
			t.Fatal(err)
		}
	}
	n, err := note.Open(logGet(t, base, "checkpoint"), note.VerifierList(v))
	if err != nil {
		t.Fatalf("the checkpoint at %s: %v", base, err)
	}
	tree, err := translog.ParseCheckpoint(n.Text, v.Name())
	if err != nil {
		t.Fatal(err)
	}
	return v, tree
}

// logGet reads /log/path at base.
func logGet(t testing.TB, base, path string) []byte {
	t.Helper()
	return getOK(t, base+"/log/"+path)
}

// getOK reads url, failing the test unless it answers 200.
func getOK(t testing.TB, url string) []byte {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return b
}
