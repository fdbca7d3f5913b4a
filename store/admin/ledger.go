package admin

import (
	"context"

	"marketd/store"
)

// The console's lists of the ledger: the committed updates and the prepared transactions,
// newest first, of every party or of one.

// LatestUpdates lists the newest committed updates (at most MaxPageSize), of one party when
// party is not empty.
func (c *Console) LatestUpdates(ctx context.Context, party string, limit int) ([]store.Update, error) {
	p, err := c.UpdatesPage(ctx, party, firstPage(limit))
	return p.Items, err
}

// UpdatesPage is one page of committed updates, newest first, of one party when party is not
// empty.
func (c *Console) UpdatesPage(ctx context.Context, party string, r store.PageRequest) (store.Page[store.Update], error) {
	q, err := store.StartPage[int64](ctx, c.s, "admin-updates:"+store.HashText(party), r)
	if err != nil {
		return store.Page[store.Update]{}, err
	}
	var us []store.Update
	sel := c.s.ReadDB().NewSelect().Model(&us).Where("ledger_offset IS NOT NULL")
	if party != "" {
		sel = sel.Where("act_as = ?", party)
	}
	sel = q.Seek(sel, true, []string{"ledger_offset"}, q.At(func(offset int64) []any { return []any{offset} }))
	if err := sel.Limit(q.Fetch()).Scan(ctx); err != nil {
		return store.Page[store.Update]{}, err
	}
	return store.FinishPage(ctx, c.s, q, us, func(u store.Update) int64 { return u.Offset })
}

// LatestPrepared lists the newest prepared transactions, of one party when party is not empty.
func (c *Console) LatestPrepared(ctx context.Context, party string, limit int) ([]store.PreparedTx, error) {
	var ps []store.PreparedTx
	q := c.s.ReadDB().NewSelect().Model(&ps).ExcludeColumn("body", "signer_key", "result")
	if party != "" {
		q = q.Where("act_as = ?", party)
	}
	err := q.OrderExpr("prepared_at DESC").Limit(int64(limit)).Scan(ctx)
	return ps, err
}
