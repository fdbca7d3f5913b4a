package store

import (
	"context"
)

// PoolsPage pages through the active pools by id.
func (s *Store) PoolsPage(ctx context.Context, r PageRequest) (Page[Pool], error) {
	q, err := startPage[string](ctx, s, "pools", r)
	if err != nil {
		return Page[Pool]{}, err
	}
	var ps []Pool
	sel := s.db.NewSelect().Model(&ps).Where("consumed_update IS NULL")
	sel = q.Seek(sel, false, []string{"pool_id"}, q.At(func(id string) []any { return []any{id} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return Page[Pool]{}, err
	}
	return finish(ctx, s, q, ps, func(p Pool) string { return p.PoolID })
}

// PoolCount counts the active pools: a handful, so counting is cheap.
func (s *Store) PoolCount(ctx context.Context) (int, error) {
	n, err := s.db.NewSelect().Model((*Pool)(nil)).Where("consumed_update IS NULL").Count(ctx)
	return int(n), err
}

// LPQuoteByID returns an open LP quote by the cid that names it for its whole life; not_found
// once it is filled, cancelled or swept as expired.
func (s *Store) LPQuoteByID(ctx context.Context, quoteID string) (*LPQuote, error) {
	var rows []LPQuote
	if err := s.db.NewSelect().Model(&rows).Where("quote_id = ?", quoteID).Where("consumed_update IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, Errorf(CodeNotFound, "no open LP quote %s", truncate(quoteID, 80))
	}
	return &rows[0], nil
}

// PoolLPQuotes pages through a pool's open LP quotes, newest first.
func (s *Store) PoolLPQuotes(ctx context.Context, poolID string, r PageRequest) (Page[LPQuote], error) {
	if _, err := s.PoolByID(ctx, poolID); err != nil {
		return Page[LPQuote]{}, err
	}
	return s.openLPQuotes(ctx, "pool-quotes:"+poolID, "pool_id", poolID, r)
}

// PoolOutcome is a filled intent of a pool, placed in the update log by its LedgerOffset.
type PoolOutcome struct {
	IntentView
}

// Position is where a follower resumes after this outcome: an update may fill several
// intents, ordered by their cid.
func (o *PoolOutcome) Position() LogPosition {
	return LogPosition{Offset: o.LedgerOffset, After: o.IntentCID}
}

// SeenBy is the fill as viewer (the party of the caller's token, "" for none) may see it:
// the taker only on its own fills.
func (o PoolOutcome) SeenBy(viewer string) PoolOutcome {
	if viewer == "" || o.Taker != viewer {
		o.Taker = ""
	}
	return o
}

// PoolOutcomesAfter lists up to limit of the pool's fills after pos, in log order, each with
// its taker: pass each through SeenBy before anyone sees it. A follower that resumes from the
// position of the last one it saw misses none and sees none twice, on any instance of the
// store.
func (s *Store) PoolOutcomesAfter(ctx context.Context, poolID string, pos LogPosition, limit int) ([]PoolOutcome, error) {
	var views []IntentView
	// The closing update's offset is on the row (migration activity_offsets), set as it commits.
	sel := withLogIndex(s.db.NewSelect().Model(&views).ColumnExpr("intent_view.*, intent_view.closed_offset AS ledger_offset"), "closed_update").
		Where("intent_view.pool_id = ?", poolID).Where("intent_view.status = ?", IntentFilled).
		Where("intent_view.closed_offset IS NOT NULL")
	if err := afterPosition(sel, pos, "intent_view.closed_offset", "intent_view.intent_cid", pos.After).
		OrderExpr("intent_view.closed_offset, intent_view.intent_cid").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]PoolOutcome, len(views))
	for i, v := range views {
		out[i] = PoolOutcome{IntentView: v}
	}
	return out, nil
}
