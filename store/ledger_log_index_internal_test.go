package store

import (
	"context"
	"fmt"
	"testing"
)

// An update's row names the index of its entry in the transparency log, also when another
// update of the same transaction was rolled back to a savepoint after its row was written (a
// batch's refused execute): on SQLite the rows are written with the indexes the append gives
// them, so the rolled-back update's index must go to the next one, and none be skipped.
func TestTransparencyLog_AnUpdateRolledBackToASavepointLeavesEachRowItsEntrysIndex(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *Store, _ *ledgerClock) {
		ctx := context.Background()
		p := onboardKeyed(t, s, "p")
		appendOne := func(tx *Tx, id string) error {
			return tx.appendUpdate(ctx, &Update{UpdateID: id, Kind: KindTap, ActAs: p.id})
		}
		// A first transaction, so that the next finds the log's head this process left.
		if err := s.inTx(ctx, func(tx *Tx) error { return appendOne(tx, "first") }); err != nil {
			t.Fatal(err)
		}
		err := s.inTx(ctx, func(tx *Tx) error {
			if err := tx.Savepoint(ctx, savepoint); err != nil {
				return err
			}
			for _, id := range []string{"kept-1", "rolled-back", "kept-2", "rolled-back-2", "rolled-back-3", "kept-3"} {
				mark := tx.mark()
				if err := appendOne(tx, id); err != nil {
					return err
				}
				if err := tx.Flush(ctx); err != nil {
					return err
				}
				if id[:4] == "roll" {
					if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); err != nil {
						return err
					}
					tx.undo(mark)
					continue
				}
				if err := tx.Savepoint(ctx, savepoint); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.LogTree(ctx); err != nil { // on PostgreSQL, the tree takes in the numbered entries
			t.Fatal(err)
		}
		var rows []struct {
			UpdateID string `bun:"update_id"`
			Row      *int64 `bun:"row_index"`
			Entry    *int64 `bun:"entry_index"`
		}
		err = s.db.NewRaw("SELECT u.update_id, u.log_index AS row_index, e.log_index AS entry_index "+
			"FROM updates AS u LEFT JOIN log_entries AS e ON e.update_id = u.update_id ORDER BY u.ledger_offset").Scan(ctx, &rows)
		if err != nil {
			t.Fatal(err)
		}
		show := func(n *int64) string {
			if n == nil {
				return "none"
			}
			return fmt.Sprint(*n)
		}
		var ids []string
		for i, r := range rows {
			ids = append(ids, r.UpdateID)
			if r.Row == nil || r.Entry == nil || *r.Row != *r.Entry || *r.Entry != int64(i) {
				t.Errorf("update %s, the %dth by offset: its row names log index %s, its entry is at %s",
					r.UpdateID, i, show(r.Row), show(r.Entry))
			}
		}
		if n := len(ids); n < 4 || fmt.Sprint(ids[n-4:]) != "[first kept-1 kept-2 kept-3]" {
			t.Errorf("the updates by offset: %v, want them to end with first, kept-1, kept-2 and kept-3", ids)
		}
	})
}
