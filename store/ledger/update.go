package ledger

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// Update is one committed transaction in the ledger's append-only log. Offsets increase in
// commit order, so a reader that has seen offset N has seen everything before it.
type Update struct {
	bun.BaseModel `bun:"table:updates"`

	UpdateID   string    `bun:"update_id,pk"`
	Offset     int64     `bun:"ledger_offset,nullzero"` // assigned at commit
	Kind       string    `bun:"kind"`
	ActAs      string    `bun:"act_as"`
	RecordedAt Timestamp `bun:"recorded_at"`
	Reward     *Amount   `bun:"reward"`        // the CC reward the update earned ActAs, if any
	LogIndex   *int64    `bun:"log_index"`     // its entry in the transparency log, written with the entry (nil before)
	Prepared   []byte    `bun:"prepared_hash"` // the hash of the prepared transaction a party signed for it, if one did

	// Annex is what the service that appends the update keeps beside it until its
	// transaction ends (what a party signed, for its transparency log); the ledger neither
	// reads nor writes it, and it is not stored.
	Annex any `bun:"-" json:"-"`
}

// EventRow is one row of the event log: an update consumed or created a contract.
type EventRow struct {
	bun.BaseModel `bun:"table:update_events"`

	UpdateID string `bun:"update_id,pk"`
	Seq      int    `bun:"seq,pk"`
	Event    string `bun:"event"` // "consumed" or "created"
	Template string `bun:"template"`
	CID      string `bun:"cid"`
}

// AppendUpdates writes us to the update log, in their order, with one statement, each
// recorded at the transaction's instant. The database assigns the offsets in commit order (on
// PostgreSQL as the transaction commits, so the write is deferred; on SQLite as the row is
// written, and each update's Offset is then set: a caller that needs them before the commit,
// the transparency log, has them, and learning them costs no read).
func (tx *Tx) AppendUpdates(ctx context.Context, us []*Update) error {
	for _, u := range us {
		u.RecordedAt = At(tx.Now())
	}
	q := tx.NewInsert().Model(&us)
	if tx.dialect == Postgres {
		return tx.Later(ctx, q)
	}
	return insertTakingOffsets(ctx, q, us)
}

// insertTakingOffsets runs q, which writes us with one statement, on SQLite, where each row
// gets its offset (the table's AUTOINCREMENT rowid) as it is written, and sets each update's
// Offset without reading the rows back: the statement writes the rows in VALUES order, each
// one past the largest rowid the table has held, under the write lock of a transaction that
// began IMMEDIATE, so the offsets are consecutive and the last is the statement's last insert
// rowid (a trigger's own inserts do not change it once the trigger ends). The rows it wrote are
// counted: a statement that wrote any other number of rows is an error. Without RETURNING
// (which bun adds for the offset the database fills in) no row comes back to be scanned.
// Updates that come with offsets of their own are inserted as given and their offsets read
// back (insertReturningOffsets): those need not be consecutive.
func insertTakingOffsets(ctx context.Context, q *bun.InsertQuery, us []*Update) error {
	for _, u := range us {
		if u.Offset != 0 {
			return insertReturningOffsets(ctx, q, us)
		}
	}
	res, err := q.Returning("NULL").Exec(ctx)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != int64(len(us)) {
		return fmt.Errorf("the insert of %d updates wrote %d rows", len(us), n)
	}
	last, err := res.LastInsertId()
	if err != nil {
		return err
	}
	for i, u := range us {
		u.Offset = last - int64(len(us)-1-i)
	}
	return nil
}

// insertReturningOffsets runs q, which writes us, on SQLite, and sets each update's Offset
// from what the insert returns. Rows are matched by id: RETURNING gives them in no promised
// order.
func insertReturningOffsets(ctx context.Context, q *bun.InsertQuery, us []*Update) error {
	var rows []struct {
		UpdateID string `bun:"update_id"`
		Offset   int64  `bun:"ledger_offset"`
	}
	if err := q.Returning("update_id, ledger_offset").Scan(ctx, &rows); err != nil {
		return err
	}
	at := make(map[string]int64, len(rows))
	for _, r := range rows {
		at[r.UpdateID] = r.Offset
	}
	for _, u := range us {
		o, ok := at[u.UpdateID]
		if !ok {
			return fmt.Errorf("the insert of update %s returned no offset", u.UpdateID)
		}
		u.Offset = o
	}
	return nil
}
