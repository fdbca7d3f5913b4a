package store

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
	Reward     *Amount   `bun:"reward"`    // the CC reward the update earned ActAs, if any
	LogIndex   *int64    `bun:"log_index"` // its entry in the transparency log, written with the entry (nil before)

	signed    *partySigned // set by an execute: what the party signed (ledger_log.go)
	beforeLog bool         // committed before the transparency log began (fillLog)
}

// appendUpdate writes u to the log, and credits its reward; it is the last write of its
// update (the commit appends it to the transparency log: appendLog). The store assigns the offset as the transaction commits (in commit order: see
// the foundation migration), so nothing here waits for other writers.
func (tx *Tx) appendUpdate(ctx context.Context, u *Update) error {
	return tx.appendUpdates(ctx, []*Update{u})
}

// appendUpdates is appendUpdate of several updates, in their order, with one statement.
func (tx *Tx) appendUpdates(ctx context.Context, us []*Update) error {
	for _, u := range us {
		if u.Reward != nil {
			if err := tx.creditReward(ctx, u.ActAs, *u.Reward); err != nil {
				return err
			}
		}
		u.RecordedAt = At(tx.now)
	}
	tx.logged = append(tx.logged, us...)
	q := tx.NewInsert().Model(&us)
	if tx.s.dialect == Postgres || tx.s.unlogged {
		return tx.later(ctx, q)
	}
	return tx.insertTakingOffsets(ctx, q, us)
}

// insertTakingOffsets runs q, which writes us, on SQLite, where each row gets its offset as it
// is written, and sets each update's Offset from what the insert returns: the transparency log
// needs them (appendLog), and reading them back would be one more statement. Rows are matched
// by id: RETURNING gives them in no promised order.
func (tx *Tx) insertTakingOffsets(ctx context.Context, q *bun.InsertQuery, us []*Update) error {
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

// UpdatesAfter lists up to limit committed updates with an offset above after, in offset
// order: a follower that remembers the last offset it saw misses none.
func (s *Store) UpdatesAfter(ctx context.Context, after int64, limit int) ([]Update, error) {
	var us []Update
	err := s.db.NewSelect().Model(&us).Where("ledger_offset > ?", after).Order("ledger_offset").Limit(int64(limit)).Scan(ctx)
	return us, err
}

// LogPosition is a point in the update log: after update Offset's events up to After (their
// order within the update, which each feed defines), or after all of them when After is "".
type LogPosition struct {
	Offset int64
	After  string
}

// LatestPosition is the end of the update log now: following from it yields only what
// commits later.
func (s *Store) LatestPosition(ctx context.Context) (LogPosition, error) {
	var off []int64
	err := s.db.NewSelect().Model((*Update)(nil)).ColumnExpr("COALESCE(MAX(ledger_offset), 0)").Scan(ctx, &off)
	if err != nil || len(off) == 0 {
		return LogPosition{}, err
	}
	return LogPosition{Offset: off[0]}, nil
}

// afterPosition narrows q to rows after pos, offset being the update's offset column and key
// the order within an update.
func afterPosition(q *bun.SelectQuery, pos LogPosition, offset, key string, keyValue any) *bun.SelectQuery {
	if pos.After == "" {
		return q.Where("? > ?", bun.Ident(offset), pos.Offset)
	}
	// The first condition is implied by the second; it bounds an index range on the offset.
	return q.Where("? >= ?", bun.Ident(offset), pos.Offset).
		Where("(? > ? OR (? = ? AND ? > ?))", bun.Ident(offset), pos.Offset, bun.Ident(offset), pos.Offset, bun.Ident(key), keyValue)
}
