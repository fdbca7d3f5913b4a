package store

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/bits"
	"slices"
	"strings"
	"testing"
	"text/template"

	"golang.org/x/mod/sumdb/tlog"

	"marketd/migrations"
	"marketd/store/translog"
)

// On SQLite the head is read off the log, and the migration that stopped keeping its row (the
// log_format migration) rolls back to a row that holds that same head, for the code before it,
// and applies again without it. Tried at sizes whose bits make frontiers of one to four
// subtrees.
func TestTransparencyLog_SQLiteHeadRowComesBackAsTheLogHoldsIt(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		if s.dialect != SQLite {
			t.Skip("PostgreSQL keeps the head's row")
		}
		ctx := context.Background()
		// Rolled back as a rollback runs: the hashes back in their table first.
		down, up := migrationsSince(t, s, "log_format")
		alice := onboardKeyed(t, s, "alice")
		for _, want := range []int64{2, 6, 11, 15} {
			for {
				h, err := s.readLogHead(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if h.Size >= want {
					break
				}
				prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
				if err != nil {
					t.Fatal(err)
				}
				alice.execute(t, s, KindTap, prep)
			}
			read, err := s.readLogHead(ctx)
			if err != nil || read.Size != want {
				t.Fatalf("head of %d entries read as %+v, %v", want, read, err)
			}
			for _, stmt := range down {
				if _, err := s.wdb.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			row := new(logHead)
			if err := s.db.NewSelect().Model(row).Where("id = 1").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if row.Size != read.Size || !bytes.Equal(row.Frontier, read.Frontier) {
				t.Fatalf("rolled back to a head row of %d entries and %x, the log holds %d and %x", row.Size, row.Frontier, read.Size, read.Frontier)
			}
			for _, stmt := range up {
				if _, err := s.wdb.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
		}
	})
}

// migrationsSince is the statements, for s's dialect, that roll back the migration named name
// and every later one, latest first, and those that apply them again, in order.
func migrationsSince(t *testing.T, s *Store, name string) (down, up []string) {
	t.Helper()
	ups, err := fs.Glob(migrations.Files, "*.tx.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ups)
	from := slices.IndexFunc(ups, func(f string) bool { return strings.HasSuffix(f, "_"+name+".tx.up.sql") })
	if from < 0 {
		t.Fatalf("no migration %s", name)
	}
	for _, f := range ups[from:] {
		m := strings.TrimSuffix(f[strings.Index(f, "_")+1:], ".tx.up.sql")
		up = append(up, renderMigration(t, s, m+".tx.up.sql")...)
		down = append(renderMigration(t, s, m+".tx.down.sql"), down...)
	}
	return down, up
}

// runStatements runs stmts, rendered migrations, in one write transaction of s.
func runStatements(t *testing.T, s *Store, stmts []string) {
	t.Helper()
	ctx := context.Background()
	err := s.inTx(ctx, func(tx *Tx) error {
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// renderMigration is the statements, for s's dialect, of the migration whose file name ends
// with suffix.
func renderMigration(t *testing.T, s *Store, suffix string) []string {
	t.Helper()
	names, err := fs.Glob(migrations.Files, "*_"+suffix)
	if err != nil || len(names) != 1 {
		t.Fatalf("migration *_%s: %v %v", suffix, names, err)
	}
	text, err := fs.ReadFile(migrations.Files, names[0])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := template.Must(template.New(names[0]).Parse(string(text))).Execute(&b, migrations.TypesFor(string(s.dialect))); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, stmt := range strings.Split(b.String(), "--bun:split") {
		if strings.TrimSpace(stmt) != "" {
			out = append(out, stmt)
		}
	}
	return out
}

// The migration that keeps an entry's stored hashes in its row (the log_format migration)
// moves them there from their table, and back when it rolls back, whatever the log's size: the tree, every hash tile and
// every later append are the same either way.
func TestTransparencyLog_StoredHashesMoveIntoTheEntriesAndBack(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		ctx := context.Background()
		down, up := migrationsSince(t, s, "log_format")
		alice := onboardKeyed(t, s, "alice")
		for range 11 { // 13 entries with the onboarding's: a frontier of three subtrees
			prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
			if err != nil {
				t.Fatal(err)
			}
			alice.execute(t, s, KindTap, prep)
		}
		before, err := s.LogTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tile := tlog.TileForIndex(translog.TileHeight, tlog.StoredHashIndex(0, before.N-1))
		tileBefore, err := s.LogTile(ctx, tile)
		if err != nil {
			t.Fatal(err)
		}
		runStatements(t, s, down)
		var stored int64
		if err := s.db.NewSelect().Table("log_hashes").ColumnExpr("count(*)").Scan(ctx, &stored); err != nil {
			t.Fatal(err)
		}
		if want := 2*before.N - int64(bits.OnesCount64(uint64(before.N))); stored != want {
			t.Fatalf("rolled back to %d stored hashes, a tree of %d entries has %d", stored, before.N, want)
		}
		runStatements(t, s, up)
		s.fullTiles.forget() // what was served before is not evidence of what is stored now
		after, err := s.LogTree(ctx)
		if err != nil || after != before {
			t.Fatalf("the tree was %v and is %v after the hashes moved there and back (%v)", before, after, err)
		}
		tileAfter, err := s.LogTile(ctx, tile)
		if err != nil || !bytes.Equal(tileAfter, tileBefore) {
			t.Fatalf("tile %v changed after the hashes moved there and back (%v)", tile, err)
		}
		prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
		if err != nil {
			t.Fatal(err)
		}
		alice.execute(t, s, KindTap, prep)
		next, err := s.LogTree(ctx)
		if err != nil || next.N != before.N+1 {
			t.Fatalf("the next append made %v of %v (%v)", next, before, err)
		}
		hs, err := readStoredHashes(ctx, s.db, []int64{tlog.StoredHashIndex(0, before.N)})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := tlog.ProveRecord(next.N, before.N, tlog.HashReaderFunc(func(xs []int64) ([]tlog.Hash, error) {
			return s.readLogHashes(ctx, xs)
		})); err != nil || tlog.CheckRecord(p, next.N, next.Hash, before.N, hs[0]) != nil {
			t.Fatalf("the new entry's inclusion in %v does not check: %v", next, err)
		}
	})
}
