package store

import (
	"context"

	"github.com/uptrace/bun"

	"marketd/store/ledger"
)

// updateEvent is one row of the event log: an update consumed or created a contract.
type updateEvent = ledger.EventRow

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
	}
	defer tx.s.commitLog.inserting(tx, us)()
	l := logOf(tx.parts)
	l.logged = append(l.logged, us...)
	// On SQLite the transparency log needs the offsets before the commit (appendLog): the
	// insert sets them.
	return tx.AppendUpdates(ctx, us)
}

// indexAtInsert gives us, about to be inserted on SQLite after the updates the transaction's
// log part holds (txLog.logged),
// the log indexes their entries get if the log still ends where this process's last append
// left it (Store.logEdge) when the transaction appends to it: the insert then writes each
// row's log_index, and the append (writeEntries) needs no statement an update to write it.
// The positions stay dense: an update rolled back to a savepoint leaves txLog.logged together
// with its row (undo), so the next takes its index. The append checks that the log's size
// and the updates' order are still those assumed (logAppend.indexed), and writes the indexes
// itself otherwise. The indexes set here are taken off us again once they are inserted
// (the returned func): an update's LogIndex is set only by the append that gives it its entry.
func (tx *Tx) indexAtInsert(us []*Update) (clear func()) {
	l := logOf(tx.parts)
	if !l.indexDecided {
		l.indexDecided = true
		if edge := tx.s.logEdge.get(); edge != nil && len(l.logged) == 0 {
			l.indexed, l.indexedFrom = true, edge.Size
		}
	}
	if !l.indexed {
		return func() {}
	}
	for i, u := range us {
		n := l.indexedFrom + int64(len(l.logged)+i)
		u.LogIndex = &n
	}
	return func() {
		for _, u := range us {
			u.LogIndex = nil
		}
	}
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
