package ledger_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"marketd/store/internal/testdb"
	"marketd/store/ledger"
)

// Updates appended with one statement each learn the offset of its own row, in the order
// given, also after an earlier update of the transaction was rolled back to a savepoint (on
// SQLite the offsets are the rows' rowids; on PostgreSQL the commit assigns them, so there is
// none to learn before it).
func TestLedger_UpdatesAppendedTogetherEachLearnTheirRowsOffset(t *testing.T) {
	testdb.Each(t, func(t *testing.T, b testdb.Backend) {
		if b.Postgres {
			t.Skip("PostgreSQL assigns offsets as the transaction commits")
		}
		e := newEnv(t, b)
		e.tap(alice, ledger.CC, "1") // an update before, so offsets do not start at 1
		var us []*ledger.Update
		ctx := context.Background()
		err := e.db.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error {
			tx := ledger.Begin(btx, e.db, e.clock.Now())
			if err := tx.Savepoint(ctx, "s"); err != nil {
				return err
			}
			if err := tx.AppendUpdates(ctx, []*ledger.Update{e.update(bob)}); err != nil {
				return err
			}
			if _, err := tx.SQL().ExecContext(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
				return err
			}
			us = []*ledger.Update{e.update(alice), e.update(bob), e.update(carol), e.update(alice)}
			return tx.AppendUpdates(ctx, us)
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, u := range us {
			var offset int64
			if err := e.db.NewSelect().Model((*ledger.Update)(nil)).Column("ledger_offset").
				Where("update_id = ?", u.UpdateID).Scan(ctx, &offset); err != nil {
				t.Fatal(err)
			}
			if u.Offset != offset || (i > 0 && u.Offset <= us[i-1].Offset) {
				t.Errorf("update %d (%s) learnt offset %d, its row has %d", i, u.UpdateID, u.Offset, offset)
			}
		}
	})
}
