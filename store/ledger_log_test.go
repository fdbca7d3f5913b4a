package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"marketd/store"
	"marketd/store/storetest"
	"marketd/store/translog"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// logIndexOf reads the logIndex of an execute's receipt.
func logIndexOf(t *testing.T, r store.Receipt) int64 {
	t.Helper()
	var v struct {
		UpdateID string `json:"updateId"`
		LogIndex *int64 `json:"logIndex"`
	}
	if err := json.Unmarshal(r, &v); err != nil || v.LogIndex == nil {
		t.Fatalf("receipt %s: no logIndex (%v)", r, err)
	}
	return *v.LogIndex
}

// logEntry reads entry n of the log through its bundle.
func logEntry(t *testing.T, s *store.Store, n int64) []byte {
	t.Helper()
	tree, err := s.LogTree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first := n / translog.TileWidth * translog.TileWidth
	b, err := s.LogTile(context.Background(), tlog.Tile{H: translog.TileHeight, L: -1, N: n / translog.TileWidth, W: int(min(translog.TileWidth, tree.N-first))})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := translog.ParseBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	return entries[n-first]
}

func TestTransparencyLog_EachUpdateIsOneEntryInOffsetOrderAndReceiptsPointToIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, _, _ := openLedger(t, b)
		alice, bob := storetest.Onboard(t, s, "alice"), storetest.Onboard(t, s, "bob")
		alice.Tap(t, s, store.CC, "50")
		before := storetest.CheckLog(t, s)

		prep, err := s.PrepareCCTransfer(ctx, alice.ID, bob.ID, store.MustAmount("20"))
		if err != nil {
			t.Fatal(err)
		}
		receipt, err := alice.Execute(s, store.KindCCTransfer, prep)
		if err != nil {
			t.Fatal(err)
		}
		n := logIndexOf(t, receipt)
		again, err := alice.Execute(s, store.KindCCTransfer, prep)
		if err != nil || !bytes.Equal(again, receipt) {
			t.Fatalf("a replay answered %s (%v), the execute %s", again, err, receipt)
		}
		e, err := translog.ParseEntry(logEntry(t, s, n))
		if err != nil {
			t.Fatal(err)
		}
		if e.CommittedBy != translog.CommittedByParty || !bytes.Equal(e.PreparedTransaction, prep.Transaction) ||
			e.ActAs != alice.ID || e.Kind != store.KindCCTransfer || !bytes.Equal(e.PublicKey, alice.Public()) {
			t.Fatalf("entry %d of the transfer: %+v", n, e)
		}
		// An update the service commits says so.
		pre, err := s.PreparePreapproval(ctx, bob.ID, store.PreapprovalUSDCx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bob.Execute(s, store.KindUSDCxPreapproval, pre); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RenewPreapproval(ctx, bob.ID, store.PreapprovalUSDCx); err != nil {
			t.Fatal(err)
		}
		after := storetest.CheckLog(t, s)
		last, err := translog.ParseEntry(logEntry(t, s, after.N-1))
		if err != nil {
			t.Fatal(err)
		}
		if last.CommittedBy != translog.CommittedByService || last.Kind != store.KindPreapprovalRenew || last.Signature != nil {
			t.Fatalf("the renewal's entry: %+v", last)
		}
		if err := translog.CheckConsistency(before, after, storetest.LogTiles(s)); err != nil {
			t.Fatal(err)
		}
		forged := before
		forged.Hash[0] ^= 1
		if err := translog.CheckConsistency(forged, after, storetest.LogTiles(s)); err == nil {
			t.Fatal("a tree the log never had checked as consistent with it")
		}
	})
}

func TestTransparencyLog_ConcurrentExecutesKeepOneEntryPerUpdate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, _, _ := openLedger(t, b)
		parties := make([]*storetest.Party, 6)
		for i := range parties {
			parties[i] = storetest.Onboard(t, s, fmt.Sprintf("p%d", i))
		}
		var wg sync.WaitGroup
		indexes := make(chan int64, 60)
		for _, p := range parties {
			wg.Go(func() {
				for range 10 {
					prep, err := s.PrepareTap(context.Background(), p.ID, store.CC, store.MustAmount("1"))
					if err != nil {
						t.Error(err)
						return
					}
					r, err := p.Execute(s, store.KindTap, prep)
					if err != nil {
						t.Error(err)
						return
					}
					indexes <- logIndexOf(t, r)
				}
			})
		}
		wg.Wait()
		close(indexes)
		seen := map[int64]bool{}
		for n := range indexes {
			if seen[n] {
				t.Fatalf("two receipts name entry %d", n)
			}
			seen[n] = true
		}
		storetest.CheckLog(t, s)
	})
}

func TestTransparencyLog_CheckpointIsSignedByTheLogKeyAndTilesBeyondTheTreeAreNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, _, _ := openLedger(t, b)
		storetest.Onboard(t, s, "alice")
		vkey, err := s.LogVerifierKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatalf("verifier key %q: %v", vkey, err)
		}
		signed, err := s.LogCheckpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, err := note.Open(signed, note.VerifierList(v))
		if err != nil {
			t.Fatalf("checkpoint %q: %v", signed, err)
		}
		tree, err := translog.ParseCheckpoint(n.Text, v.Name())
		if err != nil {
			t.Fatal(err)
		}
		if want := storetest.CheckLog(t, s); tree != want {
			t.Fatalf("checkpoint %+v, the log %+v", tree, want)
		}
		for _, tile := range []tlog.Tile{
			{H: translog.TileHeight, L: 0, N: 0, W: int(tree.N) + 1},
			{H: translog.TileHeight, L: -1, N: 1, W: 1},
			{H: translog.TileHeight, L: 1, N: 0, W: 1},
		} {
			if _, err := s.LogTile(ctx, tile); store.ErrorCode(err) != store.CodeNotFound {
				t.Errorf("tile %s of a tree of %d: %v, want not_found", translog.TilePath(tile), tree.N, err)
			}
		}
	})
}

func TestTransparencyLog_MigrateLogsTheUpdatesCommittedBeforeTheLogBegan(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, _, _ := openLedger(t, b)
		alice := storetest.Onboard(t, s, "alice")
		alice.Tap(t, s, store.CC, "5")
		// The store as it was before the log: updates, and an empty log.
		driver, dsn := "pgx", s.Config().DB
		empty := `'\x'::bytea`
		if b.Dialect == store.SQLite {
			driver, dsn, empty = "sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://"), "X''"
		}
		raw, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := s.LogTree(context.Background()); err != nil { // nothing left to build
			t.Fatal(err)
		}
		before := []string{"DELETE FROM log_entries", "UPDATE updates SET log_index = NULL"}
		if b.Dialect == store.Postgres { // SQLite reads the head off the log: it has no row
			before = append(before, "UPDATE log_sequence SET next = 0", "UPDATE log_head SET size = 0, last_offset = 0, frontier = "+empty)
		}
		for _, q := range before {
			if _, err := raw.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		tree := storetest.CheckLog(t, s)
		e, err := translog.ParseEntry(logEntry(t, s, 0))
		if err != nil || e.CommittedBy != translog.CommittedBeforeLog {
			t.Fatalf("the first entry after the migration: %+v %v", e, err)
		}
		alice.Tap(t, s, store.CC, "5")
		if after := storetest.CheckLog(t, s); after.N != tree.N+1 {
			t.Fatalf("the log went from %d to %d entries with one update", tree.N, after.N)
		}
	})
}

// The store keeps the log's head its last append committed, to append the next entries
// without reading it; whatever else moved the head meanwhile must be seen. Here an append
// rolled back after writing its head (the database refused its stored hashes), and another
// store on the same database appended, before this store appends again: the tree must still
// hold every update once, in offset order, and each receipt its entry's index.
func TestTransparencyLog_AppendsAfterARollbackAndAnotherWritersAppendsKeepTheTree(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		s, _, _ := openLedger(t, b)
		alice := storetest.Onboard(t, s, "alice")
		logged := receipts{}
		tapLogged := func(s *store.Store) error {
			prep, err := s.PrepareTap(context.Background(), alice.ID, store.CC, store.MustAmount("1"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := alice.Execute(s, store.KindTap, prep)
			if err == nil {
				logged.add(t, r)
			}
			return err
		}
		if err := tapLogged(s); err != nil {
			t.Fatal(err)
		}

		// On PostgreSQL what commits with the update is its entry's number (the tree is built
		// from the ledger's rows afterwards); on SQLite the entry itself.
		driver, dsn := "pgx", s.Config().DB
		refuse := []string{`CREATE FUNCTION refuse_entry() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`,
			`CREATE TRIGGER refuse_entries BEFORE UPDATE ON log_sequence FOR EACH ROW EXECUTE FUNCTION refuse_entry()`}
		allow := []string{"DROP TRIGGER refuse_entries ON log_sequence", "DROP FUNCTION refuse_entry"}
		if b.Dialect == store.SQLite {
			driver, dsn = "sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite://")+"?_pragma=busy_timeout(10000)"
			refuse = []string{"CREATE TRIGGER refuse_entries BEFORE INSERT ON log_entries BEGIN SELECT RAISE(ABORT, 'refused'); END"}
			allow = []string{"DROP TRIGGER refuse_entries"}
		}
		raw, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		exec := func(qs []string) {
			t.Helper()
			for _, q := range qs {
				if _, err := raw.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
		}
		exec(refuse)
		if err := tapLogged(s); err == nil {
			t.Fatal("a tap committed while the database refused the log's entries")
		}
		exec(allow)
		if err := tapLogged(s); err != nil {
			t.Fatalf("the first tap after a rolled-back append: %v", err)
		}
		storetest.CheckLog(t, s)

		other := b.Reopen(t, s.Config())
		for range 3 {
			if err := tapLogged(other); err != nil {
				t.Fatalf("a tap through another store: %v", err)
			}
		}
		for range 2 {
			if err := tapLogged(s); err != nil {
				t.Fatalf("a tap after another store appended: %v", err)
			}
		}
		indexes := storetest.LogIndexes(t, s)
		for id, n := range logged {
			if indexes[id] != n {
				t.Errorf("update %s: its receipt says logIndex %d, the log holds it at %d", id, n, indexes[id])
			}
		}
		if len(logged) != 7 {
			t.Errorf("%d taps committed, want 7", len(logged))
		}
	})
}
