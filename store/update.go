package store

import (
	"context"

	"github.com/uptrace/bun"
)

// Update is one committed transaction in the ledger's append-only log. Offsets increase in
// commit order, so a reader that has seen offset N has seen everything before it.
type Update struct {
	bun.BaseModel `bun:"table:updates"`

	Offset     int64     `bun:"ledger_offset,pk,autoincrement"`
	UpdateID   string    `bun:"update_id"`
	Kind       string    `bun:"kind"`
	ActAs      string    `bun:"act_as"`
	RecordedAt Timestamp `bun:"recorded_at"`
	Reward     *Amount   `bun:"reward"` // the CC reward the update earned ActAs, if any
}

// updateLogLock serialises appends on PostgreSQL from the append to the commit, so offsets
// are handed out in commit order (a sequence alone hands them out in start order).
const updateLogLock = 0x75706461746573 // "updates"

// appendUpdate writes u to the log, and credits its reward; it is the last write of its
// transaction.
func (tx *Tx) appendUpdate(ctx context.Context, u *Update) error {
	if u.Reward != nil {
		if err := tx.creditReward(ctx, u.ActAs, *u.Reward); err != nil {
			return err
		}
	}
	u.RecordedAt = At(tx.now)
	if tx.s.dialect == Postgres {
		// One round trip: the lock is taken before the sequence hands out the offset, and
		// held from here to the commit.
		return tx.NewRaw(`INSERT INTO updates (update_id, kind, act_as, recorded_at, reward)
			SELECT ?, ?, ?, ?, ? FROM (SELECT pg_advisory_xact_lock(?)) AS log_lock
			RETURNING ledger_offset`,
			u.UpdateID, u.Kind, u.ActAs, u.RecordedAt, u.Reward, updateLogLock).Scan(ctx, &u.Offset)
	}
	_, err := tx.NewInsert().Model(u).Returning("ledger_offset").Exec(ctx)
	return err
}
