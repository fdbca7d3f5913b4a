package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/wallet"
)

func TestMigrate_UpDownUp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		st, err := s.MigrationStatus(ctx)
		if err != nil || len(st) == 0 || !st[0].Applied {
			t.Fatalf("status after up: %+v, %v", st, err)
		}
		if _, err := s.MigrateDown(ctx); err != nil {
			t.Fatalf("down: %v", err)
		}
		st, _ = s.MigrationStatus(ctx)
		for _, m := range st {
			if m.Applied {
				t.Fatalf("%s still applied after down", m.Name)
			}
		}
		if applied, err := s.Migrate(ctx); err != nil || len(applied) == 0 {
			t.Fatalf("up again: %v, %v", applied, err)
		}
	})
}

func TestMigrateWithProgress_TellsEachMigrationOfTheRunAsItEnds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock))) // migrated: one group
		var calls [][2]int
		tell := func(done, total int) { calls = append(calls, [2]int{done, total}) }
		want := func(what string, names []string) {
			t.Helper()
			if len(names) == 0 || len(calls) != len(names) {
				t.Fatalf("%s: %d migrations, progress %v", what, len(names), calls)
			}
			for i, c := range calls {
				if c != [2]int{i + 1, len(names)} {
					t.Errorf("%s: progress %v, want 1 to %d of %d", what, calls, len(names), len(names))
					break
				}
			}
			calls = nil
		}
		down, err := s.MigrateDownWithProgress(ctx, tell)
		if err != nil {
			t.Fatal(err)
		}
		want("down", down)
		up, err := s.MigrateWithProgress(ctx, tell)
		if err != nil {
			t.Fatal(err)
		}
		want("up", up)
		if again, err := s.MigrateWithProgress(ctx, tell); err != nil || len(again) != 0 || len(calls) != 0 {
			t.Errorf("up with nothing pending: %v %v, progress %v", again, err, calls)
		}
	})
}

func TestOnboard_SameKeyTwiceIsSameParty(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		k := storetest.NewKey()
		var ids []string
		for _, hint := range []string{"alice", "alice2"} {
			p, err := s.PrepareOnboarding(ctx, k.Public(), hint)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Execute(ctx, store.Execution{Kinds: []string{store.KindOnboard}, Hash: p.Hash, Signature: k.Sign(p.Hash)})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("receipt %s", r)
			ids = append(ids, p.PartyID)
		}
		if ids[0] != ids[1] || ids[0] != wallet.PartyIDFor("alice", k.Public()) {
			t.Fatalf("party ids %v", ids)
		}
	})
}

// The SQLite store is its user's alone: its folder 0700 and every database file 0600 from
// creation, and tightened when an earlier version left them looser (the security read's row 6).
func TestSQLite_TheDataFolderAndDatabaseFilesAreTheirUsersAlone(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "marketd.db")
	open := func() {
		t.Helper()
		cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
		cfg.DB = "sqlite://" + path
		s, err := store.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		storetest.Onboard(t, s, "alice") // a write: the WAL and its index exist
		want := map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600}
		for name, mode := range want {
			fi, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != mode {
				t.Errorf("%s is %v, want %v", name, fi.Mode().Perm(), mode)
			}
		}
		s.Close()
	}
	open()
	// As an earlier version left them: readable by every local user.
	os.Chmod(dir, 0o755)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Chmod(path+suffix, 0o644)
	}
	open()
}

// A store in a folder others share by design (sticky and writable by all, as /tmp is) leaves
// the folder as it is: making it 0700 would lock every other user of the machine out of it.
// The database files are still 0600.
func TestSQLite_AStoreInASharedFolderLeavesTheFolderAlone(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "marketd.db")
	cfg := storetest.Config(storetest.NewClock(storetest.Epoch))
	cfg.DB = "sqlite://" + path
	s, err := store.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.Onboard(t, s, "alice")
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModePerm|os.ModeSticky) != 0o777|os.ModeSticky {
		t.Errorf("the shared folder is %v after the store opened in it, want it left drwxrwxrwt", fi.Mode())
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(path + suffix); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want 0600", path+suffix, fi.Mode(), err)
		}
	}
}
