package store

import (
	"bytes"
	"context"
	"testing"
)

// A database upgraded while entries wait in the queue of the code before (the log_queue
// migration's) keeps them: the log_entries_from_the_ledger migration moves each one's
// signature to its prepared transaction's row and names that transaction on the update's
// row, and the tree then built from the ledger's rows is the one the code before would have
// built. Here the last two taps' entries are put back in the queue, as the code before left
// them committed but not yet in the tree, with the signatures kept nowhere else.
func TestTransparencyLog_AnUpgradeKeepsTheEntriesTheQueueHeld(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		if s.dialect != Postgres {
			t.Skip("SQLite never queued entries")
		}
		ctx := context.Background()
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := s.wdb.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		alice := onboardKeyed(t, s, "alice")
		tap := func() {
			prep, err := s.PrepareTap(ctx, alice.id, CC, MustAmount("1"))
			if err != nil {
				t.Fatal(err)
			}
			alice.execute(t, s, KindTap, prep)
		}
		tap()
		if _, err := s.LogTree(ctx); err != nil {
			t.Fatal(err)
		}
		var size int64
		var frontier []byte
		if err := s.wdb.QueryRowContext(ctx, "SELECT size, frontier FROM log_head").Scan(&size, &frontier); err != nil {
			t.Fatal(err)
		}
		tap()
		tap()
		want, err := s.LogTree(ctx)
		if err != nil || want.N != size+2 {
			t.Fatalf("the tree after two more taps: %+v %v, want %d entries", want, err, size+2)
		}
		var queued []logEntryRow
		if err := s.db.NewSelect().Model(&queued).Where("log_index >= ?", size).Order("log_index").Scan(ctx); err != nil {
			t.Fatal(err)
		}

		down, up := migrationsSince(t, s, "log_entries_from_the_ledger")
		runStatements(t, s, down)
		for _, e := range queued {
			prefix := []byte(`{"updateId":"` + e.UpdateID + `","offset":`)
			if !bytes.HasPrefix(e.Entry, prefix) {
				t.Fatalf("entry %d: %.60s", e.LogIndex, e.Entry)
			}
			tail := bytes.TrimLeft(e.Entry[len(prefix):], "0123456789")
			exec("INSERT INTO log_queue (update_id, position, tail) VALUES (?, 0, ?)", e.UpdateID, tail)
			exec("DELETE FROM log_entries WHERE log_index = ?", e.LogIndex)
		}
		exec("UPDATE log_head SET size = ?, frontier = ?", size, frontier)
		runStatements(t, s, up)

		var signed int
		if err := s.wdb.QueryRowContext(ctx, "SELECT count(*) FROM updates AS u JOIN prepared_txs AS p ON p.hash = u.prepared_hash "+
			"WHERE u.log_index >= ? AND length(p.signature) = 64", size).Scan(&signed); err != nil || signed != 2 {
			t.Fatalf("%d of the 2 queued taps name a prepared transaction keeping its signature (%v)", signed, err)
		}
		got, err := s.LogTree(ctx)
		if err != nil || got != want {
			t.Fatalf("the tree built after the upgrade: %+v %v, want %+v", got, err, want)
		}
		var rebuilt []logEntryRow
		if err := s.db.NewSelect().Model(&rebuilt).Where("log_index >= ?", size).Order("log_index").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		for i, e := range rebuilt {
			if !bytes.Equal(e.Entry, queued[i].Entry) || !bytes.Equal(e.Hashes, queued[i].Hashes) {
				t.Errorf("entry %d after the upgrade:\n%s\nbefore:\n%s", e.LogIndex, e.Entry, queued[i].Entry)
			}
		}
	})
}
