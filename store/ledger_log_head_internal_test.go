package store

import (
	"bytes"
	"context"
	"io/fs"
	"strings"
	"testing"
	"text/template"

	"marketd/migrations"
)

// On SQLite the head is read off the log, and the migration that stopped keeping its row
// rolls back to a row that holds that same head, for the code before it. Tried at sizes whose
// bits make frontiers of one to four subtrees.
func TestTransparencyLog_SQLiteHeadRowComesBackAsTheLogHoldsIt(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		if s.dialect != SQLite {
			t.Skip("PostgreSQL keeps the head's row")
		}
		ctx := context.Background()
		down := renderMigration(t, "log_head_read_off_the_log_on_sqlite.tx.down.sql")
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
			if _, err := s.wdb.ExecContext(ctx, "DROP TABLE log_head"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// renderMigration is the statements of the SQLite migration whose file name ends with suffix.
func renderMigration(t *testing.T, suffix string) []string {
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
	if err := template.Must(template.New(names[0]).Parse(string(text))).Execute(&b, migrations.TypesFor("sqlite")); err != nil {
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
