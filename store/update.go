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

// UpdateEvent is one contract an update consumed or created, in the update's order.
type UpdateEvent struct {
	Seq      int
	Event    string // "consumed" or "created"
	Template string
	CID      string
}

// UpdateByID returns a committed update and what it consumed and created, or not_found.
func (s *Store) UpdateByID(ctx context.Context, updateID string) (*Update, []UpdateEvent, error) {
	u := new(Update)
	err := s.db.NewSelect().Model(u).Where("update_id = ?", updateID).Scan(ctx)
	if isNoRows(err) {
		return nil, nil, Errorf(CodeNotFound, "no update %s", truncate(updateID, 80))
	}
	if err != nil {
		return nil, nil, err
	}
	var rows []updateEvent
	if err := s.db.NewSelect().Model(&rows).Where("update_id = ?", updateID).Order("seq").Scan(ctx); err != nil {
		return nil, nil, err
	}
	events := make([]UpdateEvent, len(rows))
	for i, r := range rows {
		events[i] = UpdateEvent{Seq: r.Seq, Event: r.Event, Template: r.Template, CID: r.CID}
	}
	return u, events, nil
}

// Supply returns the total of every instrument in active holdings: what was minted, since
// transactions conserve every instrument.
func (s *Store) Supply(ctx context.Context) (map[Instrument]Amount, error) {
	var hs []Holding
	if err := s.db.NewSelect().Model(&hs).Column("instrument", "amount").Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	out := map[Instrument]Amount{}
	for _, inst := range Instruments {
		out[inst] = Zero
	}
	for _, h := range hs {
		out[h.Instrument] = out[h.Instrument].Add(h.Amount)
	}
	return out, nil
}

// HoldingByID returns a holding, consumed or not, or not_found.
func (s *Store) HoldingByID(ctx context.Context, cid string) (*Holding, error) {
	h := new(Holding)
	err := s.db.NewSelect().Model(h).Where("cid = ?", cid).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeNotFound, "no holding %s", truncate(cid, 80))
	}
	return h, err
}
